"""How the matching hooks of one event run: at once where they only judge, in order where
they rewrite, the outcome decided in config order whatever finishes first.

Each handler is a small shell script that logs when it starts and when it ends (the way
a Claude Code hook appends to a log file), so overlap is read from the logs, never timed.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from orchestra.skills import load

pytestmark = pytest.mark.anyio

BASH_INPUT = {"tool_name": "Bash", "tool_input": {"command": "npm test"}}


def logged(log: Path, name: str, then: str = "") -> str:
    """A handler that logs ``start NAME``, waits for its peers, logs ``end NAME``.

    It waits (up to 20 s: a loaded machine is slow to start 3 shells) until the log has 3
    starts, so handlers that run one after the other would each wait it out and log
    their end before the next start.
    """
    return (
        f"echo start {name} >> {log}; "
        f"for i in $(seq 200); do [ $(grep -c start {log}) -ge 3 ] && break; sleep 0.1; done; "
        f"echo end {name} >> {log}{'; ' + then if then else ''}"
    )


def claude_settings(folder: Path, commands: list[str], event: str = "PreToolUse") -> Path:
    path = folder / ".claude" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    hooks = [{"type": "command", "command": command} for command in commands]
    group: dict[str, object] = {"hooks": hooks}
    if event == "PreToolUse":
        group["matcher"] = "Bash"
    path.write_text(json.dumps({"hooks": {event: [group]}}))
    return path


def starts_before_ends(log: Path) -> bool:
    lines = log.read_text().split("\n")
    starts = [i for i, line in enumerate(lines) if line.startswith("start")]
    ends = [i for i, line in enumerate(lines) if line.startswith("end")]
    return len(starts) == 3 and len(ends) == 3 and max(starts) < min(ends)


async def test_claude_code_handlers_run_at_once_on_the_same_input(tmp_path: Path) -> None:
    log = tmp_path / "log"
    seen = tmp_path / "seen"
    read = f"jq -c .tool_input >> {seen}"
    commands = [logged(log, name, read) for name in ("a", "b", "c")]
    registry = load(claude_settings(tmp_path, commands), project_dir=tmp_path)
    outcome = await registry.fire("PreToolUse", BASH_INPUT)
    assert not outcome.errors
    assert starts_before_ends(log)
    inputs = [json.loads(line) for line in seen.read_text().splitlines()]
    assert inputs == [BASH_INPUT["tool_input"]] * 3


async def test_orchestra_guards_judge_at_once(tmp_path: Path) -> None:
    log = tmp_path / "log"
    lines = [
        f"        - {{type: command, phase: guard, command: {json.dumps(logged(log, n))}}}"
        for n in ("a", "b", "c")
    ]
    config = tmp_path / "orchestra.yaml"
    config.write_text("hooks:\n  PreToolUse:\n    - hooks:\n" + "\n".join(lines) + "\n")
    outcome = await load(config, project_dir=tmp_path).fire("PreToolUse", BASH_INPUT)
    assert not outcome.blocked
    assert not outcome.errors
    assert starts_before_ends(log)


async def test_hooks_of_an_event_that_cannot_modify_run_at_once(tmp_path: Path) -> None:
    log = tmp_path / "log"
    lines = [
        f"        - {{type: command, command: {json.dumps(logged(log, n))}}}"
        for n in ("a", "b", "c")
    ]
    config = tmp_path / "orchestra.yaml"
    config.write_text("hooks:\n  Stop:\n    - hooks:\n" + "\n".join(lines) + "\n")
    outcome = await load(config, project_dir=tmp_path).fire("Stop", {})
    assert not outcome.blocked
    assert not outcome.errors
    assert starts_before_ends(log)


async def test_rewriting_hooks_keep_their_order(tmp_path: Path) -> None:
    # Each hook without a phase on PreToolUse may rewrite: it sees what the one before
    # it wrote.
    def appender(word: str) -> str:
        return "jq -c '{modified_input: {command: (.tool_input.command + \" " + word + "\")}}'"

    lines = [
        f"        - {{type: command, command: {json.dumps(appender(w))}}}" for w in ("a", "b", "c")
    ]
    config = tmp_path / "orchestra.yaml"
    config.write_text("hooks:\n  PreToolUse:\n    - hooks:\n" + "\n".join(lines) + "\n")
    outcome = await load(config, project_dir=tmp_path).fire("PreToolUse", BASH_INPUT)
    assert outcome.modified_input == {"command": "npm test a b c"}


DENY = (
    "jq -n --arg r '{reason}' '{{hookSpecificOutput: {{hookEventName: \"PreToolUse\", "
    'permissionDecision: "deny", permissionDecisionReason: $r}}}}\''
)


async def test_the_first_deny_in_config_order_decides(tmp_path: Path) -> None:
    # The second handler answers first; the first one, slower, still decides.
    commands = ["sleep 0.5; " + DENY.format(reason="first"), DENY.format(reason="second")]
    registry = load(claude_settings(tmp_path, commands), project_dir=tmp_path)
    for _ in range(2):
        outcome = await registry.fire("PreToolUse", BASH_INPUT)
        assert outcome.blocked
        assert outcome.decision == "deny"
        assert outcome.reason == "first"
        assert outcome.decided_by is not None
        assert outcome.decided_by.endswith(":1")
        assert [r.hook.command for r in outcome.records] == [commands[0]]


async def test_a_deny_cancels_the_handlers_still_running(tmp_path: Path) -> None:
    pid_file, marker = tmp_path / "pid", tmp_path / "finished"
    slow = f"echo $$ > {pid_file}; sleep 30; touch {marker}"
    # The deny waits for the slow handler to have started, so there is one to cancel.
    deny = f"while [ ! -s {pid_file} ]; do sleep 0.05; done; " + DENY.format(reason="no")
    registry = load(claude_settings(tmp_path, [deny, slow]), project_dir=tmp_path)
    outcome = await registry.fire("PreToolUse", BASH_INPUT)
    assert outcome.blocked
    assert outcome.reason == "no"
    assert not marker.exists()
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):  # killed and reaped: no orphan
        os.kill(pid, 0)


async def test_a_later_block_cancels_nothing_before_it(tmp_path: Path) -> None:
    # Handler 2 blocks at once; handler 1 is still waited for, and its context kept.
    context = (
        'sleep 0.3; jq -n \'{hookSpecificOutput: {hookEventName: "UserPromptSubmit", '
        'additionalContext: "from one"}}\''
    )
    block = "echo 'prompt refused' >&2; exit 2"
    registry = load(
        claude_settings(tmp_path, [context, block], event="UserPromptSubmit"),
        project_dir=tmp_path,
    )
    outcome = await registry.fire("UserPromptSubmit", {"prompt": "hello"})
    assert outcome.blocked
    assert outcome.reason == "prompt refused"
    assert outcome.messages == ("from one",)
