"""Skills-hook benchmark: the command runner and ``fire`` against baselines in the same run.

On each anyio backend (asyncio, trio), prints figures and ratios of:

(a) per-event latency of a command hook (``true``) through ``run_command`` (the event
    JSON on stdin, stdout and stderr read, the group killed, the child reaped) against a
    bare ``anyio.run_process(["sh", "-c", "true"])``: target at most 1.2x (best and
    median of blocks of calls taken in turn);
(b) the same hook fired through ``HookRegistry.fire``: target at most 1.25x;
(c) 50 hooks run concurrently against 50 one at a time (``run_command`` and ``fire``),
    with ``true`` (bound by process creation, which the loop thread (asyncio) or one
    worker thread at a time does) and ``sleep 0.05`` (bound by waiting): the throughput
    ratio shows whether anything serializes them;
(d) ``fire`` of an event with no hooks: target at most 1 µs;
(e) the same ``true`` sandboxed (``sandbox: true``, bubblewrap) against bare: no target,
    the figure tells users what the sandbox costs.

``fire`` runs the whole path: the RE2 matcher, the minimal environment, the
``max_parallel_hooks`` slot, the event JSON, the outcome.

Run: ``python bench/hooks.py [--quick]``.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio

from orchestra.skills import HookRegistry, Sandbox, load
from orchestra.skills._command import run_command
from orchestra.skills._sandbox import bwrap_command

QUICK = "--quick" in sys.argv
ROUNDS = 15 if QUICK else 60  # blocks of each measured function, taken in turn
BLOCK = 10  # calls per block
REPEAT = 3 if QUICK else 5
CONCURRENT = 50
EMPTY_FIRES = 100_000 if QUICK else 1_000_000

EVENT = json.dumps(
    {
        "hook_event_name": "PreToolUse",
        "session_id": "bench",
        "cwd": os.getcwd(),
        "tool_name": "Bash",
        "tool_input": {"command": "ls -la"},
    }
).encode()
ENV = dict(os.environ)

CONFIG = """\
hooks:
  PreToolUse:
    - matcher: "Bash"
      hooks:
        - type: command
          command: "true"
          on_error: continue
    - matcher: "Slow"
      hooks:
        - type: command
          command: "sleep 0.05"
          on_error: continue
"""


async def bare() -> None:
    await anyio.run_process(["sh", "-c", "true"])


def running(command: str, wrap: list[str] | None = None) -> Callable[[], Awaitable[object]]:
    async def run() -> None:
        await run_command(
            command=command, args=None, stdin=EVENT, env=ENV, cwd=None, timeout=10, wrap=wrap or ()
        )

    return run


SANDBOX = (
    bwrap_command(Sandbox(), project_dir=os.getcwd(), skill_dir=None)
    if shutil.which("bwrap")
    else None
)


def firing(registry: HookRegistry, tool: str) -> Callable[[], Awaitable[object]]:
    payload = {"tool_name": tool, "tool_input": {"command": "ls -la"}}

    async def fire() -> None:
        outcome = await registry.fire("PreToolUse", payload)
        assert not outcome.errors, outcome.errors

    return fire


async def per_call(fn: Callable[[], Awaitable[object]], calls: int) -> float:
    """Seconds per call, one call at a time."""
    started = time.perf_counter()
    for _ in range(calls):
        await fn()
    return (time.perf_counter() - started) / calls


async def latencies(
    fns: dict[str, Callable[[], Awaitable[object]]],
) -> dict[str, tuple[float, float]]:
    """(best, median) seconds per call of each function, over blocks taken in turn.

    Small blocks taken in turn let drift in the machine's load hit all alike; the best
    block is the figure least disturbed by other processes on a shared machine.
    """
    samples: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(ROUNDS):
        for name, fn in fns.items():
            samples[name].append(await per_call(fn, BLOCK))
    return {name: (min(values), statistics.median(values)) for name, values in samples.items()}


async def concurrently(fn: Callable[[], Awaitable[object]], n: int = CONCURRENT) -> float:
    """Seconds for ``n`` calls at once."""
    started = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for _ in range(n):
            tg.start_soon(fn)
    return time.perf_counter() - started


async def empty_fire(registry: HookRegistry, n: int) -> float:
    """Seconds per ``fire`` of an event that has no hooks."""
    payload = {"tool_name": "Bash"}
    fire = registry.fire
    started = time.perf_counter()
    for _ in range(n):
        await fire("PostToolUse", payload)
    return (time.perf_counter() - started) / n


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:7.3f} ms"


async def main(registry: HookRegistry, empty: HookRegistry) -> None:
    runner, fire = running("true"), firing(registry, "Bash")
    measured = {"bare": bare, "runner": runner, "fire": fire}
    rows = [
        ("(a) bare anyio.run_process(sh -c true)", "bare"),
        ("    run_command(true)", "runner"),
        ("(b) registry.fire, one command hook", "fire"),
    ]
    if SANDBOX is not None:
        measured["sandboxed"] = running("true", SANDBOX)
        rows.append(("(e) run_command(true), sandboxed (bwrap)", "sandboxed"))
    for fn in measured.values():  # warm up: imports, first spawn, caches
        await per_call(fn, 10)

    latency = await latencies(measured)
    (base_best, base_median) = latency["bare"]
    for label, key in rows:
        best, median = latency[key]
        print(
            f"  {label:<40} best {ms(best)}  {best / base_best:.2f}x"
            f"   median {ms(median)}  {median / base_median:.2f}x"
        )

    cases = {
        "run_command(true)": runner,
        "fire -> true": fire,
        "run_command(sleep 0.05)": running("sleep 0.05"),
        "fire -> sleep 0.05": firing(registry, "Slow"),
    }
    for name, fn in cases.items():
        serial = CONCURRENT * statistics.median(
            [await per_call(fn, CONCURRENT) for _ in range(REPEAT)]
        )
        parallel = statistics.median([await concurrently(fn) for _ in range(REPEAT)])
        print(
            f"  (c) {CONCURRENT} x {name:<24} one at a time {serial * 1e3:7.1f} ms,"
            f" concurrently {parallel * 1e3:6.1f} ms: throughput {serial / parallel:5.2f}x"
        )

    no_hooks = statistics.median([await empty_fire(registry, EMPTY_FIRES) for _ in range(3)])
    none_at_all = statistics.median([await empty_fire(empty, EMPTY_FIRES) for _ in range(3)])
    print(f"  (d) fire, event without hooks            {no_hooks * 1e6:7.3f} µs per event")
    print(f"      fire, empty registry                 {none_at_all * 1e6:7.3f} µs per event")
    if SANDBOX is None:
        print("  (e) sandboxed: not measured, no bwrap on this machine")


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as folder:
        config = Path(folder) / "orchestra.yaml"
        config.write_text(CONFIG)
        registry = load(config, project_dir=folder)
        empty = HookRegistry()
        print(f"cpus: {os.cpu_count()}, python {sys.version.split()[0]}")
        print(f"latency: {ROUNDS} blocks of {BLOCK} calls per function, per call figures")
        for backend in ("asyncio", "trio"):
            print(f"{backend}:")
            anyio.run(main, registry, empty, backend=backend)
