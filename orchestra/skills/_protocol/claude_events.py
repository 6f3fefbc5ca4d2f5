"""How Claude Code's hooks reference treats each event: the catalog's Claude Code column.

``EventSpec.claude`` of each event of the catalog is its entry here (an event without one
gets the plain default of its own fields: its matcher field, and exit 2 blocking where it
can block). ``docs/reference/claude-code-conformance.md`` is generated from this table
(``scripts/conformance.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, Literal, TypeAlias, final

import attrs

if TYPE_CHECKING:
    from orchestra.skills._protocol.catalog import EventSpec

__all__ = ["CLAUDE_EVENTS", "ClaudeEvent", "Exit2", "claude_event"]

Exit2: TypeAlias = Literal["block", "agent", "user", "debug", "ignored", "fail"]
"""What exit 2 of a Claude Code command hook does: block with stderr as the reason, or
(not blocking) stderr to the agent, to the user, to the debug log, nowhere; ``fail``:
any non-zero exit fails the action (WorktreeCreate)."""
_ALL_TYPES: Final = frozenset({"command", "http", "mcp_tool", "prompt", "agent"})
_NO_MODEL: Final = frozenset({"command", "http", "mcp_tool"})


@final
@attrs.frozen
class ClaudeEvent:
    """How Claude Code's hooks reference treats an event, for Claude Code sources.

    Attributes:
        matcher_field: the input field its matchers read, None when Claude Code ignores
            a matcher on it.
        exit_2: what exit 2 does (see ``Exit2``).
        plain_stdout: where plain stdout of exit 0 goes: ``"context"`` (the agent's
            messages) or ``"debug"`` (nowhere the agent or user sees).
        reads: the event's own output fields Claude Code reads (beside ``continue``,
            ``stopReason``, ``systemMessage``, ``suppressOutput``).
        discards: universal output fields the event discards.
        timeout: the default timeout of its command, http and mcp_tool hooks, seconds.
        env_file: its command hooks get ``CLAUDE_ENV_FILE``.
        types: the hook types it runs.
        exact_chars: the characters of an exact (non-regex) matcher besides letters and
            digits: ``"_-, |"``, or ``"_|"`` on FileChanged and StopFailure.
    """

    matcher_field: str | None
    exit_2: Exit2
    plain_stdout: Literal["context", "debug"] = "debug"
    reads: tuple[str, ...] = ()
    discards: tuple[str, ...] = ()
    timeout: float = 600.0
    env_file: bool = False
    types: frozenset[str] = _ALL_TYPES
    exact_chars: str = "_-, |"

    @property
    def blocks(self) -> bool:
        """Whether a hook can block the event (exit 2, or a blocking decision)."""
        return self.exit_2 in ("block", "fail")


def claude_event(spec: EventSpec) -> ClaudeEvent:
    """The Claude Code entry of an event: ``CLAUDE_EVENTS``' or its fields' default."""
    found = CLAUDE_EVENTS.get(spec.name)
    if found is not None:
        return found
    return ClaudeEvent(spec.matcher_field, "block" if spec.can_block else "ignored")


_C: Final = ClaudeEvent
_TOOL_CONTEXT: Final = ("additionalContext",)
_BLOCK_FIELDS: Final = ("decision", "reason")
_UNIVERSAL: Final = ("continue", "stopReason", "systemMessage")  # what some events discard
# Elicitation and ElicitationResult: hookSpecificOutput's action and content are the answer
_ELICITATION: Final = ClaudeEvent(
    "mcp_server_name", "block", reads=("action", "content"), discards=_UNIVERSAL, types=_NO_MODEL
)

CLAUDE_EVENTS: Final[dict[str, ClaudeEvent]] = {
    "PreToolUse": _C(
        "tool_name",
        "block",
        reads=(
            "permissionDecision",
            "permissionDecisionReason",
            "updatedInput",
            "additionalContext",
        ),
    ),
    "PostToolUse": _C(
        "tool_name",
        "agent",
        reads=(
            *_BLOCK_FIELDS,
            "additionalContext",
            "updatedToolOutput",
            "updatedMCPToolOutput",
            "classifierContext",
        ),
    ),
    # the reference lists it with the top-level decision events (decision, reason)
    "PostToolUseFailure": _C("tool_name", "agent", reads=(*_BLOCK_FIELDS, *_TOOL_CONTEXT)),
    "PermissionRequest": _C(
        "tool_name",
        "ignored",
        reads=(
            "decision.behavior",
            "decision.updatedInput",
            "decision.updatedPermissions",
            "decision.message",
            "decision.interrupt",
        ),
    ),
    "PermissionDenied": _C("tool_name", "ignored", reads=("retry",)),
    "SessionStart": _C(
        "source",
        "user",
        plain_stdout="context",
        reads=(
            "additionalContext",
            "initialUserMessage",
            "sessionTitle",
            "watchPaths",
            "reloadSkills",
        ),
        env_file=True,
        types=frozenset({"command", "mcp_tool"}),
    ),
    "SessionEnd": _C(
        "reason",
        "user",
        discards=_UNIVERSAL,
        timeout=1.5,
        types=_NO_MODEL,
    ),
    "Stop": _C(None, "block", reads=(*_BLOCK_FIELDS, "additionalContext")),
    "StopFailure": _C(
        "error",
        "ignored",
        discards=_UNIVERSAL,
        types=_NO_MODEL,
        exact_chars="_|",
    ),
    "Notification": _C("notification_type", "ignored", discards=_UNIVERSAL, types=_NO_MODEL),
    "UserPromptSubmit": _C(
        None,
        "block",
        plain_stdout="context",
        reads=(
            *_BLOCK_FIELDS,
            "additionalContext",
            "sessionTitle",
            "suppressOriginalPrompt",
        ),
        timeout=30.0,
    ),
    "PreCompact": _C("trigger", "block", reads=_BLOCK_FIELDS, discards=_UNIVERSAL, types=_NO_MODEL),
    "PostCompact": _C("trigger", "user", discards=_UNIVERSAL, types=_NO_MODEL),
    "ConfigChange": _C(
        "source",
        "block",
        reads=_BLOCK_FIELDS,
        discards=_UNIVERSAL,
        types=_NO_MODEL,
    ),
    "InstructionsLoaded": _C("load_reason", "ignored", discards=_UNIVERSAL, types=_NO_MODEL),
    "PostToolBatch": _C(None, "block", reads=(*_BLOCK_FIELDS, "additionalContext")),
    "SubagentStart": _C("agent_type", "user", reads=_TOOL_CONTEXT, types=_NO_MODEL),
    "SubagentStop": _C("agent_type", "block", reads=(*_BLOCK_FIELDS, "additionalContext")),
    "TaskCreated": _C(None, "block", reads=_BLOCK_FIELDS, discards=("continue", "stopReason")),
    "TaskCompleted": _C(None, "block"),
    "TeammateIdle": _C(None, "block"),
    "Setup": _C(
        "trigger",
        "user",
        reads=_TOOL_CONTEXT,
        env_file=True,
        types=frozenset({"command", "mcp_tool"}),
    ),
    "WorktreeCreate": _C(None, "fail", reads=("worktreePath",), types=_NO_MODEL),
    "WorktreeRemove": _C(None, "debug", discards=_UNIVERSAL, types=_NO_MODEL),
    "Elicitation": _ELICITATION,
    "ElicitationResult": _ELICITATION,
    "CwdChanged": _C(
        None,
        "user",
        reads=("watchPaths",),
        discards=("continue", "stopReason"),
        env_file=True,
        types=_NO_MODEL,
    ),
    "FileChanged": _C(
        "file_path",
        "user",
        reads=("watchPaths",),
        discards=("continue", "stopReason"),
        env_file=True,
        types=_NO_MODEL,
        exact_chars="_|",
    ),
    "UserPromptExpansion": _C(
        "command_name",
        "block",
        plain_stdout="context",
        reads=(*_BLOCK_FIELDS, "additionalContext"),
    ),
    "MessageDisplay": _C(
        None,
        "ignored",
        reads=("displayContent",),
        discards=_UNIVERSAL,
        timeout=10.0,
        types=_NO_MODEL,
    ),
    "DirectoryAdded": _C("source", "debug", discards=("continue", "stopReason"), types=_NO_MODEL),
}
"""Claude Code's treatment of each event it documents, by event name."""
