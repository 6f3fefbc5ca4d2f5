"""What the policy decided, as the Claude Agent SDK's hook output (internal).

The SDK sends the CLI what a callback returns, field for field (``continue_`` and
``async_`` renamed), and the CLI reads it as Claude Code reads a hook's JSON:

=================================  ========================================================
a refusal                          ``hookSpecificOutput.permissionDecision: "deny"`` and
                                   ``permissionDecisionReason`` (the model reads it)
an ``ask``                         ``permissionDecision: "ask"`` (Claude Code asks, or calls
                                   ``can_use_tool``)
a new input                        ``permissionDecision: "allow"`` with ``updatedInput``
                                   (already judged by the guards)
messages                           ``hookSpecificOutput.additionalContext``
a block on any other event         ``decision: "block"`` and ``reason``
a ``PostToolUse`` rewrite          ``hookSpecificOutput.updatedToolOutput``
a system message                   ``systemMessage``
nothing decided (or audit only)    ``{}``: no opinion
=================================  ========================================================
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from orchestra.skills import HookOutcome
    from orchestra_claude_agent_sdk._policy import Verdict

__all__ = ["event_answer", "post_answer", "pre_answer"]

_CONTEXT_EVENTS: Final = frozenset(
    {
        "PostToolUse",
        "PostToolUseFailure",
        "UserPromptSubmit",
        "SubagentStart",
        "SubagentStop",
        "Stop",
        "Notification",
        "SessionStart",
    }
)
"""The events whose ``hookSpecificOutput`` carries ``additionalContext``."""


def pre_answer(verdict: Verdict) -> dict[str, Any]:
    """The ``PreToolUse`` output of a verdict."""
    specific: dict[str, Any] = {"hookEventName": "PreToolUse"}
    if verdict.refusal is not None:
        specific["permissionDecision"] = "deny"
        specific["permissionDecisionReason"] = verdict.refusal
    elif verdict.ask is not None:
        specific["permissionDecision"] = "ask"
        specific["permissionDecisionReason"] = verdict.ask
    elif verdict.tool_input is not None:
        specific["permissionDecision"] = "allow"
        specific["updatedInput"] = dict(verdict.tool_input)
    elif verdict.allowed:
        specific["permissionDecision"] = "allow"
    if verdict.messages:
        specific["additionalContext"] = "\n".join(verdict.messages)
    answer: dict[str, Any] = {}
    if len(specific) > 1:
        answer["hookSpecificOutput"] = specific
    if verdict.system_message:
        answer["systemMessage"] = verdict.system_message
    return answer


def post_answer(event: str, outcome: HookOutcome | None, output: Any) -> dict[str, Any]:
    """The ``PostToolUse`` output: a rewrite of what the model reads, context, a block."""
    answer = event_answer(event, outcome)
    if output is not None:
        specific = answer.setdefault("hookSpecificOutput", {"hookEventName": event})
        specific["updatedToolOutput"] = output
    return answer


def event_answer(event: str, outcome: HookOutcome | None) -> dict[str, Any]:
    """The output of any event from the registry's outcome."""
    answer: dict[str, Any] = {}
    if outcome is None:
        return answer
    if outcome.blocked:
        answer["decision"] = "block"
        answer["reason"] = outcome.reason or f"blocked by a {event} hook ({outcome.decided_by})"
    if outcome.stop:
        answer["continue_"] = False
        if outcome.stop_reason:
            answer["stopReason"] = outcome.stop_reason
    if outcome.messages and event in _CONTEXT_EVENTS:
        answer["hookSpecificOutput"] = {
            "hookEventName": event,
            "additionalContext": "\n".join(outcome.messages),
        }
    if outcome.system_message:
        answer["systemMessage"] = outcome.system_message
    return answer
