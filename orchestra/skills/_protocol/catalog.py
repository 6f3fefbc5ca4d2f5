"""The events catalog: the one table of the skills-hook events (Claude Code's, and ours).

Config validation, firing and aggregation all read this table: which payload field a
matcher is matched against, whether a hook can block the event or modify its input, and
what a hook error means by default (``on_error``).

Guard events (``PreToolUse``, ``PermissionRequest``) default to ``on_error: block``: a
guard that cannot run must not silently allow. They have phases: a hook may be a
``transform`` or a ``guard`` (see ``HookSpec.phase``). Every other event defaults to
``continue``. Events that report something already over (``PostToolUse``,
``PostToolUseFailure``, ...) cannot block: there is nothing left to stop.

Each event also says how Claude Code's current hooks reference treats it, for hooks of
Claude Code sources (``EventSpec.claude``): the field its matchers read, what exit 2 does
and where stderr goes, where plain stdout goes, the output fields it reads, its default
timeout, whether ``CLAUDE_ENV_FILE`` is set: ``_protocol.claude_events`` holds that table.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final, Literal, TypeAlias, final

import attrs

from orchestra._errors import did_you_mean
from orchestra.skills._protocol.claude_events import ClaudeEvent, Exit2, claude_event

__all__ = ["EVENTS", "ClaudeEvent", "EventSpec", "Exit2", "OnError", "Phase", "unknown_event"]

OnError: TypeAlias = Literal["continue", "block", "raise"]
"""What a hook error (crash, timeout, bad output) means: go on, block the event, or raise
it from ``fire`` once the event's other hooks ran (``CriticalHookError``)."""
Phase: TypeAlias = Literal["transform", "guard"]
"""The phase of a hook on an event that has phases: it rewrites the input, or judges it."""


@final
@attrs.frozen
class EventSpec:
    """What one event allows, as the catalog says.

    Attributes:
        name: the event's name, e.g. ``"PreToolUse"``.
        matcher_field: the payload field a hook's ``matcher`` is matched against (e.g.
            ``"tool_name"``), or None when the event takes no matcher.
        can_block: a hook may deny or block the event (``decision: deny|block``, exit 2,
            a fixed ``permission`` hook, or an error under ``on_error: block``).
        can_modify: a hook may replace the event's input (``modified_input``,
            Claude Code's ``updatedInput``); the input is the payload field
            ``input_field``.
        default_on_error: ``on_error`` of a hook that does not set it.
        phases: hooks may say ``phase: transform`` (run first, may only rewrite the
            input) or ``phase: guard`` (run next and again on a rewritten input, fail
            closed).
        input_field: the payload field that ``modified_input`` replaces, if any.
        description: when the event fires.
        can_skip: a hook may answer ``decision: skip`` (the DAG's ``AttemptStart``:
            the task ends SKIPPED without running).
        claude: how Claude Code's reference treats the event (see ``ClaudeEvent``).
    """

    name: str
    matcher_field: str | None
    can_block: bool
    can_modify: bool
    default_on_error: OnError
    phases: bool
    input_field: str | None
    description: str
    can_skip: bool = False
    claude: ClaudeEvent = attrs.field(default=attrs.Factory(claude_event, takes_self=True))

    def on_error_for(self, phase: Phase | None, fails_open: bool) -> OnError:
        """The ``on_error`` of a hook at this event that sets none.

        A guard's is ``block``; a hook type that fails open (an http hook, as lobehub's
        webhooks) gets ``continue``; any other, ``default_on_error``.
        """
        if phase == "guard":
            return "block"
        return "continue" if fails_open else self.default_on_error

    @property
    def claude_matcher_field(self) -> str | None:
        """The field a Claude Code source's matchers read (None: matchers ignored)."""
        return self.claude.matcher_field


def _event(
    name: str,
    matcher_field: str | None,
    *,
    block: bool = False,
    modify: bool = False,
    guard: bool = False,
    skip: bool = False,
    input_field: str = "tool_input",
    description: str,
    claude: ClaudeEvent | None = None,
) -> EventSpec:
    more = {} if claude is None else {"claude": claude}  # else CLAUDE_EVENTS' entry
    return EventSpec(
        name=name,
        matcher_field=matcher_field,
        can_block=block,
        can_modify=modify,
        default_on_error="block" if guard else "continue",
        phases=guard,
        input_field=input_field if modify else None,
        description=description,
        can_skip=skip,
        **more,
    )


_SPECS: Final = (
    _event(
        "PreToolUse",
        "tool_name",
        block=True,
        modify=True,
        guard=True,
        description="before a tool runs, with tool_name and tool_input",
    ),
    _event(
        "PostToolUse",
        "tool_name",
        description="after a tool returned, with tool_input and tool_response",
    ),
    _event(
        "PostToolUseFailure",
        "tool_name",
        description="after a tool raised, with tool_input and error",
    ),
    _event(
        "PermissionRequest",
        "tool_name",
        block=True,
        modify=True,
        guard=True,
        description="when a tool call needs a permission decision",
    ),
    _event(
        "PermissionDenied",
        "tool_name",
        description="after a tool call was denied",
    ),
    _event(
        "SessionStart",
        "source",
        description="when a session starts or resumes (source: startup, resume, ...)",
    ),
    _event(
        "SessionEnd",
        "reason",
        description="when a session ends",
    ),
    _event(
        "Stop",
        None,
        block=True,
        description="when the agent is about to stop; a block asks it to go on",
    ),
    _event(
        "StopFailure",
        "error",
        description="when the agent stopped on an error",
    ),
    _event(
        "Notification",
        "notification_type",
        description="when the agent sends a notification",
    ),
    _event(
        "UserPromptSubmit",
        None,
        block=True,
        description="when a prompt is submitted, before the agent reads it",
    ),
    _event(
        "PreCompact",
        "trigger",
        block=True,
        description="before the context is compacted (trigger: manual, auto)",
    ),
    _event(
        "PostCompact",
        "trigger",
        description="after the context was compacted",
    ),
    _event(
        "ConfigChange",
        "source",
        block=True,
        description="when a configuration changes; a block refuses the change",
    ),
    _event(
        "InstructionsLoaded",
        "load_reason",
        description="when instruction files were loaded",
    ),
    _event(
        "PostToolBatch",
        None,
        block=True,
        description="after every tool call of a batch returned; a block stops the loop",
    ),
    _event(
        "SubagentStart",
        "agent_name",
        block=True,
        description="before a subagent attempt starts; a deny fails the dispatch",
    ),
    _event(
        "SubagentStop",
        "agent_name",
        block=True,
        description="after a subagent answered or raised; a block asks it to go on",
    ),
    # One model turn of an agent run, as the lobehub runtime's beforeStep/afterStep:
    # fired by the agent bridges, observe-only (no block, no rewrite).
    _event(
        "StepStart",
        "agent_name",
        description="before each model turn of an agent run, with step, model and message_count",
    ),
    _event(
        "StepEnd",
        "agent_name",
        description="after each model turn of an agent run, with the tool calls asked "
        "for, usage, duration_ms, error, the turn's content and the tool results it read",
    ),
    _event(
        "TaskCreated",
        "task_id",
        block=True,
        description="before a DAG task first runs; a deny fails the task",
    ),
    _event(
        "TaskCompleted",
        "task_id",
        block=True,
        description="when a DAG task ended, with its state and error; a block refuses it",
    ),
    # Claude Code's newer events: fired by your own code, matched and blocked as there.
    _event(
        "Setup",
        "trigger",
        description="once at start-up (trigger: init, maintenance)",
    ),
    _event(
        "TeammateIdle",
        None,
        block=True,
        description="when a teammate is about to go idle; a block keeps it working",
    ),
    _event(
        "WorktreeCreate",
        None,
        block=True,
        description="when a worktree is created (a command hook prints its path); a block "
        "refuses it",
    ),
    _event(
        "WorktreeRemove",
        None,
        description="when a worktree was removed",
    ),
    _event(
        "Elicitation",
        "mcp_server_name",
        block=True,
        description="when an MCP server asks the user for input; a block declines",
    ),
    _event(
        "ElicitationResult",
        "mcp_server_name",
        block=True,
        description="when the user answered an MCP elicitation; a block withholds it",
    ),
    _event(
        "CwdChanged",
        None,
        description="when the working directory changed",
    ),
    _event(
        "FileChanged",
        "file_path",
        description="when a watched file changed",
    ),
    _event(
        "UserPromptExpansion",
        "command_name",
        block=True,
        description="when a typed command expands into a prompt; a block refuses it",
    ),
    _event(
        "MessageDisplay",
        None,
        description="while an assistant message is shown; displayContent replaces the text",
    ),
    _event(
        "DirectoryAdded",
        "source",
        description="after a working directory was added (source: slash_command, ...)",
    ),
    # The DAG's own moments (registry.as_task_hooks()), as the graph-executor and Arc
    # seeds have them; their files' event names are read in their own formats.
    _event(
        "RunStart",
        "dag",
        block=True,
        description="before a DAG run's first task; a block ends the run before it starts",
    ),
    _event(
        "AttemptStart",
        "task_id",
        block=True,
        modify=True,
        skip=True,
        input_field="inputs",
        description=(
            "before each attempt of a DAG task, with its inputs; a block fails it, a skip "
            "skips it, modified_input merges into its keyword arguments, an output is its "
            "result without running"
        ),
    ),
    _event(
        "AttemptEnd",
        "task_id",
        description=(
            "after each attempt of a DAG task, with its output or error; on success an "
            "output replaces the task's"
        ),
    ),
    _event(
        "AttemptRetry",
        "task_id",
        description="before a failed DAG task runs again, with the attempt and the error",
    ),
    _event(
        "EdgeSelected",
        "task_id",
        block=True,
        description=(
            "when a branch task chose the downstream tasks to follow; an output redirects "
            "to other direct downstream tasks, a block follows none"
        ),
    ),
    _event(
        "RunEnd",
        "state",
        description="when a DAG run ended, with its state (succeeded or failed)",
    ),
)

EVENTS: Final[Mapping[str, EventSpec]] = MappingProxyType({spec.name: spec for spec in _SPECS})
"""The catalog: every event's ``EventSpec``, by name, in documentation order."""


def unknown_event(event: str) -> ValueError:
    """The error for an event the catalog does not know (naming the closest one)."""
    return ValueError(f"unknown event {event!r}{did_you_mean(str(event), EVENTS)}")
