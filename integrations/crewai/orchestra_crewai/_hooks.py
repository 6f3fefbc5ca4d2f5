"""orchestra's policy in CrewAI's own before/after tool-call hooks (internal).

Two hooks are added to CrewAI's tool-call hook lists once per process; each call of a
guarded agent (or of an agent of a guarded crew) goes through the policy of its
``with_hooks``, every other call passes untouched. A call's before and after hooks share
CrewAI's ``tool_input`` dict, which keys what the before hook decided.

================================  ===========================================================
before the tool                   the policy's ``pre``: a refusal raises CrewAI's
                                  ``HookAborted`` (the tool's body never runs), and so does
                                  any error or timeout of the policy (fail closed: CrewAI's
                                  dispatcher would run the tool); a new input is written
                                  into ``tool_input``, in place, as CrewAI asks
after a refused call              the agent reads ``Tool call denied: {reason}``
after an answered call            (``Replace(GiveOutput(v))``) the agent reads ``v``
after a call that failed          (CrewAI's ``Error executing tool: ...``) the policy's
                                  ``attempts`` (``orchestra.bridge.AttemptDriver``): a
                                  ``Retry`` runs the tool again, with the same input; a
                                  ``Skip`` is ``Tool call skipped: {reason}``
after the tool                    ``PostToolUse`` and ``after_execute``: a rewrite is what
                                  the agent reads
================================  ===========================================================
"""

from __future__ import annotations

import functools
import threading
import uuid
import weakref
from collections.abc import Mapping
from typing import Any, Final, final

from crewai.hooks import (
    HookAborted,
    ToolCallHookContext,
    register_after_tool_call_hook,
    register_before_tool_call_hook,
)
from opentelemetry import trace

import orchestra.tracing as ot
from orchestra.bridge import DoFail, DoSkip
from orchestra_crewai._blocking import call_blocking
from orchestra_crewai._policy import DELEGATIONS, Policy

__all__ = ["DENIED", "guard"]

DENIED: Final = "Tool call denied: "
"""What the agent reads before the reason of a refused call."""
_FAILED: Final = "Error executing tool: "
"""How CrewAI tells the agent its tool raised (native tool calls)."""
_GAVE_UP: Final = "I encountered an error while trying to use the tool. This was the error: "
"""How CrewAI's text tool calls (ReAct) tell it, once CrewAI's own retries ran out."""

_lock = threading.Lock()
_installed = False
_guarded: dict[int, tuple[weakref.ref[Any], Policy]] = {}
_calls: dict[int, _Call] = {}


@final
class _Call:
    """One guarded call between CrewAI's before and after hooks."""

    __slots__ = ("given", "payload", "policy", "refusal", "span")

    def __init__(self, policy: Policy, payload: dict[str, Any], span: trace.Span | None) -> None:
        self.policy = policy
        self.payload = payload
        self.span = span
        self.refusal: str | None = None
        self.given: str | None = None
        """What the agent reads instead of a tool a hook answered for (``GiveOutput``)."""


def guard(target: Any, policy: Policy) -> None:
    """Put ``target`` (an agent or a crew) under ``policy``; a later call replaces it."""
    global _installed
    with _lock:
        if not _installed:
            register_before_tool_call_hook(_before)
            register_after_tool_call_hook(_after)
            _installed = True
        key = id(target)
        _guarded[key] = (weakref.ref(target, lambda _: _guarded.pop(key, None)), policy)


def _policy_of(ctx: ToolCallHookContext) -> Policy | None:
    """The policy of the call's agent, else of its crew; None when neither is guarded."""
    for owner in (ctx.agent, ctx.crew):
        if owner is None:
            continue
        found = _guarded.get(id(owner))
        if found is not None and found[0]() is owner:
            return found[1]
    return None


def _before(ctx: ToolCallHookContext) -> None:
    policy = _policy_of(ctx)
    if policy is None or not policy.watching:
        return None
    payload: dict[str, Any] = {
        "tool_name": ctx.tool_name,
        "tool_input": dict(ctx.tool_input),
        "tool_use_id": f"crewai_{uuid.uuid4().hex}",
    }
    role = getattr(ctx.agent, "role", None)
    if role is not None:
        payload["agent_name"] = str(role)
    call = _Call(policy, payload, _start_span(ctx.tool_name, payload["tool_use_id"]))
    _calls[id(ctx.tool_input)] = call
    try:
        verdict = call_blocking(policy.timeout, call.span, policy.pre, payload)
    except Exception as error:  # fail closed: a guard that cannot answer refuses
        _record(call.span, error)
        call.refusal = f"orchestra's PreToolUse hooks failed ({type(error).__name__}: {error})"
    else:
        call.refusal = verdict.refusal
        if verdict.given is not None:
            value = verdict.given.value
            call.given = value if isinstance(value, str) else str(value)
        if verdict.tool_input is not None:
            ctx.tool_input.clear()  # in place: CrewAI runs the tool with this dict
            ctx.tool_input.update(verdict.tool_input)
            payload["tool_input"] = dict(verdict.tool_input)
    _mark(call.span, call.refusal)
    if call.refusal is not None:
        raise HookAborted(reason=call.refusal)
    if call.given is not None:
        raise HookAborted(reason="answered by a hook")  # the tool must not run
    return None


def _after(ctx: ToolCallHookContext) -> str | None:
    call = _calls.pop(id(ctx.tool_input), None)
    if call is None:
        return None
    try:
        if call.refusal is not None:
            return DENIED + call.refusal
        if call.given is not None:
            return call.given
        return _settle(ctx, call)
    finally:
        if call.span is not None:
            call.span.end()


def _settle(ctx: ToolCallHookContext, call: _Call) -> str | None:
    """The call's outcome (its retries run by the driver): what the agent reads instead, or None."""
    policy, payload, span = call.policy, call.payload, call.span
    result = ctx.tool_result
    error = _failure(result)
    try:
        if payload["tool_name"] in DELEGATIONS:  # a dispatch: no tool-call TaskHooks
            if error is not None:
                call_blocking(policy.timeout, span, policy.failed, payload, error)
                return None
            output = call_blocking(policy.timeout, span, policy.post, payload, result)
            return None if output is None else str(output)
        rerun = functools.partial(_run_again, ctx)
        end, attempts = call_blocking(None, span, policy.attempts, payload, result, error, rerun)
    except Exception as failure:  # the result stands: a PostToolUse hook cannot run the tool
        _record(span, failure)
        return None
    if isinstance(end, DoSkip):
        why = getattr(end.decision, "reason", None) or "skipped by a hook"
        return f"Tool call skipped: {why}"
    if isinstance(end, DoFail):  # CrewAI's report stands, or the last failure's
        return None if attempts == 1 else f"{_FAILED}{end.error}"
    return None if end.output is result else str(end.output)


def _failure(result: object) -> str | None:
    """The error CrewAI reported instead of the tool's result, or None."""
    if not isinstance(result, str):
        return None
    if result.startswith(_FAILED):
        return result.removeprefix(_FAILED)
    _, found, error = result.partition(_GAVE_UP)
    return error.split(".\n", 1)[0] if found else None


def _run_again(ctx: ToolCallHookContext, tool_input: Mapping[str, Any]) -> str:
    """The tool once more, with ``tool_input`` (as the hooks left it); raises its failure."""
    raw = ctx.tool.invoke(dict(tool_input))
    return raw if isinstance(raw, str) else str(raw)


def _start_span(tool: str, call_id: str) -> trace.Span | None:
    tracer = ot.get_tracer()
    if tracer is None:
        return None
    attributes: Mapping[str, Any] = {
        ot.names.GEN_AI_OPERATION_NAME: ot.names.OP_EXECUTE_TOOL,
        ot.names.GEN_AI_TOOL_NAME: tool,
        ot.names.GEN_AI_TOOL_CALL_ID: call_id,
    }
    return tracer.start_span(ot.names.SPAN_EXECUTE_TOOL.format(tool=tool), attributes=attributes)


def _mark(span: trace.Span | None, refusal: str | None) -> None:
    if span is None or not span.is_recording():
        return
    span.set_attribute(ot.names.ATTR_TOOL_DECISION, "deny" if refusal is not None else "allow")
    if refusal is not None:
        span.set_attribute(ot.names.ATTR_DECISION_REASON, refusal[:256])


def _record(span: trace.Span | None, error: BaseException) -> None:
    if span is not None:
        ot.record_error(span, error)
