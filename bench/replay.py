"""Replaying recorded events through a guard, beside firing the same events live.

10,000 recorded ``PreToolUse`` events (``load(record=...)``) go through a persistent-hook
guard (one process answering a JSON line per event), two ways, in interleaved rounds in
this process:

- live: ``registry.fire(event, payload)`` for each event, from a list in memory;
- replay: ``registry.replay(path)``, which checks every line of the file, then reads it
  again and fires each event and compares its decision with the recorded one.

Prints events per second (median and min-max over the rounds) and the ratio of replay's
rate to live firing's. Target: replay at least 0.75x the live rate (what it adds: reading
and decoding each line twice, the comparison). Both use the same registry and process.

Run: ``python bench/replay.py [--quick]``.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from orchestra.skills import CommandHook, HookRegistry

QUICK = "--quick" in sys.argv
EVENTS = 2_000 if QUICK else 10_000
ROUNDS = 3 if QUICK else 5
TARGET = 0.75

GUARD = """\
import json, sys
for line in sys.stdin:
    event = json.loads(line)
    command = event["tool_input"]["command"]
    answer = {"id": event["id"]}
    if "rm -rf" in command:
        answer.update(decision="deny", reason="no rm -rf")
    sys.stdout.write(json.dumps(answer) + "\\n")
    sys.stdout.flush()
"""


def payloads() -> list[dict[str, Any]]:
    commands = ["ls -la", "git status", "rm -rf build", "pytest -q", "cat README.md"]
    return [
        {"tool_name": "Bash", "tool_input": {"command": f"{commands[i % 5]} # {i}"}}
        for i in range(EVENTS)
    ]


async def live(registry: HookRegistry, events: list[dict[str, Any]]) -> float:
    started = time.perf_counter()
    for payload in events:
        await registry.fire("PreToolUse", payload)
    return time.perf_counter() - started


async def replayed(registry: HookRegistry, path: Path) -> float:
    started = time.perf_counter()
    report = await registry.replay(path)
    elapsed = time.perf_counter() - started
    assert report.events == EVENTS, report.summary()
    assert report.ok, report.summary()
    return elapsed


def spread(rates: list[float]) -> str:
    return f"{statistics.median(rates):9,.0f}/s  (min {min(rates):,.0f}, max {max(rates):,.0f})"


async def main() -> int:
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        (work / "guard.py").write_text(GUARD)
        guard = CommandHook(
            event="PreToolUse",
            matcher="Bash",
            command=f"{sys.executable} guard.py",
            persistent=True,
            phase="guard",
        )
        events = payloads()
        path = work / "events.jsonl"
        async with HookRegistry([guard], project_dir=work, record=path) as recording:
            for payload in events:
                await recording.fire("PreToolUse", payload)
        assert len(path.read_text().splitlines()) == EVENTS
        size = path.stat().st_size
        live_rates: list[float] = []
        replay_rates: list[float] = []
        async with HookRegistry([guard], project_dir=work) as registry:
            await live(registry, events[:100])  # the guard's process started
            for _ in range(ROUNDS):
                live_rates.append(EVENTS / await live(registry, events))
                replay_rates.append(EVENTS / await replayed(registry, path))
    ratio = statistics.median(replay_rates) / statistics.median(live_rates)
    print(f"{EVENTS:,} PreToolUse events through a persistent-hook guard, {ROUNDS} rounds")
    print(f"  live fire   {spread(live_rates)}")
    print(f"  replay      {spread(replay_rates)}  (file of {size / 1e6:.1f} MB read twice)")
    verdict = "ok" if ratio >= TARGET else "MISSED"
    print(f"  replay / live rate: {ratio:.2f}x  (target >= {TARGET}x): {verdict}")
    print(json.dumps({"live": live_rates, "replay": replay_rates}))
    return 0 if ratio >= TARGET else 1


if __name__ == "__main__":
    sys.exit(anyio.run(main))
