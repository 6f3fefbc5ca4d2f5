"""``orchestra.skills.serve`` for hook authors, and the ``orchestra hooks`` commands with
persistent and python hooks."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from orchestra.skills import HookRegistry, serve

pytestmark = pytest.mark.anyio


def served(handler: Any, *lines: object) -> tuple[list[dict[str, Any]], str]:
    """What ``serve(handler)`` answers to these event lines, and what went to stderr."""
    stdin = io.StringIO("".join(json.dumps(line) + "\n" for line in lines))
    stdout = io.StringIO()
    stderr = io.StringIO()
    saved = sys.stderr
    sys.stderr = stderr
    try:
        serve(handler, stdin=stdin, stdout=stdout)
    finally:
        sys.stderr = saved
    return [json.loads(line) for line in stdout.getvalue().splitlines()], stderr.getvalue()


def test_serve_answers_each_event_with_its_id() -> None:
    seen: list[dict[str, Any]] = []

    def handler(event: dict[str, Any]) -> dict[str, Any] | None:
        seen.append(event)
        print("a stray print")  # goes to stderr: stdout is the protocol
        if event["tool_name"] == "Bash":
            return {"decision": "deny", "reason": "no shell"}
        return None

    answers, stderr = served(
        handler, {"id": 1, "tool_name": "Bash"}, {"id": 2, "tool_name": "Read"}, {"tool_name": "X"}
    )
    assert answers == [{"decision": "deny", "reason": "no shell", "id": 1}, {"id": 2}, {}]
    assert seen == [{"tool_name": "Bash"}, {"tool_name": "Read"}, {"tool_name": "X"}]
    assert stderr == "a stray print\n" * 3


def test_serve_answers_an_error_when_the_handler_raises() -> None:
    def handler(event: dict[str, Any]) -> dict[str, Any]:
        if event["n"] == 1:
            raise KeyError("tool_input")
        if event["n"] == 2:
            return {"message": object()}  # cannot be sent as JSON
        return {"message": "fine"}

    answers, stderr = served(handler, {"id": 7, "n": 1}, {"id": 8, "n": 2}, {"id": 9, "n": 3})
    assert answers == [
        {"error": "KeyError: 'tool_input'", "id": 7},
        {"error": "TypeError: Object of type object is not JSON serializable", "id": 8},
        {"message": "fine", "id": 9},
    ]
    assert stderr.count("Traceback") == 2


def test_serve_refuses_an_async_handler() -> None:
    async def handler(event: dict[str, Any]) -> None:
        return None

    with pytest.raises(TypeError, match="serve\\(\\) takes a def function"):
        serve(handler)  # type: ignore[arg-type]


EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "hooks" / "push_policy.py"


async def test_the_serve_example_is_a_persistent_hook(tmp_path: Path) -> None:
    (tmp_path / "orchestra.yaml").write_text(
        "hooks:\n  PreToolUse:\n    - matcher: Bash\n      hooks:\n"
        f"        - type: command\n          args: [{sys.executable!r}, {str(EXAMPLE)!r}]\n"
        "          persistent: true\n          timeout: 60\n"
    )
    from orchestra.skills import load

    registry: HookRegistry = load(tmp_path / "orchestra.yaml", project_dir=tmp_path)
    async with registry:
        for command, blocked in (
            ("git push --force origin main", True),
            ("git push origin main", False),
            ("git push -f", True),
        ):
            outcome = await registry.fire(
                "PreToolUse", {"tool_name": "Bash", "tool_input": {"command": command}}
            )
            assert outcome.blocked is blocked, outcome.records
    assert outcome.reason == "force pushes are not allowed here"


# --- the orchestra command --------------------------------------------------------------


def orchestra(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    # The installed command (not python -m, which puts the current folder on sys.path).
    return subprocess.run(
        [str(Path(sys.executable).parent / "orchestra"), *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


WORKER = """\
import json, sys
for line in sys.stdin:
    print(json.dumps({"id": json.loads(line)["id"], "decision": "allow"}), flush=True)
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "worker.py").write_text(WORKER)
    (tmp_path / "policy.py").write_text("def check(event):\n    return {'message': 'checked'}\n")
    (tmp_path / "orchestra.yaml").write_text(
        "hooks:\n  PreToolUse:\n    - hooks:\n"
        f"        - {{type: command, args: [{sys.executable!r}, worker.py], persistent: true}}\n"
        "        - {type: python, callable: 'policy:check'}\n"
    )
    return tmp_path


def test_hooks_test_shows_each_hooks_latency_cold_and_warm(project: Path) -> None:
    args = ("hooks", "test", "PreToolUse", "--payload", '{"tool_name": "Bash"}', "--json")
    proc = orchestra(*args, "--repeat", "5", "--trust-all", "orchestra.yaml", cwd=project)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    persistent, python = report["hooks"]
    assert persistent["what"].endswith('worker.py"] (persistent, 1 in flight)')
    assert (persistent["runs"], python["runs"]) == (5, 5)
    assert python["result"]["messages"] == ["checked"]
    for hook in (persistent, python):
        assert hook["duration_ms"] > 0  # the first run: for the process, its start
        assert hook["warm_ms"] > 0  # the median of the other 4
    assert report["outcome"]["decision"] == "allow"
    table = orchestra(
        "hooks", "test", "PreToolUse", "--repeat", "3", "--trust-all", "orchestra.yaml", cwd=project
    )
    assert table.returncode == 0, table.stderr
    assert "latency" in table.stdout
    assert "(median of 2)" in table.stdout


def test_validate_checks_the_callable(project: Path) -> None:
    (project / "bad.yaml").write_text(
        "hooks:\n  Stop:\n    - hooks:\n        - {type: python, callable: 'policy:chek'}\n"
    )
    proc = orchestra("hooks", "validate", "orchestra.yaml", "bad.yaml", cwd=project)
    assert proc.returncode == 1
    assert proc.stdout == (
        "bad.yaml:4: hooks.Stop[0].hooks[0].callable: "
        "policy has no attribute 'chek' (did you mean 'check'?)\n"
    )


# --- nothing outlives the program ------------------------------------------------------

LINGERING = """\
import json, os, sys, time
from pathlib import Path
Path(sys.argv[1]).write_text(str(os.getpid()))
for line in sys.stdin:
    print(json.dumps({"id": json.loads(line)["id"]}), flush=True)
Path(sys.argv[1] + ".eof").write_text("stdin ended")
if len(sys.argv) > 2:
    time.sleep(60)  # deaf to the end of its input
"""


def gone(pid: int) -> bool:
    """Whether ``pid`` is gone (or a zombie), waiting up to 30 s (it returns at once when it is)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
        except OSError:
            return True
        if state in "ZX":
            return True
        time.sleep(0.01)
    return False


def test_orchestra_run_closes_its_registry(tmp_path: Path) -> None:
    (tmp_path / "worker.py").write_text(LINGERING)
    (tmp_path / "flow.py").write_text(
        "from orchestra import DAG, Task\n\nasync def one() -> None:\n    return None\n\n"
        "dag = DAG('flow')\ndag.add(Task(id='one', fn=one))\n"
    )
    (tmp_path / "orchestra.yaml").write_text(
        "hooks:\n  TaskCreated:\n    - hooks:\n        - type: command\n"
        f"          args: [{sys.executable!r}, worker.py, pid]\n          persistent: true\n"
    )
    proc = orchestra("run", "flow.py", "--hooks", "orchestra.yaml", "--trust-all", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # Closed the polite way: the end of its input first, which it saw.
    assert (tmp_path / "pid.eof").read_text() == "stdin ended"
    assert gone(int((tmp_path / "pid").read_text()))


def test_a_program_that_forgets_to_close_leaves_nothing(tmp_path: Path) -> None:
    (tmp_path / "worker.py").write_text(LINGERING)
    (tmp_path / "program.py").write_text(
        textwrap.dedent(
            f"""
            import sys
            import anyio
            from orchestra.skills import CommandHook, HookRegistry

            worker = CommandHook(
                event="Stop",
                args=({sys.executable!r}, "worker.py", "pid", "linger"),
                persistent=True,
            )
            registry = HookRegistry([worker])  # never closed, still referenced at exit
            anyio.run(registry.fire, "Stop", {{}})
            """
        )
    )
    proc = subprocess.run(
        [sys.executable, "program.py"], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert gone(int((tmp_path / "pid").read_text()))  # killed as the interpreter exited
