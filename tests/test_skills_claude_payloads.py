"""Every field of every Claude Code event, against the hooks reference, as orchestra sends them.

``REFERENCE_INPUT`` and ``REFERENCE_OUTPUT`` are transcribed from Claude Code's hooks
reference: thevibeworks/claude-code-docs, ``content/en/docs/claude-code/hooks.md`` at
commit 3f1ef7c2860523314e2c1b07d95f1db5235f66b1 (each event's "input" section, and its
"decision control" or "output" section with the "Decision control" table). The events
orchestra fires itself are fired for real here (a guarded tool, a dispatcher, a DAG) into a
``.claude/settings.json`` command hook that logs its stdin; every field it gets that the
reference lacks, and every reference field it lacks, must be on the conformance page
(``orchestra.skills._protocol.claude_payloads``, rendered by ``scripts/conformance.py``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import orchestra
from orchestra import ToolDenied
from orchestra.skills import load
from orchestra.skills._protocol.claude_events import CLAUDE_EVENTS
from orchestra.skills._protocol.claude_payloads import COMMON_ADDED, COMMON_MISSING, PAYLOADS

pytestmark = pytest.mark.anyio

# "Common input fields" (with the two fields "when running with --agent or inside a subagent")
REFERENCE_COMMON = frozenset(
    {
        "session_id",
        "prompt_id",
        "transcript_path",
        "cwd",
        "permission_mode",
        "effort",
        "hook_event_name",
        "agent_id",
        "agent_type",
    }
)
_TOOL = ("tool_name", "tool_input", "tool_use_id")
_TASK = ("task_id", "task_subject", "task_description", "teammate_name", "team_name")
_STOP = ("stop_hook_active", "last_assistant_message", "background_tasks", "session_crons")
# Each event's own input fields, required or optional ("<Event> input")
REFERENCE_INPUT: dict[str, frozenset[str]] = {
    event: frozenset(fields)
    for event, fields in {
        "SessionStart": ("source", "model", "agent_type", "session_title"),
        "Setup": ("trigger",),
        "InstructionsLoaded": (
            "file_path",
            "memory_type",
            "load_reason",
            "globs",
            "trigger_file_path",
            "parent_file_path",
        ),
        "UserPromptSubmit": ("prompt",),
        "UserPromptExpansion": (
            "expansion_type",
            "command_name",
            "command_args",
            "command_source",
            "prompt",
        ),
        "MessageDisplay": ("turn_id", "message_id", "index", "final", "delta"),
        "PreToolUse": _TOOL,
        # "like PreToolUse hooks, but without tool_use_id"
        "PermissionRequest": ("tool_name", "tool_input", "permission_suggestions"),
        "PostToolUse": (*_TOOL, "tool_response", "duration_ms"),
        "PostToolUseFailure": (*_TOOL, "error", "is_interrupt", "duration_ms"),
        "PostToolBatch": ("tool_calls",),
        "PermissionDenied": (*_TOOL, "reason"),
        "Notification": ("message", "title", "notification_type"),
        "SubagentStart": ("agent_id", "agent_type"),
        "SubagentStop": ("agent_id", "agent_type", "agent_transcript_path", *_STOP),
        "TaskCreated": _TASK,
        "TaskCompleted": _TASK,
        "Stop": _STOP,
        "StopFailure": ("error", "error_details", "last_assistant_message"),
        "TeammateIdle": ("teammate_name", "team_name"),
        "ConfigChange": ("source", "file_path"),
        "CwdChanged": ("old_cwd", "new_cwd"),
        "DirectoryAdded": ("directory", "source"),
        "FileChanged": ("file_path", "event"),
        "WorktreeCreate": ("name",),
        "WorktreeRemove": ("worktree_path",),
        "PreCompact": ("trigger", "custom_instructions"),
        "PostCompact": ("trigger", "compact_summary"),
        "SessionEnd": ("reason",),
        "Elicitation": (
            "mcp_server_name",
            "message",
            "mode",
            "url",
            "elicitation_id",
            "requested_schema",
        ),
        "ElicitationResult": ("mcp_server_name", "action", "mode", "elicitation_id", "content"),
    }.items()
}
_BLOCK = ("decision", "reason")
# Each event's own output fields (beside the universal continue, stopReason,
# suppressOutput, systemMessage, terminalSequence)
REFERENCE_OUTPUT: dict[str, frozenset[str]] = {
    event: frozenset(fields)
    for event, fields in {
        "PreToolUse": (
            "permissionDecision",
            "permissionDecisionReason",
            "updatedInput",
            "additionalContext",
        ),
        "PermissionRequest": (
            "decision.behavior",
            "decision.updatedInput",
            "decision.updatedPermissions",
            "decision.message",
            "decision.interrupt",
        ),
        "PostToolUse": (
            *_BLOCK,
            "additionalContext",
            "updatedToolOutput",
            "updatedMCPToolOutput",
            "classifierContext",
        ),
        # the "Decision control" table lists it with the top-level decision events
        "PostToolUseFailure": (*_BLOCK, "additionalContext"),
        "PostToolBatch": (*_BLOCK, "additionalContext"),
        "PermissionDenied": ("retry",),
        "SessionStart": (
            "additionalContext",
            "initialUserMessage",
            "sessionTitle",
            "watchPaths",
            "reloadSkills",
        ),
        "Setup": ("additionalContext",),
        "UserPromptSubmit": (
            *_BLOCK,
            "additionalContext",
            "sessionTitle",
            "suppressOriginalPrompt",
        ),
        "UserPromptExpansion": (*_BLOCK, "additionalContext"),
        "MessageDisplay": ("displayContent",),
        "Stop": (*_BLOCK, "additionalContext"),
        "SubagentStop": (*_BLOCK, "additionalContext"),
        "SubagentStart": ("additionalContext",),
        "ConfigChange": _BLOCK,
        "PreCompact": _BLOCK,
        "TaskCreated": _BLOCK,
        "WorktreeCreate": ("worktreePath",),
        "Elicitation": ("action", "content"),
        "ElicitationResult": ("action", "content"),
        "CwdChanged": ("watchPaths",),
        "FileChanged": ("watchPaths",),
    }.items()
}
# what orchestra always sends (a payload's own session_id and cwd win; traceparent only
# when tracing is on)
SENT_COMMON = frozenset({"session_id", "cwd", "hook_event_name", "timestamp", "event"})


def test_the_catalog_has_every_event_of_the_reference_and_reads_its_output_fields() -> None:
    assert set(CLAUDE_EVENTS) == set(REFERENCE_INPUT)
    for event, spec in CLAUDE_EVENTS.items():
        assert set(spec.reads) == REFERENCE_OUTPUT.get(event, frozenset()), event


def test_every_documented_difference_is_one() -> None:
    assert not set(COMMON_ADDED) & REFERENCE_COMMON
    assert set(COMMON_MISSING) <= REFERENCE_COMMON
    for event, payload in PAYLOADS.items():
        own = REFERENCE_INPUT[event]
        assert not set(payload.added) & (own | REFERENCE_COMMON), event
        assert set(payload.missing) <= own, event
        assert set(payload.values) <= own | REFERENCE_COMMON, event


def check(event: str, data: dict[str, Any]) -> None:
    """``data`` (what a hook got for ``event``) differs from the reference only as documented."""
    documented = PAYLOADS[event]
    reference = REFERENCE_INPUT[event] | REFERENCE_COMMON
    assert data["hook_event_name"] == event
    added = set(data) - reference - set(COMMON_ADDED)
    assert added <= set(documented.added), (event, added - set(documented.added))
    lacking = reference - set(data) - set(COMMON_MISSING) - set(documented.missing)
    assert lacking == set(), (event, lacking)


LOG = "cat >> events.jsonl; echo >> events.jsonl"


def settings(tmp_path: Path, events: dict[str, list[dict[str, Any]]]) -> Path:
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps({"hooks": events}))
    return path


def logged(tmp_path: Path) -> list[dict[str, Any]]:
    text = (tmp_path / "events.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def logging(*events: str) -> dict[str, list[dict[str, Any]]]:
    return {event: [{"hooks": [{"type": "command", "command": LOG}]}] for event in events}


async def test_a_guarded_tools_events_have_the_references_fields(tmp_path: Path) -> None:
    hooks = logging("PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionDenied")
    deny = {"type": "command", "command": "echo 'no deploys today' >&2; exit 2"}
    hooks["PreToolUse"].append({"matcher": "deploy", "hooks": [deny]})
    registry = load(settings(tmp_path, hooks), project_dir=tmp_path)

    @registry.guard("Read")
    async def read(file_path: str) -> str:
        return f"read {file_path}"

    @registry.guard("Grep")
    async def grep(pattern: str) -> str:
        raise ValueError(f"bad pattern {pattern}")

    @registry.guard("deploy")
    async def deploy(target: str) -> str:
        raise AssertionError("denied calls do not run")

    assert await read("/src/app.py") == "read /src/app.py"
    with pytest.raises(ValueError, match="bad pattern"):
        await grep("(")
    with pytest.raises(ToolDenied, match="no deploys today"):
        await deploy("prod")
    events = logged(tmp_path)
    assert [e["hook_event_name"] for e in events] == [
        "PreToolUse",
        "PostToolUse",
        "PreToolUse",
        "PostToolUseFailure",
        "PreToolUse",
        "PermissionDenied",
    ]
    tool = {"tool_name", "tool_input", "tool_use_id"}
    shapes = {
        "PreToolUse": SENT_COMMON | tool,
        "PostToolUse": SENT_COMMON | tool | {"tool_response"},
        "PostToolUseFailure": SENT_COMMON | tool | {"error", "error_type"},
        "PermissionDenied": SENT_COMMON | tool | {"reason"},
    }
    for data in events:
        event = data["hook_event_name"]
        assert set(data) == shapes[event], event
        check(event, data)
    assert events[1]["tool_response"] == "read /src/app.py"
    assert events[3]["error"] == "bad pattern ("
    assert events[5]["reason"] == "no deploys today"


async def test_a_dispatchers_subagent_events_have_the_references_fields(tmp_path: Path) -> None:
    registry = load(
        settings(tmp_path, logging("SubagentStart", "SubagentStop")), project_dir=tmp_path
    )

    class Echo:
        name = "Explore"

        async def run(self, task: str, ctx: Any) -> str:
            return f"explored: {task}"

    dispatcher = orchestra.Dispatcher([Echo()], hooks=[registry.as_subagent_hooks()])
    result = await dispatcher.dispatch("Explore", "find the config", parent="lead")
    assert result.output == "explored: find the config"
    start, stop = logged(tmp_path)
    dispatch = {
        "agent_name",
        "agent_type",
        "parent_agent",
        "execution_mode",
        "task",
        "attempt",
        "delegated_from",
    }
    assert set(start) == SENT_COMMON | dispatch
    ended = {"stop_hook_active", "last_assistant_message", "output", "state", "error", "error_type"}
    assert set(stop) == SENT_COMMON | dispatch | ended
    check("SubagentStart", start)
    check("SubagentStop", stop)
    assert (start["agent_type"], stop["agent_type"]) == ("Explore", "Explore")
    assert stop["last_assistant_message"] == "explored: find the config"
    assert stop["stop_hook_active"] is False


async def test_a_dags_task_events_have_the_references_fields(tmp_path: Path) -> None:
    registry = load(
        settings(tmp_path, logging("TaskCreated", "TaskCompleted")), project_dir=tmp_path
    )
    dag = orchestra.DAG("release")

    @dag.task()
    def build() -> str:
        return "built"

    result = await orchestra.run(dag, hooks=[registry.as_task_hooks()])
    assert result.ok
    created, completed = logged(tmp_path)
    task = {"task_id", "task_subject", "run_id", "attempt", "executor", "metadata"}
    assert set(created) == SENT_COMMON | task
    assert set(completed) == SENT_COMMON | task | {"state", "error", "error_type"}
    check("TaskCreated", created)
    check("TaskCompleted", completed)
    assert (created["task_id"], created["task_subject"]) == ("build", "build")
