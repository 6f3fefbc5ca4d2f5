"""``with_hooks``: a registry and Python hooks as the SDK's hook callbacks (internal).

Each event something listens to gets one ``HookMatcher`` (no matcher: the registry
matches, as Claude Code would) whose callback takes the CLI's payload (the Claude Code
payload), asks the policy (``_policy``), and answers in the SDK's output (``_answers``),
inside one span. ``PreToolUse`` fails closed twice over: the callback answers a deny on
any error of its own, and its matcher says ``on_failure="block"``, so a CLI that does not
hear back blocks the call too. A registry with ``PermissionRequest`` hooks, or a
``can_use_tool`` of the user's, becomes ``can_use_tool``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Coroutine, Iterable, Mapping
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any, Final, Literal, cast

from claude_agent_sdk import (
    ClaudeAgentOptions,
    HookContext,
    HookInput,
    HookJSONOutput,
    HookMatcher,
    PermissionResult,
    PermissionResultAllow,
    PermissionResultDeny,
    ToolPermissionContext,
)
from opentelemetry import trace

import orchestra.tracing as ot
from orchestra_claude_agent_sdk._answers import event_answer, post_answer, pre_answer
from orchestra_claude_agent_sdk._policy import AGENT_TOOLS, Policy, hear

if TYPE_CHECKING:
    from orchestra.skills import HookRegistry

__all__ = ["with_hooks"]

_EVENTS: Final = (
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "UserPromptSubmit",
    "Stop",
    "SubagentStart",
    "SubagentStop",
    "PreCompact",
    "Notification",
)
"""The SDK's hook events orchestra answers (``PermissionRequest`` is ``can_use_tool``)."""
_Callback = Callable[[HookInput, str | None, HookContext], Coroutine[Any, Any, HookJSONOutput]]


def with_hooks(
    options: ClaudeAgentOptions,
    registry: HookRegistry | None = None,
    hooks: Iterable[object] = (),
    subagent_hooks: Iterable[object] = (),
    *,
    hook_timeout: float | None = 60.0,
) -> ClaudeAgentOptions:
    """A copy of ``options`` whose hook callbacks run orchestra's policy.

    The registry's hooks get the CLI's payloads as they are (the Claude Code payload), and
    their answers go back as the SDK's hook output: a deny is
    ``permissionDecision: "deny"`` with the hook's reason, a new input ``updatedInput``
    (judged again by the guards first), context ``additionalContext``, a block
    ``decision: "block"``. ``TaskHooks`` decide around each tool call (``Skip``/``Fail``
    refuse it, ``Replace`` changes its input or what the model reads); ``SubagentHooks``
    around each call of the ``Agent`` tool (``Fail`` refuses it, ``Delegate`` picks
    another agent type, ``Replace`` changes the prompt or the result). The user's own
    hooks and ``can_use_tool`` are kept.

    Args:
        options: the SDK options to start from (left unchanged).
        registry: YAML/Claude Code hooks (``orchestra.skills.load``); its ``record=`` and
            its hooks' ``enforce: false`` work as anywhere.
        hooks: ``TaskHooks`` objects: tool calls are tasks (the tool's name is the id).
        subagent_hooks: ``SubagentHooks`` objects: the ``Agent`` tool is a dispatch.
        hook_timeout: the Python hooks' timeout, in seconds (their own ``timeout`` wins).

    Returns:
        New ``ClaudeAgentOptions`` for ``query(..., options=)`` or ``ClaudeSDKClient``.

    Raises:
        TypeError: a hook object the chains refuse (see ``orchestra.HookChain``), or one
            whose moment's return annotation names an answer the bridge cannot carry out
            there (``on_failure -> Retry``: the CLI ran the tool, nothing here runs it
            again).
    """
    policy = Policy(registry, hooks, subagent_hooks, hook_timeout, on_outcome=hear)
    matchers: dict[Any, list[HookMatcher]] = {
        event: list(found) for event, found in (options.hooks or {}).items()
    }
    for event in _EVENTS:
        if not policy.has(event):
            continue
        fail: Literal["block"] | None = "block" if event == "PreToolUse" else None
        matcher = HookMatcher(matcher=None, hooks=[_callback(policy, event)], on_failure=fail)
        matchers.setdefault(event, []).append(matcher)
    changes: dict[str, Any] = {"hooks": matchers or None}
    asks = registry is not None and registry.has_hooks("PermissionRequest")
    if asks:
        changes["can_use_tool"] = _can_use_tool(policy, options.can_use_tool)
    return dataclasses.replace(options, **changes)


def _callback(policy: Policy, event: str) -> _Callback:
    """The SDK callback of ``event``."""

    async def callback(
        hook_input: HookInput, tool_use_id: str | None, context: HookContext
    ) -> HookJSONOutput:
        payload = _payload(event, cast("Mapping[str, Any]", hook_input))
        with _span(event, payload):
            return cast("HookJSONOutput", await _answer(policy, event, payload))

    callback.__qualname__ = f"orchestra {event}"
    return callback


def _payload(event: str, payload: Mapping[str, Any]) -> Mapping[str, Any]:
    """The CLI's payload, with ``agent_name`` (what orchestra's files match subagents on)."""
    if event in ("SubagentStart", "SubagentStop") and "agent_name" not in payload:
        return {**payload, "agent_name": payload.get("agent_type")}
    return payload


async def _answer(policy: Policy, event: str, payload: Mapping[str, Any]) -> dict[str, Any]:
    if event == "PreToolUse":
        try:
            verdict = await policy.pre(payload)
        except Exception as error:  # fail closed: a guard that cannot answer refuses
            _record(error)
            why = f"orchestra's PreToolUse hooks failed ({type(error).__name__}: {error})"
            return {
                "hookSpecificOutput": {
                    "hookEventName": event,
                    "permissionDecision": "deny",
                    "permissionDecisionReason": why,
                }
            }
        _mark(verdict.refusal, verdict.ask)
        return pre_answer(verdict)
    if event == "PostToolUse":
        outcome, output = await policy.post(payload)
        return post_answer(event, outcome, output)
    if event == "PostToolUseFailure":
        return event_answer(event, await policy.failed(payload))
    return event_answer(event, await policy.fire(event, payload))


def _can_use_tool(
    policy: Policy,
    theirs: Callable[[str, dict[str, Any], ToolPermissionContext], Any] | None,
) -> Callable[[str, dict[str, Any], ToolPermissionContext], Coroutine[Any, Any, PermissionResult]]:
    """``can_use_tool`` as ``PermissionRequest``: a deny refuses, an allow allows, else theirs.

    With neither an answer nor a callback of the user's, the call is refused: nobody is
    there to ask.
    """

    async def can_use_tool(
        tool_name: str, tool_input: dict[str, Any], context: ToolPermissionContext
    ) -> PermissionResult:
        # the reference's PermissionRequest input: tool_name and tool_input "like PreToolUse
        # hooks, but without tool_use_id"
        payload: dict[str, Any] = {"tool_name": tool_name, "tool_input": tool_input}
        if context.suggestions:  # the "always allow" options, as the reference shows them
            payload["permission_suggestions"] = [s.to_dict() for s in context.suggestions]
        with _span("PermissionRequest", {**payload, "tool_use_id": context.tool_use_id}):
            outcome = await policy.fire("PermissionRequest", payload)
            if outcome is not None and (outcome.blocked or outcome.decision == "deny"):
                why = outcome.reason or f"denied by a PermissionRequest hook ({outcome.decided_by})"
                _mark(why, None)
                return PermissionResultDeny(message=why)
            if outcome is not None and outcome.decision == "allow":
                new = outcome.modified_input
                return PermissionResultAllow(updated_input=None if new is None else dict(new))
            if theirs is not None:
                return cast("PermissionResult", await theirs(tool_name, tool_input, context))
            why = "no PermissionRequest hook allowed it, and nobody is there to ask"
            _mark(why, None)
            return PermissionResultDeny(message=why)

    return can_use_tool


def _span(event: str, payload: Mapping[str, Any]) -> AbstractContextManager[object]:
    """One span per callback: ``execute_tool``, ``invoke_agent`` or ``hook {event}``."""
    tracer = ot.get_tracer()
    if tracer is None:
        return nullcontext()
    attributes: dict[str, Any] = {ot.names.ATTR_HOOK_EVENT: event}
    tool = payload.get("tool_name")
    if isinstance(tool, str) and tool not in AGENT_TOOLS:
        name = ot.names.SPAN_EXECUTE_TOOL.format(tool=tool)
        attributes[ot.names.GEN_AI_OPERATION_NAME] = ot.names.OP_EXECUTE_TOOL
        attributes[ot.names.GEN_AI_TOOL_NAME] = tool
        if payload.get("tool_use_id"):
            attributes[ot.names.GEN_AI_TOOL_CALL_ID] = str(payload["tool_use_id"])
    elif tool in AGENT_TOOLS or event in ("SubagentStart", "SubagentStop"):
        tool_input = payload.get("tool_input") or {}
        agent = str(payload.get("agent_type") or tool_input.get("subagent_type") or "agent")
        name = ot.names.SPAN_INVOKE_AGENT.format(agent=agent)
        attributes[ot.names.GEN_AI_OPERATION_NAME] = ot.names.OP_INVOKE_AGENT
        attributes[ot.names.GEN_AI_AGENT_NAME] = agent
    else:
        name = ot.names.SPAN_HOOK.format(event=event)
    return tracer.start_as_current_span(name, attributes=attributes)


def _mark(refusal: str | None, ask: str | None) -> None:
    span = trace.get_current_span()
    if not span.is_recording():
        return
    verdict = "deny" if refusal is not None else "ask" if ask is not None else "allow"
    span.set_attribute(ot.names.ATTR_TOOL_DECISION, verdict)
    if refusal is not None:
        span.set_attribute(ot.names.ATTR_DECISION_REASON, refusal[:256])


def _record(error: BaseException) -> None:
    ot.record_error(trace.get_current_span(), error)
