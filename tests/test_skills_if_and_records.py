"""``if`` rules in linear time, and a record that cannot be written (issue 49, 5 and 6).

The audit: an ``if`` rule ran on Python's backtracking ``re`` (a 30-character command
took 25 s), and a full disk under ``record=`` made every fire raise, so a TaskCreated
deny was lost and the task ran.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import orchestra
from orchestra import TaskState
from orchestra.skills import load
from orchestra.skills._config.permission_rule import PermissionRule

pytestmark = pytest.mark.anyio

SLOW_RULE = textwrap.dedent(
    """
    from orchestra.skills._config.permission_rule import PermissionRule

    rule = PermissionRule("Bash(" + "*a" * 15 + "*b)")
    print(rule.admits({"tool_name": "Bash", "tool_input": {"command": "a" * 40}}),
          rule.admits({"tool_name": "Bash", "tool_input": {"command": "a" * 40 + "b"}}))
    """
)


def test_an_if_rule_matches_in_linear_time() -> None:
    # On a backtracking engine this rule takes C(40, 15) steps: years, not seconds. In a
    # process of its own, with a generous bound, so a regression fails instead of hanging.
    done = subprocess.run(
        [sys.executable, "-c", SLOW_RULE], capture_output=True, text=True, timeout=60, check=False
    )
    assert (done.returncode, done.stdout) == (0, "False True\n"), done.stderr


def _denying_project(tmp_path: Path) -> Path:
    config = tmp_path / "orchestra.yaml"
    config.write_text(
        textwrap.dedent(
            """
            hooks:
              TaskCreated:
                - hooks: [{type: command, command: 'echo "no deploys" >&2; exit 2'}]
            """
        )
    )
    return config


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (a full disk)")
async def test_a_full_disk_under_the_record_never_changes_a_decision(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # /dev/full: every write fails with ENOSPC, as on a full disk.
    registry = load(_denying_project(tmp_path), project_dir=tmp_path, record="/dev/full")
    dag = orchestra.DAG("d")
    ran: list[str] = []

    @dag.task
    def deploy() -> None:
        ran.append("deploy")

    with caplog.at_level(logging.WARNING, logger="orchestra.skills"):
        result = await orchestra.run(dag, hooks=[registry.as_task_hooks()])
        outcome = await registry.fire("Stop", {})
    assert ran == []  # the deny stands: the task never ran
    assert result.states == {"deploy": TaskState.FAILED}
    assert not outcome.blocked
    assert registry.record_failures == 2  # TaskCreated and Stop, counted
    assert "could not be recorded in /dev/full" in caplog.text
    assert "2 lost so far" in caplog.text


async def test_the_record_file_is_the_user_s_only(tmp_path: Path) -> None:
    record = tmp_path / "records" / "events.jsonl"
    registry = load(_denying_project(tmp_path), project_dir=tmp_path, record=record)
    await registry.fire("Stop", {})
    assert record.stat().st_mode & 0o777 == 0o600
    assert record.parent.stat().st_mode & 0o777 == 0o700
    assert registry.record_failures == 0


RM_FORMS = [
    "rm -rf /tmp/x",
    "(rm -rf /tmp/x)",
    "{ rm -rf /tmp/x; }",
    "if true; then rm -rf /tmp/x; fi",
    "for f in a; do rm -rf /tmp/x; done",
    "while true; do rm -rf /tmp/x; break; done",
    "case a in a) rm -rf /tmp/x;; esac",
    "f() { rm -rf /tmp/x; }; f",
    "env rm -rf /tmp/x",
    "env -i A=1 rm -rf /tmp/x",
    "$'\\x72m' -rf /tmp/x",
    "'r'm -rf /tmp/x",
    '"rm" -rf /tmp/x',
    "r\\m -rf /tmp/x",
    ">/dev/null rm -rf /tmp/x",
    "A=1 B=2 rm -rf /tmp/x",
    "nice -n 5 rm -rf /tmp/x",
    "sudo -u root rm -rf /tmp/x",
    "exec rm -rf /tmp/x",
    "/bin/rm -rf /tmp/x",
    "echo $(rm -rf /tmp/x)",
    "echo `rm -rf /tmp/x`",
    "cat <<EOF\n$(rm -rf /tmp/x)\nEOF",
    "true && ! rm -rf /tmp/x",
    "cat <(rm -rf /tmp/x)",
    "$CMD -rf /tmp/x",  # the program is known only when it runs: judged
    "echo 'unterminated",  # cannot be parsed: judged
]


@pytest.mark.parametrize("command", RM_FORMS)
def test_every_bash_form_that_runs_rm_is_judged_by_a_bash_rm_rule(command: str) -> None:
    # The audit's case: 20 forms that really run rm skipped `if: "Bash(rm *)"`.
    rule = PermissionRule("Bash(rm *)")
    assert rule.admits({"tool_name": "Bash", "tool_input": {"command": command}})


@pytest.mark.parametrize(
    "command",
    ["ls -la", "echo rm -rf /tmp/x", "grep 'rm' file", 'echo "$(date)"', "rmdir x", "( ls )"],
)
def test_commands_that_do_not_run_rm_are_not_judged(command: str) -> None:
    rule = PermissionRule("Bash(rm *)")
    assert not rule.admits({"tool_name": "Bash", "tool_input": {"command": command}})


async def test_a_deny_hook_filtered_by_if_denies_rm_in_a_subshell(tmp_path: Path) -> None:
    # For real: a Claude Code settings file, its deny script, a subshell form.
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    hook = {"type": "command", "command": "echo no >&2; exit 2", "if": "Bash(rm *)"}
    settings.write_text(json.dumps({"hooks": {"PreToolUse": [{"hooks": [hook]}]}}))
    registry = load(settings, project_dir=tmp_path)
    payload = {"tool_name": "Bash", "tool_input": {"command": "(cd /tmp && rm -rf x)"}}
    assert (await registry.fire("PreToolUse", payload)).blocked
