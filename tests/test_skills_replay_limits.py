"""Replay inputs refused in one line, and --sandbox never runs python hooks (issue 49, 12).

The audit: a line nested 1,000 deep exited 1 with a traceback, a 300 MB line took
1.27 GB, and ``hooks replay --sandbox`` still imported and ran python hooks in-process.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from orchestra.skills import CommandHook, HookRegistry
from orchestra.skills._firing.replay import MAX_REPLAY_DEPTH

pytestmark = pytest.mark.anyio

STOP = '{"v": 1, "event": "Stop", "payload": {}, "outcome": {"decision": null}}\n'


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "orchestra.cli", "hooks", "replay", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_line_nested_1000_deep_is_one_line_exit_2(tmp_path: Path) -> None:
    deep = "[" * 1000 + "]" * 1000
    events = tmp_path / "events.jsonl"
    events.write_text(STOP + f'{{"event": "Stop", "payload": {{"x": {deep}}}, "outcome": {{}}}}\n')
    config = tmp_path / "orchestra.yaml"
    config.write_text("hooks:\n  Stop:\n    - hooks: [{type: command, command: 'true'}]\n")
    done = _cli(str(events), str(config), "--trust-all", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.strip() == (
        f"error: {events}:2: nested deeper than {MAX_REPLAY_DEPTH} levels"
    )


async def test_a_payload_at_the_depth_limit_replays(tmp_path: Path) -> None:
    nested: object = {}
    for _ in range(MAX_REPLAY_DEPTH - 2):
        nested = {"a": nested}
    events = tmp_path / "events.jsonl"
    line = {"event": "Stop", "payload": {"x": nested}, "outcome": {"decision": None}}
    events.write_text(json.dumps(line) + "\n")
    report = await HookRegistry([CommandHook(event="Stop", command="true")]).replay(events)
    assert report.events == 1


HUGE = textwrap.dedent(
    """
    import json, resource, sys
    from orchestra import ConfigError
    from orchestra.skills import HookRegistry, CommandHook
    import anyio

    path = sys.argv[1]
    with open(path, "w") as f:
        f.write('{"event": "Stop", "payload": {"x": "')
        chunk = "x" * (1024 * 1024)
        for _ in range(300):
            f.write(chunk)
        f.write('"}, "outcome": {}}\\n')
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    registry = HookRegistry([CommandHook(event="Stop", command="true")])
    try:
        anyio.run(registry.replay, path)
    except ConfigError as exc:
        said = str(exc)
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"said": said, "grew_kb": after - before}))
    """
)


def test_a_300_mb_line_is_refused_without_reading_it_whole(tmp_path: Path) -> None:
    events = tmp_path / "events.jsonl"
    done = subprocess.run(
        [sys.executable, "-c", HUGE, str(events)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["said"] == f"{events}:1: a line over {64 * 1024 * 1024} bytes"
    assert result["grew_kb"] < 160 * 1024  # the audit: 1.27 GB for this line


def test_replay_sandbox_refuses_python_hooks_and_imports_nothing(tmp_path: Path) -> None:
    (tmp_path / "evil.py").write_text(
        "open('imported', 'w').close()\n"
        "def hook(event):\n    open('ran', 'w').close()\n    return None\n"
    )
    config = tmp_path / "orchestra.yaml"
    config.write_text("hooks:\n  Stop:\n    - hooks: [{type: python, callable: 'evil:hook'}]\n")
    events = tmp_path / "events.jsonl"
    events.write_text(STOP)
    done = _cli(str(events), str(config), "--trust-all", "--sandbox", cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "--sandbox cannot sandbox python hooks, which run in this process" in done.stderr
    assert not (tmp_path / "ran").exists()
    assert not (tmp_path / "imported").exists()
