"""The fields orchestra's own producers send for Claude Code's events, against the reference.

orchestra is a library: most Claude Code events are fired by your code, with the fields you
pass. A few are fired by orchestra itself (the tool-call protocol every engine shares, the
subagent dispatcher, the DAG, the agent bridges), and ``PAYLOADS`` says, for each of those,
who fires it and how its fields differ from the hooks reference's input fields: the fields
it adds (``added``) and the reference's fields it never sends (``missing``), each with why.
``COMMON_ADDED`` and ``COMMON_MISSING`` are the same for the common input fields every event
gets. ``docs/reference/claude-code-conformance.md`` renders the table
(``scripts/conformance.py``); tests fire each producer and pin its fields against the
reference's, so a difference not written here fails them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, final

import attrs

__all__ = ["COMMON_ADDED", "COMMON_MISSING", "PAYLOADS", "Payload"]

COMMON_ADDED: Final[Mapping[str, str]] = {
    "timestamp": "when the event fired (ISO 8601, UTC), for logs",
    "event": "the event's name again, as the echo-agent seed spells it (FileChanged keeps "
    "its own `event`)",
    "traceparent": "the W3C trace context of the hook's span, when tracing is on",
}
"""Common fields orchestra adds to every event (a payload's own value wins)."""

COMMON_MISSING: Final[Mapping[str, str]] = {
    "transcript_path": "orchestra does not own the conversation, so there is no transcript "
    "file; pass one in the payload if your agent writes it",
    "permission_mode": "orchestra has no permission modes; pass your agent's in the payload",
    "prompt_id": "orchestra has no prompt ids; pass one in the payload",
    "effort": "orchestra has no effort level; pass it in the payload",
    "agent_id": "orchestra's dispatches have no agent id (`agent_name`, with `attempt` in "
    "`as_subagent_hooks`, names one)",
    "agent_type": "sent on SubagentStart and SubagentStop only; the agent bridges name the "
    "agent that calls a tool `agent_name`",
}
"""Common fields orchestra does not set (``session_id`` is the registry's, ``cwd`` the
project folder's, unless the payload has its own)."""


@final
@attrs.frozen
class Payload:
    """How the fields orchestra sends for one Claude Code event differ from the reference's.

    Attributes:
        producers: what fires the event with these fields.
        added: fields sent beside the reference's, each with what it holds.
        missing: the reference's fields of the event never sent, each with why.
        values: the reference's fields sent with other values than Claude Code's.
    """

    producers: str
    added: Mapping[str, str] = attrs.field(factory=dict)
    missing: Mapping[str, str] = attrs.field(factory=dict)
    values: Mapping[str, str] = attrs.field(factory=dict)


_TOOL_PRODUCERS: Final = "the tool-call protocol: `@registry.guard` and every agent bridge"
_TOOL_ADDED: Final = {
    "tool_identifier": "the toolset or MCP server the tool comes from, where the engine has "
    "one (lobehub's `identifier`)",
    "agent_name": "the agent that calls the tool, in the agent bridges",
    "handoff_to": "the agent a handoff tool hands off to (OpenAI Agents)",
}
_DURATION: Final = "orchestra does not time tool calls for hooks (the call's span has it)"
_AGENT_ADDED: Final = {
    "agent_name": "the agent's name (the same as `agent_type`)",
    "parent_agent": "the agent (or DAG) that dispatched the work",
    "execution_mode": "the dispatch's `ExecutionMode` (`as_subagent_hooks`)",
    "task": "the text dispatched (`as_subagent_hooks`)",
    "prompt": "the text dispatched (CrewAI's delegation)",
    "attempt": "the attempt number with this agent (`as_subagent_hooks`)",
    "delegated_from": "the agents tried before this one (`as_subagent_hooks`)",
}
_STATE: Final = {
    "state": "how the attempt or run ended (`succeeded`, `failed`, `handoff`, ...)",
    "output": "what it returned (any JSON value, not only text)",
    "error": "the error's message when it failed, else null",
    "error_type": "the error's class name when it failed, else null",
}
_TASK_ADDED: Final = {
    "run_id": "the DAG run's id",
    "attempt": "the attempt number",
    "executor": "the executor the task runs on",
    "metadata": "the task's metadata",
}
_TASK_MISSING: Final = {
    "task_description": "a DAG task has no description (its `metadata` is sent)",
    "teammate_name": "orchestra has no teammates",
    "team_name": "orchestra has no teams (the reference deprecates the field)",
}
_SESSION: Final = "the OpenAI Agents bridge's entry points (`Runner.run`, ...)"
_SUBJECT: Final = {"task_subject": "the task's id (a DAG task has no title)"}
_CRONS: Final = {
    "background_tasks": "orchestra has no background task registry",
    "session_crons": "orchestra has no scheduled wakeups",
}

PAYLOADS: Final[Mapping[str, Payload]] = {
    "PreToolUse": Payload(
        _TOOL_PRODUCERS,
        _TOOL_ADDED,
        values={
            "tool_input": "the arguments as the engine (or your code) passed them: a relative "
            "or `~` `file_path` is not made absolute, so match paths after normalizing them"
        },
    ),
    "PostToolUse": Payload(
        _TOOL_PRODUCERS,
        {**_TOOL_ADDED, "mocked": "true when a PreToolUse mock answered instead of the tool"},
        {"duration_ms": _DURATION},
    ),
    "PostToolUseFailure": Payload(
        _TOOL_PRODUCERS,
        {**_TOOL_ADDED, "error_type": "the error's class name"},
        {
            "duration_ms": _DURATION,
            "is_interrupt": "a cancelled tool call raises in your code and fires no hook",
        },
    ),
    "PermissionDenied": Payload(_TOOL_PRODUCERS, _TOOL_ADDED),
    "PermissionRequest": Payload(
        "the Claude Agent SDK bridge's `can_use_tool` (the CLI's own payload otherwise)"
    ),
    "SubagentStart": Payload(
        "`as_subagent_hooks` and the OpenAI Agents, pydantic-ai and CrewAI bridges",
        _AGENT_ADDED,
    ),
    "SubagentStop": Payload(
        "`as_subagent_hooks` and the OpenAI Agents, pydantic-ai and CrewAI bridges",
        {**_AGENT_ADDED, **_STATE, "handoff_to": "the agent a handoff went to (OpenAI Agents)"},
        {
            "agent_transcript_path": "orchestra keeps no subagent transcript",
            **_CRONS,
        },
    ),
    "TaskCreated": Payload(
        "`as_task_hooks` (a DAG task, before each attempt)",
        _TASK_ADDED,
        _TASK_MISSING,
        _SUBJECT,
    ),
    "TaskCompleted": Payload(
        "`as_task_hooks` (a DAG task, once it ended)",
        {
            **_TASK_ADDED,
            "state": "the task's terminal state",
            "error": _STATE["error"],
            "error_type": _STATE["error_type"],
        },
        _TASK_MISSING,
        _SUBJECT,
    ),
    "SessionStart": Payload(
        _SESSION,
        {"agent_name": "the run's starting agent"},
        {
            "model": "the bridge does not know the model before the first call",
            "agent_type": "the starting agent is `agent_name`",
            "session_title": "orchestra has no session titles",
        },
        {"source": "`startup`, or `resume` for a run resumed from its state"},
    ),
    "UserPromptSubmit": Payload(_SESSION, {"agent_name": "the run's starting agent"}),
    "Stop": Payload(
        _SESSION,
        {"agent_name": "the agent that gave the final output", "output": _STATE["output"]},
        _CRONS,
    ),
    "StopFailure": Payload(
        _SESSION,
        {"agent_name": "the agent that failed", "error_type": "the error's class name"},
        {"last_assistant_message": "a failed run has no rendered error text"},
        {
            "error": "Claude Code's error type, read from the model client's HTTP status "
            "(`rate_limit`, `authentication_failed`, `invalid_request`, `model_not_found`, "
            "`server_error`), else `unknown` (never `overloaded`, `billing_error`, ...); "
            "`error_details` is the error's message"
        },
    ),
    "SessionEnd": Payload(
        _SESSION,
        {"agent_name": "the run's starting agent"},
        values={
            "reason": "how the run ended (`completed`, `failed`, `refused`, `interrupted`), "
            "not Claude Code's session reasons"
        },
    ),
}
"""The Claude Code events orchestra fires itself: who fires them, and how the fields differ."""
