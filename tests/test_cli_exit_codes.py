"""One exit-status rule for every command: 0 nothing to report, 1 the answer is no, 2 the
input or the hooks could not be used (docs/reference/cli.md#exit-status).

``orchestra hooks replay`` exited 1 both for "a decision would change" and for "the file
is not trusted", so a CI gate could not tell them apart: its statuses are checked as a
shell sees them (a process each). The other commands' are checked in-process (click's
``CliRunner``, the same ``main`` and exit statuses), which is the point here, not the
process: a dozen processes took 34 s on a loaded machine.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers.cli import orchestra_cli

from orchestra.cli import main

GUARD = """\
hooks:
  PreToolUse:
    - matcher: Bash
      hooks:
        - type: command
          command: "grep -q 'rm -rf' && { echo 'no rm -rf' >&2; exit 2; }; exit 0"
"""


def _event(command: str, decision: str | None) -> str:
    payload = {"tool_name": "Bash", "tool_input": {"command": command}}
    outcome = {"decision": decision, "blocked": decision == "deny"}
    return json.dumps({"v": 1, "event": "PreToolUse", "payload": payload, "outcome": outcome})


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "guard.yaml").write_text(GUARD)
    (tmp_path / "same.jsonl").write_text(_event("ls", None) + "\n")
    (tmp_path / "changes.jsonl").write_text(_event("rm -rf /", None) + "\n")
    (tmp_path / "corrupt.jsonl").write_text(_event("ls", None) + "\n{not json\n")
    return tmp_path


def _code(project: Path, *args: str) -> int:
    env = {"XDG_CONFIG_HOME": str(project / "config")}
    return orchestra_cli(*args, cwd=project, env=env).returncode


def test_replay_tells_a_change_from_unusable_input(project: Path) -> None:
    replay = ("hooks", "replay")
    assert _code(project, *replay, "same.jsonl", "guard.yaml") == 2  # not trusted
    assert _code(project, "hooks", "trust", "guard.yaml") == 0
    assert _code(project, *replay, "same.jsonl", "guard.yaml") == 0
    assert _code(project, *replay, "changes.jsonl", "guard.yaml") == 1
    assert _code(project, *replay, "corrupt.jsonl", "guard.yaml") == 2
    assert _code(project, *replay, "missing.jsonl", "guard.yaml") == 2  # a usage error
    (project / "guard.yaml").write_text(GUARD + "        - type: comand\n")
    assert _code(project, *replay, "same.jsonl", "guard.yaml", "--trust-all") == 2


def test_every_command_keeps_the_rule(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(project)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(project / "config"))

    def _code_in_process(*args: str) -> int:
        return CliRunner().invoke(main, list(args)).exit_code

    (project / "bad.yaml").write_text(GUARD.replace("type: command", "type: comand"))
    assert _code_in_process("hooks", "validate", "guard.yaml") == 0
    assert _code_in_process("hooks", "validate", "bad.yaml") == 1  # its answer: problems
    assert _code_in_process("hooks", "list", "bad.yaml") == 2  # cannot list what does not load
    assert _code_in_process("hooks", "trust", "bad.yaml") == 2
    payload = json.dumps({"tool_name": "Bash", "tool_input": {"command": "rm -rf /"}})
    test = ("hooks", "test", "PreToolUse", "--trust-all", "guard.yaml", "--payload")
    assert _code_in_process(*test, payload) == 1  # blocked: the answer is no
    assert _code_in_process(*test, payload.replace("rm -rf", "ls")) == 0
    assert _code_in_process(*test, "{not json") == 2
    (project / "ok.py").write_text(
        "import orchestra\ndag = orchestra.DAG('d')\ndag.add(orchestra.Task(id='a', fn=int))\n"
    )
    (project / "fails.py").write_text(
        "import orchestra\ndag = orchestra.DAG('d')\n"
        "dag.add(orchestra.Task(id='a', fn=lambda: 1 / 0))\n"
    )
    (project / "cycle.py").write_text(
        "import orchestra\ndag = orchestra.DAG('d')\n"
        "dag.add(orchestra.Task(id='a', fn=int, deps=['b']))\n"
        "dag.add(orchestra.Task(id='b', fn=int, deps=['a']))\n"
    )
    assert _code_in_process("run", "ok.py") == 0
    assert _code_in_process("run", "fails.py") == 1
    assert _code_in_process("run", "cycle.py") == 2
    assert _code_in_process("trace", "show", "guard.yaml") == 2  # not a trace file
