"""Background hooks (Claude Code's ``async`` and ``asyncRewake``) under load.

The audit of issue 49: back-to-back fires hung the agent (the registry's lock was held
while it waited for the background loop, whose finished hooks take that lock), one
session's hook output reached another session, and nothing capped their processes.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import anyio
import pytest

from orchestra.skills import load
from tests.helpers.procs import open_fds

pytestmark = pytest.mark.anyio


def _settings(root: Path, command: str, **fields: object) -> Path:
    claude = root / ".claude"
    claude.mkdir(parents=True, exist_ok=True)
    hook = {"type": "command", "command": command, "async": True, **fields}
    settings = {"hooks": {"PostToolUse": [{"matcher": "Edit", "hooks": [hook]}]}}
    (claude / "settings.json").write_text(json.dumps(settings))
    return root


EDIT = {"tool_name": "Edit", "tool_input": {}, "tool_response": "ok"}

FIRES = textwrap.dedent(
    """
    import sys, anyio
    from orchestra.skills import load

    async def main() -> None:
        async with load(sys.argv[1], project_dir=sys.argv[1]) as registry:
            edit = {"tool_name": "Edit", "tool_input": {}, "tool_response": "ok"}
            for _ in range(int(sys.argv[3])):
                await registry.fire("PostToolUse", edit)
                await anyio.sleep(float(sys.argv[4]))
            while len(registry._background):
                await anyio.sleep(0.01)
        print("done")

    anyio.run(main, backend=sys.argv[2])
    """
)


@pytest.mark.parametrize(("fires", "pause"), [(40, 0.0), (300, 0.002)])
def test_back_to_back_background_fires_never_hang(
    tmp_path: Path, anyio_backend: str, fires: int, pause: float
) -> None:
    # The audit's case: 5 fires back to back (and 544 fires 10 ms apart) hung the agent.
    # In a process of its own: a deadlocked thread cannot be timed out from inside.
    root = _settings(tmp_path, 'echo \'{"systemMessage": "linted"}\'')
    done = subprocess.run(
        [sys.executable, "-c", FIRES, str(root), anyio_backend, str(fires), str(pause)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (done.returncode, done.stdout) == (0, "done\n"), done.stderr


async def _settled(registry: object) -> None:
    with anyio.fail_after(20):
        while len(registry._background):  # type: ignore[attr-defined]  # noqa: ASYNC110
            await anyio.sleep(0.01)


async def test_background_output_reaches_only_the_session_that_fired_it(tmp_path: Path) -> None:
    root = _settings(tmp_path, 'echo \'{"systemMessage": "linted"}\'')
    async with load(root, project_dir=root) as registry:
        await registry.fire("PostToolUse", {**EDIT, "session_id": "A"})
        await _settled(registry)
        other = await registry.fire("PostToolUse", {**EDIT, "session_id": "B"})
        assert other.messages == ()  # session B never sees A's hook output
        await _settled(registry)
        mine = await registry.fire("PostToolUse", {**EDIT, "session_id": "A"})
        assert mine.messages == ("linted",)
        await _settled(registry)
        # B's own hook (started by its fire above) is B's, once
        assert (await registry.fire("PostToolUse", {**EDIT, "session_id": "B"})).messages == (
            "linted",
        )


async def test_background_processes_are_capped_and_leave_no_fd(tmp_path: Path) -> None:
    # The audit's case: 300 background fires ran 300 processes at once (fds 9 -> 912).
    log = tmp_path / "log"
    root = _settings(tmp_path, f"echo + >> {log}; sleep 0.05; echo - >> {log}")
    before = open_fds()
    async with load(root, project_dir=root, max_parallel_hooks=4) as registry:
        for _ in range(120):
            await registry.fire("PostToolUse", EDIT)
            assert len(open_fds()) < len(before) + 40  # no fd per waiting hook
        await _settled(registry)
    running = peak = 0
    for line in log.read_text().split():
        running += 1 if line == "+" else -1
        peak = max(peak, running)
    assert log.read_text().count("+") == 120
    assert 2 <= peak <= 4  # capped at max_parallel_hooks, yet in parallel
    with anyio.fail_after(30):  # returns as soon as they are closed; 30 s holds under load
        while open_fds() - before:  # noqa: ASYNC110 -- the loop's thread closes its own
            await anyio.sleep(0.01)
