"""Claude Code sources, against the hooks reference's own words, event by event.

Each hook is a command in `.claude/settings.json` that prints the JSON the reference
shows; the comments quote the reference (thevibeworks/claude-code-docs,
content/en/docs/claude-code/hooks.md).
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest

from orchestra.skills import HookOutcome, load

pytestmark = pytest.mark.anyio


def settings(tmp_path: Path, event: str, output: dict[str, Any] | None, exit_code: int = 0) -> Path:
    """A settings file whose one hook on ``event`` prints ``output`` and exits."""
    parts = [f"echo {shlex.quote(json.dumps(output))}"] if output is not None else []
    if exit_code == 2:
        parts.append("echo 'refused by the hook' >&2")
    parts.append(f"exit {exit_code}")
    hook = {"type": "command", "command": "; ".join(parts)}
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps({"hooks": {event: [{"hooks": [hook]}]}}))
    return path


async def fire(
    tmp_path: Path,
    event: str,
    output: dict[str, Any] | None,
    payload: dict[str, Any] | None = None,
    exit_code: int = 0,
) -> HookOutcome:
    registry = load(settings(tmp_path, event, output, exit_code), project_dir=tmp_path)
    outcome = await registry.fire(event, payload or {})
    assert outcome.errors == (), outcome.errors
    return outcome


UNIVERSAL = {"systemMessage": "shown?", "continue": False, "stopReason": "stop?"}


# "Claude Code discards their systemMessage and continue fields" (Notification,
# InstructionsLoaded, PreCompact, PostCompact, WorktreeRemove, Elicitation,
# ElicitationResult)
@pytest.mark.parametrize(
    ("event", "payload"),
    [
        ("Notification", {"notification_type": "idle_prompt"}),
        ("InstructionsLoaded", {"load_reason": "session_start"}),
        ("PreCompact", {"trigger": "manual"}),
        ("PostCompact", {"trigger": "auto"}),
        ("WorktreeRemove", {"worktree_path": "/tmp/wt"}),
        ("Elicitation", {"mcp_server_name": "my-mcp-server"}),
        ("ElicitationResult", {"mcp_server_name": "my-mcp-server", "action": "accept"}),
    ],
)
async def test_events_that_discard_system_message_and_continue(
    tmp_path: Path, event: str, payload: dict[str, Any]
) -> None:
    outcome = await fire(tmp_path, event, UNIVERSAL, payload)
    assert outcome.system_message is None
    assert not outcome.stop


async def test_an_event_that_keeps_them_still_does(tmp_path: Path) -> None:
    outcome = await fire(tmp_path, "Stop", UNIVERSAL)
    assert outcome.system_message == "shown?"
    assert outcome.stop


# "policy_settings changes can't be blocked. [...] any blocking decision is ignored."
@pytest.mark.parametrize("how", ["json", "exit 2"])
async def test_config_change_from_policy_settings_cannot_be_blocked(
    tmp_path: Path, how: str
) -> None:
    output = {"decision": "block", "reason": "no"} if how == "json" else None
    code = 2 if how == "exit 2" else 0
    outcome = await fire(tmp_path, "ConfigChange", output, {"source": "policy_settings"}, code)
    assert not outcome.blocked
    [record] = outcome.records
    assert record.note is not None
    assert "policy_settings cannot be blocked" in record.note
    other = await fire(tmp_path, "ConfigChange", output, {"source": "project_settings"}, code)
    assert other.blocked


# Elicitation output: {"hookSpecificOutput": {"hookEventName": "Elicitation",
# "action": "accept", "content": {"username": "alice"}}}
async def test_elicitation_hooks_answer_with_action_and_content(tmp_path: Path) -> None:
    output = {
        "hookSpecificOutput": {
            "hookEventName": "Elicitation",
            "action": "accept",
            "content": {"username": "alice"},
        }
    }
    outcome = await fire(tmp_path, "Elicitation", output, {"mcp_server_name": "my-mcp-server"})
    assert outcome.output == {"action": "accept", "content": {"username": "alice"}}
    assert not outcome.blocked
    result_output = {
        "hookSpecificOutput": {"hookEventName": "ElicitationResult", "action": "decline"}
    }
    payload = {"mcp_server_name": "my-mcp-server", "action": "accept", "content": {}}
    outcome = await fire(tmp_path, "ElicitationResult", result_output, payload)
    assert outcome.output == {"action": "decline", "content": None}


# "slash_command: Claude Code delivers the hook's systemMessage to Claude as context on
# the next conversation turn, rather than showing it to you"; "register_repo_root:
# Claude Code writes systemMessage output [...] to the debug log only"
@pytest.mark.parametrize(
    ("source", "messages"),
    [("slash_command", ("indexed the new folder",)), ("register_repo_root", ())],
)
async def test_directory_added_system_message_goes_where_the_source_says(
    tmp_path: Path, source: str, messages: tuple[str, ...]
) -> None:
    outcome = await fire(
        tmp_path, "DirectoryAdded", {"systemMessage": "indexed the new folder"}, {"source": source}
    )
    assert outcome.messages == messages
    assert outcome.system_message is None


# additionalContext: "Ignored when permissionDecision is "defer"."
async def test_pre_tool_use_defer_delivers_no_additional_context(tmp_path: Path) -> None:
    output = {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "defer",
            "permissionDecisionReason": "ask the caller",
            "updatedInput": {"command": "ls -la"},
            "additionalContext": "the caller decides",
        }
    }
    outcome = await fire(
        tmp_path, "PreToolUse", output, {"tool_name": "Bash", "tool_input": {"command": "ls"}}
    )
    assert outcome.decision is None
    assert outcome.messages == ()
    assert outcome.modified_input is None


# interrupt: "For "deny" only: if true, stops Claude"
@pytest.mark.parametrize(("behavior", "stops"), [("deny", True), ("allow", False)])
async def test_permission_request_interrupt_stops_on_deny(
    tmp_path: Path, behavior: str, stops: bool
) -> None:
    decision = {"behavior": behavior, "interrupt": True}
    if behavior == "deny":
        decision["message"] = "not on this branch"
    output = {"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": decision}}
    outcome = await fire(tmp_path, "PermissionRequest", output, {"tool_name": "Bash"})
    assert outcome.stop is stops
    assert outcome.blocked is stops


# "drops any field whose value has the wrong type, such as a systemMessage that isn't a
# string, instead of delivering it. Run with --debug to see a warning naming each
# dropped field."
async def test_a_field_of_the_wrong_type_is_dropped_with_a_note(tmp_path: Path) -> None:
    output = {
        "hookSpecificOutput": {
            "hookEventName": "SessionStart",
            "additionalContext": "remember the style guide",
            "sessionTitle": 5,
            "watchPaths": ["/repo/a", 7],
        }
    }
    outcome = await fire(tmp_path, "SessionStart", output, {"source": "startup"})
    assert outcome.messages == ("remember the style guide",)  # the rest is delivered
    [record] = outcome.records
    assert record.note is not None
    assert "hookSpecificOutput.sessionTitle dropped: expected a string, got a number" in (
        record.note
    )
    assert "hookSpecificOutput.watchPaths dropped: expected an array of strings" in record.note


# Decision control: "UserPromptSubmit, UserPromptExpansion, PostToolUse,
# PostToolUseFailure, PostToolBatch, Stop, SubagentStop, ConfigChange, PreCompact |
# Top-level `decision` | `decision: "block"`, `reason`"; on PostToolUse `decision: "block"`
# "adds the `reason` next to the tool result" (the tool already ran: nothing to stop)
@pytest.mark.parametrize(
    ("event", "payload"),
    [
        ("PostToolUse", {"tool_response": {"stdout": "", "stderr": ""}}),
        ("PostToolUseFailure", {"error": "Exit code 1\nError: Cannot find module 'express'"}),
    ],
)
async def test_a_top_level_block_after_a_tool_is_its_reason_for_claude(
    tmp_path: Path, event: str, payload: dict[str, Any]
) -> None:
    output = {"decision": "block", "reason": "Run npm install before the tests"}
    call = {"tool_name": "Bash", "tool_input": {"command": "npm test"}, "tool_use_id": "t1"}
    outcome = await fire(tmp_path, event, output, {**call, **payload})
    assert not outcome.blocked  # the tool already ran (or failed)
    assert outcome.messages == ("Run npm install before the tests",)


def two_hooks(tmp_path: Path, first: str, second: str) -> Path:
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir(exist_ok=True)
    hooks = [{"type": "command", "command": first}, {"type": "command", "command": second}]
    path.write_text(json.dumps({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": hooks}]}}))
    return path


# The guide, "Combine results from multiple hooks": "every hook's command runs to
# completion before Claude Code merges the results. One hook returning `deny` doesn't
# stop sibling hooks from executing ... The log entry is still written because the
# logging hook already ran."
async def test_a_deny_does_not_stop_a_sibling_logging_hook(tmp_path: Path) -> None:
    log = tmp_path / "bash.log"
    logging = f"sleep 0.5; jq -r .tool_input.command >> {shlex.quote(str(log))}"
    guard = "grep -q 'rm -rf' && { echo 'rm -rf is not allowed' >&2; exit 2; }; exit 0"
    registry = load(two_hooks(tmp_path, logging, guard), project_dir=tmp_path)
    call = {"tool_name": "Bash", "tool_input": {"command": "rm -rf /tmp/build"}}
    outcome = await registry.fire("PreToolUse", {**call, "tool_use_id": "t1"})
    assert outcome.blocked
    assert outcome.reason == "rm -rf is not allowed"
    assert log.read_text() == "rm -rf /tmp/build\n"


# "When multiple PreToolUse hooks return updatedInput ... the last one to finish takes
# effect. Since hooks run in parallel, the order is non-deterministic": orchestra takes
# the last in config order (the conformance page says so), whichever finished first
async def test_of_two_rewrites_the_last_in_config_order_wins(tmp_path: Path) -> None:
    def rewrite(command: str, delay: float) -> str:
        answer = {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "updatedInput": {"command": command},
            }
        }
        return f"sleep {delay}; echo {shlex.quote(json.dumps(answer))}"

    registry = load(
        two_hooks(tmp_path, rewrite("ls -l", 0.5), rewrite("ls -a", 0)), project_dir=tmp_path
    )
    call = {"tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_use_id": "t1"}
    outcome = await registry.fire("PreToolUse", call)
    assert outcome.modified_input == {"command": "ls -a"}
