"""``HookRegistry.fire``: matching, the chain, aggregation, errors, with real processes."""

from __future__ import annotations

import datetime
import json
import os
import sys
import textwrap
import time
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestra.skills import HookOutcome, HookRegistry, load
from orchestra.skills._hooks.spec import utc_timestamp

pytestmark = pytest.mark.anyio


def registry(tmp_path: Path, yaml: str, name: str = "orchestra.yaml") -> HookRegistry:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(yaml).lstrip("\n"))
    return load(path, project_dir=tmp_path, session_id="s-1")


def echo(result: dict[str, Any]) -> str:
    """A shell command printing ``result`` as JSON, for a YAML single-quoted string."""
    return "printf %s " + json.dumps(json.dumps(result)).replace("'", "''")


async def test_event_without_hooks_returns_the_shared_empty_outcome() -> None:
    empty = HookRegistry()
    first = await empty.fire("PreToolUse", {"tool_name": "Bash"})
    assert first == HookOutcome()
    assert first is await empty.fire("SessionEnd")
    assert not empty.has_hooks("PreToolUse")


async def test_unknown_event_is_a_value_error_with_a_suggestion() -> None:
    with pytest.raises(ValueError, match=r"unknown event 'PreToolUs' \(did you mean 'PreToolUse'"):
        await HookRegistry().fire("PreToolUs", {})


async def test_stdin_carries_payload_and_common_fields_and_env_is_exported(
    tmp_path: Path,
) -> None:
    reg = registry(
        tmp_path,
        """
        hooks:
          PreToolUse:
            - matcher: Bash
              hooks:
                - type: command
                  command: 'cat > stdin.json; env > env.txt'
        """,
    )
    outcome = await reg.fire("PreToolUse", {"tool_name": "Bash", "tool_input": {"command": "ls"}})
    assert outcome == HookOutcome(records=outcome.records)
    assert outcome.records[0].exit_code == 0
    sent = json.loads((tmp_path / "stdin.json").read_text())
    assert sent["hook_event_name"] == "PreToolUse"
    assert sent["session_id"] == "s-1"
    assert sent["cwd"] == str(tmp_path)
    assert sent["tool_name"] == "Bash"
    assert sent["tool_input"] == {"command": "ls"}
    assert sent["timestamp"].endswith("+00:00")
    env = dict(
        line.split("=", 1)
        for line in (tmp_path / "env.txt").read_text().splitlines()
        if "=" in line
    )
    assert env["ORCHESTRA_EVENT"] == "PreToolUse"
    assert env["ORCHESTRA_PROJECT_DIR"] == str(tmp_path)
    assert "ORCHESTRA_EVENT" not in os.environ


@settings(max_examples=200, deadline=None)
@given(
    nanoseconds=st.integers(min_value=0, max_value=4_102_444_800 * 10**9)
    | st.integers(min_value=1_700_000_000, max_value=1_700_000_002).map(lambda s: s * 10**9),
    later=st.integers(min_value=0, max_value=3 * 10**9),
)
def test_the_timestamp_is_written_as_datetime_writes_it(nanoseconds: int, later: int) -> None:
    # utc_timestamp formats the date and time of day once per second: any two instants in
    # turn (the same second, the next one, a whole second) read as datetime writes them.
    epoch = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
    for ns in (nanoseconds, nanoseconds + later):
        with mock.patch.object(time, "time_ns", return_value=ns):
            written = utc_timestamp()
        assert written == (epoch + datetime.timedelta(microseconds=ns // 1000)).isoformat()
    before = datetime.datetime.now(datetime.UTC).isoformat()
    assert before <= utc_timestamp() <= datetime.datetime.now(datetime.UTC).isoformat()


async def test_payload_is_data_only_never_shell(tmp_path: Path) -> None:
    reg = registry(
        tmp_path,
        """
        hooks:
          UserPromptSubmit:
            - hooks: [{type: command, command: 'cat > stdin.json'}]
        """,
    )
    marker = tmp_path / "pwned"
    nasty = f"$(touch {marker}) `touch {marker}`; touch {marker}\n\0 \udcff"
    await reg.fire("UserPromptSubmit", {"prompt": nasty, "raw": b"\xff\xfe"})
    assert not marker.exists()
    sent = json.loads((tmp_path / "stdin.json").read_text())
    assert sent["prompt"] == nasty
    assert sent["raw"] == "\ufffd\ufffd"


async def test_matcher_is_a_full_match(tmp_path: Path) -> None:
    reg = registry(
        tmp_path,
        """
        hooks:
          PreToolUse:
            - matcher: Bash
              hooks: [{type: permission, decision: deny, reason: no bash}]
            - matcher: Edit|Write
              hooks: [{type: permission, decision: ask}]
        """,
    )
    assert not (await reg.fire("PreToolUse", {"tool_name": "BashOutput"})).blocked
    assert (await reg.fire("PreToolUse", {"tool_name": "Bash"})).reason == "no bash"
    assert (await reg.fire("PreToolUse", {"tool_name": "Write"})).decision == "ask"
    assert (await reg.fire("PreToolUse", {})).decision is None
    assert [h.matcher for h in reg.hooks_for("PreToolUse", {"tool_name": "Edit"})] == ["Edit|Write"]


async def test_each_hook_sees_the_input_modified_before_it(tmp_path: Path) -> None:
    reg = registry(
        tmp_path,
        f"""
        hooks:
          PreToolUse:
            - hooks:
                - type: command
                  command: '{echo({"modified_input": {"command": "ls -la"}, "message": "one"})}'
                - type: command
                  command: 'cat > second.json'
                - type: command
                  command: '{echo({"hookSpecificOutput": {"updatedInput": {"command": "ls"}}})}'
        """,
    )
    outcome = await reg.fire("PreToolUse", {"tool_name": "Bash", "tool_input": {"command": "rm"}})
    assert json.loads((tmp_path / "second.json").read_text())["tool_input"] == {"command": "ls -la"}
    assert outcome.modified_input == {"command": "ls"}
    assert outcome.messages == ("one",)
    assert not outcome.blocked


async def test_first_deny_ends_the_chain_and_names_its_source(tmp_path: Path) -> None:
    reg = registry(
        tmp_path,
        f"""
        hooks:
          PreToolUse:
            - hooks:
                - {{type: permission, decision: allow}}
                - type: command
                  command: '{echo({"decision": "deny", "reason": "not today"})}'
                - type: command
                  command: 'touch ran'
        """,
    )
    outcome = await reg.fire("PreToolUse", {"tool_name": "Bash"})
    assert (outcome.decision, outcome.blocked, outcome.reason) == ("deny", True, "not today")
    assert outcome.decided_by == f"{tmp_path / 'orchestra.yaml'}:5"
    assert len(outcome.records) == 2
    assert not (tmp_path / "ran").exists()


async def test_exit_2_blocks_with_stderr_as_reason(tmp_path: Path) -> None:
    reg = registry(
        tmp_path,
        """
        hooks:
          UserPromptSubmit:
            - hooks: [{type: command, command: 'echo "secrets in prompt" >&2; exit 2'}]
        """,
    )
    outcome = await reg.fire("UserPromptSubmit", {"prompt": "my password is"})
    assert (outcome.decision, outcome.blocked, outcome.reason) == (
        "deny",
        True,
        "secrets in prompt",
    )
    assert outcome.records[0].exit_code == 2


async def test_deny_beats_ask_beats_allow(tmp_path: Path) -> None:
    reg = registry(
        tmp_path,
        """
        hooks:
          PermissionRequest:
            - hooks:
                - {type: permission, decision: allow, reason: fine}
                - {type: permission, decision: ask, reason: check}
                - {type: permission, decision: allow}
        """,
    )
    outcome = await reg.fire("PermissionRequest", {"tool_name": "Bash"})
    assert (outcome.decision, outcome.reason, outcome.blocked) == ("ask", "check", False)
    assert outcome.decided_by is not None
    assert outcome.decided_by.endswith(":5")


async def test_claude_code_shape_is_read(tmp_path: Path) -> None:
    result = {
        "continue": False,
        "stopReason": "enough",
        "systemMessage": "note",
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": "rm is not allowed",
            "additionalContext": "use trash instead",
        },
    }
    reg = registry(
        tmp_path,
        f"""
        hooks:
          PreToolUse:
            - hooks: [{{type: command, command: '{echo(result)}'}}]
        """,
    )
    outcome = await reg.fire("PreToolUse", {"tool_name": "Bash"})
    assert (outcome.decision, outcome.blocked, outcome.reason) == (
        "deny",
        True,
        "rm is not allowed",
    )
    assert (outcome.stop, outcome.stop_reason) == (True, "enough")
    assert outcome.messages == ("use trash instead",)  # for the agent
    assert outcome.system_message == "note"  # for the user (Claude Code's systemMessage)


@pytest.mark.parametrize(
    ("command", "error"),
    [
        ("exit 1", "exited 1"),
        ("echo not json", "invalid JSON output"),
        ("echo [1]", "invalid JSON output"),
        ("kill -9 $$", "killed by SIGKILL"),
        ("/nonexistent/hook.sh", "exited 127"),
    ],
)
async def test_hook_error_on_a_guard_event_blocks_by_default(
    tmp_path: Path, command: str, error: str
) -> None:
    reg = registry(
        tmp_path,
        f"""
        hooks:
          PreToolUse:
            - hooks: [{{type: command, command: '{command}'}}]
        """,
    )
    outcome = await reg.fire("PreToolUse", {"tool_name": "Bash"})
    assert outcome.blocked
    assert outcome.decision == "deny"
    assert outcome.reason is not None
    assert outcome.reason.startswith("hook error: ")
    assert error in outcome.reason
    (record,) = outcome.errors
    assert record.note == "error blocks (on_error: block)"


async def test_hook_error_under_on_error_continue_counts_as_no_opinion(tmp_path: Path) -> None:
    reg = registry(
        tmp_path,
        """
        hooks:
          PreToolUse:
            - hooks:
                - {type: command, command: 'echo oops >&2; exit 1', on_error: continue}
                - {type: prompt, prompt: still here}
        """,
    )
    outcome = await reg.fire("PreToolUse", {"tool_name": "Bash"})
    assert (outcome.blocked, outcome.decision, outcome.messages) == (False, None, ("still here",))
    (record,) = outcome.errors
    assert (record.error, record.exit_code, record.stderr) == ("exited 1", 1, "oops\n")
    assert record.note == "error ignored (on_error: continue)"


async def test_timeout_is_a_hook_error(tmp_path: Path) -> None:
    reg = registry(
        tmp_path,
        """
        hooks:
          PermissionRequest:
            - hooks: [{type: command, command: 'sleep 30', timeout: 0.3}]
        """,
    )
    outcome = await reg.fire("PermissionRequest", {"tool_name": "Bash"})
    assert outcome.blocked
    assert outcome.reason == "hook error: timed out after 0.3 s"


async def test_hooks_of_non_blocking_events_run_concurrently_combined_in_order(
    tmp_path: Path,
) -> None:
    # Each hook waits for the other one's file: run one after the other, both time out.
    def wait(me: str, other: str) -> str:
        loop = f"touch {me}; while [ ! -e {other} ]; do sleep 0.01; done; "
        return loop + echo({"message": me})

    reg = registry(
        tmp_path,
        f"""
        hooks:
          PostToolUse:
            - hooks:
                - {{type: command, command: '{wait("a", "b")}', timeout: 10}}
                - {{type: prompt, prompt: middle}}
                - {{type: command, command: '{wait("b", "a")}', timeout: 10}}
        """,
    )
    outcome = await reg.fire("PostToolUse", {"tool_name": "Bash", "tool_response": "ok"})
    assert outcome.errors == ()
    assert outcome.messages == ("a", "middle", "b")


async def test_deny_on_an_event_that_cannot_block_is_noted_and_its_reason_kept(
    tmp_path: Path,
) -> None:
    reg = registry(
        tmp_path,
        f"""
        hooks:
          PostToolUse:
            - hooks:
                - type: command
                  command: '{echo({"decision": "block", "reason": "lint failed"})}'
        """,
    )
    outcome = await reg.fire("PostToolUse", {"tool_name": "Edit"})
    assert (outcome.blocked, outcome.decision) == (False, None)
    assert outcome.messages == ("lint failed",)
    assert outcome.records[0].note == "block ignored: PostToolUse cannot block"


async def test_prompt_hook_adds_its_text(tmp_path: Path) -> None:
    reg = registry(
        tmp_path,
        """
        hooks:
          SessionStart:
            - matcher: startup
              hooks: [{type: prompt, prompt: "Read CONTRIBUTING.md first."}]
        """,
    )
    assert (await reg.fire("SessionStart", {"source": "startup"})).messages == (
        "Read CONTRIBUTING.md first.",
    )
    assert (await reg.fire("SessionStart", {"source": "resume"})).messages == ()


async def test_args_run_without_a_shell_and_skill_dir_is_exported(tmp_path: Path) -> None:
    skill = tmp_path / "skills" / "py"
    skill.mkdir(parents=True)
    (skill / "hook.py").write_text(
        "import json, os, sys\n"
        "event = json.load(sys.stdin)\n"
        "print(json.dumps({'message': os.environ['SKILL_DIR'] + ' ' + event['tool_name']}))\n"
    )
    (skill / "SKILL.md").write_text(
        "---\nhooks:\n  PostToolUse:\n    - hooks:\n        - type: command\n"
        f"          args: [{sys.executable!r}, '${{SKILL_DIR}}/hook.py']\n---\n"
    )
    reg = load(tmp_path / "skills", project_dir=tmp_path)
    outcome = await reg.fire("PostToolUse", {"tool_name": "Read; rm -rf /"})
    assert outcome.errors == ()
    assert outcome.messages == (f"{skill.resolve()} Read; rm -rf /",)


async def test_stop_request_is_reported(tmp_path: Path) -> None:
    reg = registry(
        tmp_path,
        f"""
        hooks:
          Stop:
            - hooks: [{{type: command, command: '{echo({"continue": False, "stopReason": "x"})}'}}]
        """,
    )
    outcome = await reg.fire("Stop", {})
    assert (outcome.stop, outcome.stop_reason, outcome.blocked) == (True, "x", False)


async def test_a_payload_that_is_not_json_is_a_hook_error_not_a_crash(tmp_path: Path) -> None:
    reg = registry(
        tmp_path,
        """
        hooks:
          PreToolUse:
            - hooks: [{type: command, command: 'true'}]
          PostToolUse:
            - hooks: [{type: command, command: 'true'}, {type: command, command: ':'}]
        """,
    )
    loop: dict[str, Any] = {"tool_name": "Bash"}
    loop["self"] = loop
    guarded = await reg.fire("PreToolUse", loop)
    assert guarded.blocked
    assert guarded.reason is not None
    assert "Circular reference" in guarded.reason
    after = await reg.fire("PostToolUse", loop)
    assert len(after.errors) == 2
    assert not after.blocked
