"""The tool-call protocol, written once and without I/O (as httpx's ``Auth.auth_flow``).

Each step of a call is a generator: it yields an effect (``Fire`` an event, ``Consult``
the ``ask`` callback), is sent the effect's result, and returns the step's answer. The
drivers in ``_tool_hooks`` perform the effects (``await`` or blocking) and nothing else,
so every engine gets the same payloads, texts and answers:

- ``pre_flow``: ``PreToolUse``; a deny or block is ``Refuse`` (``PermissionDenied``
  fires, its ``retry`` kept); an ``ask`` is settled by an earlier approval
  (``ToolCall.approved``), then by the ``ask`` callback (True: go on, False: ``Refuse``,
  None: no answer); unanswered, it is ``Ask`` where the engine can pause, else
  ``Refuse``; a mock is ``Mock``; else ``Proceed`` with the (rewritten) input.
- ``post_flow``: ``PostToolUse`` on what the tool (or a mock: ``mocked: true``)
  returned; a hook's ``output`` is what the caller gets.
- ``failed_flow``: ``PostToolUseFailure`` with ``error``/``error_type``; ``Raise``. A
  ``ToolDenied`` from a guarded tool inside the tool is no failure: it is ``Refuse``
  with that guard's reason and ``retry``.

``mark_decision`` puts the answer on the call's span (``orchestra.tool.decision``: allow,
deny, ask); ``ToolHooks.pre`` does it on the current span.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from typing import TYPE_CHECKING, Any, TypeAlias, final

import attrs
from opentelemetry import trace

from orchestra._errors import ToolDenied
from orchestra._tool_call import (
    Ask,
    FailedAnswer,
    Mock,
    PreAnswer,
    Proceed,
    Raise,
    Refuse,
    ToolCall,
    args_sha256,
)
from orchestra.tracing.names import ATTR_TOOL_DECISION

if TYPE_CHECKING:
    from opentelemetry.trace import Span

    from orchestra.skills import HookOutcome

__all__ = [
    "Consult",
    "Effect",
    "Fire",
    "Flow",
    "ask_reason",
    "blocked_reason",
    "deny_reason",
    "error_fields",
    "failed_flow",
    "mark_decision",
    "post_flow",
    "post_tool_use_payload",
    "pre_flow",
    "refuse_flow",
]


@final
@attrs.frozen
class Fire:
    """Fire ``event`` with ``payload``; the flow is sent the ``HookOutcome``."""

    event: str
    payload: Mapping[str, Any]


@final
@attrs.frozen
class Consult:
    """Ask the ``ask`` callback about a call; the flow is sent True, False or None."""

    tool_name: str
    tool_input: Mapping[str, Any]
    reason: str | None


Effect: TypeAlias = Fire | Consult
Flow: TypeAlias = Generator[Effect, Any, Any]


def blocked_reason(event: str, outcome: HookOutcome) -> str:
    """Why a lifecycle event's hooks blocked (a run, task or agent): their reason, else which."""
    return outcome.reason or f"blocked by a {event} hook at {outcome.decided_by}"


def deny_reason(event: str, outcome: HookOutcome) -> str:
    """Why an event's hooks refused: their reason, else which hook denied."""
    return outcome.reason or f"denied by a {event} hook at {outcome.decided_by}"


def ask_reason(outcome: HookOutcome) -> str:
    """Why a hook asks for a person: its reason, else which hook asked."""
    return outcome.reason or f"needs approval ({outcome.decided_by})"


def error_fields(error: BaseException | None) -> dict[str, Any]:
    """The ``error`` and ``error_type`` fields of an event, for ``error`` (or None)."""
    if error is None:
        return {"error": None, "error_type": None}
    return {"error": str(error) or type(error).__name__, "error_type": type(error).__qualname__}


def post_tool_use_payload(
    fields: Mapping[str, Any], tool_response: Any, *, mocked: bool = False
) -> dict[str, Any]:
    """The ``PostToolUse`` payload of a tool call that answered.

    After a ``PreToolUse`` mock (the tool was not called) ``PostToolUse`` still fires,
    with the mock as ``tool_response`` and ``mocked: true``; the field is there only then.

    Examples:
        >>> fields = {"tool_name": "Search", "tool_input": {"q": "x"}}
        >>> post_tool_use_payload(fields, "cached", mocked=True)["mocked"]
        True

    Args:
        fields: the call's fields (``ToolCall.payload()``); left unchanged.
        tool_response: what the tool returned, or the mock.
        mocked: the response is a ``PreToolUse`` mock.

    Returns:
        A new dict: ``fields`` with ``tool_response`` (and ``mocked: True``).
    """
    payload = {**fields, "tool_response": tool_response}
    if mocked:
        payload["mocked"] = True
    return payload


def mark_decision(answer: PreAnswer, span: Span | None = None) -> None:
    """Put ``orchestra.tool.decision`` (allow, deny, ask) on the call's span.

    ``ToolHooks.pre`` does it on the current span; a bridge that took the answer before
    the call's span existed (an approval check) marks that span with it later.
    """
    target = trace.get_current_span() if span is None else span
    if target.is_recording():
        verdict = (
            "deny" if isinstance(answer, Refuse) else "ask" if isinstance(answer, Ask) else "allow"
        )
        target.set_attribute(ATTR_TOOL_DECISION, verdict)


def _hook_id(outcome: HookOutcome) -> str | None:
    """The id of the hook that decided (its ``id:``, position or source)."""
    for record in outcome.records:
        if record.hook.source == outcome.decided_by:
            return record.hook.hook_id
    return outcome.decided_by


def refuse_flow(
    call: ToolCall, reason: str, *, denied_hooks: bool
) -> Generator[Effect, Any, Refuse]:
    """A refusal of ``call``: ``PermissionDenied`` fires (its ``retry`` kept), ``Refuse``.

    ``pre_flow`` refuses through it; so does a bridge that refuses a call for a reason
    of its own (a rewrite it cannot carry out, a target agent's hooks).
    """
    retry = False
    if denied_hooks:
        denied = yield Fire("PermissionDenied", {**call.payload(), "reason": reason})
        retry = bool(denied.retry)
    return Refuse(reason, retry=retry)


def pre_flow(
    call: ToolCall, *, denied_hooks: bool, consult: bool, can_pause: bool
) -> Generator[Effect, Any, PreAnswer]:
    """``PreToolUse`` for ``call``: what the engine does next (see the module docstring).

    Args:
        call: the call as the engine is about to make it.
        denied_hooks: ``PermissionDenied`` has hooks (fired on a refusal).
        consult: an ``ask`` callback is there to settle an ``ask``.
        can_pause: the engine can pause the call for a person (``Ask``).
    """
    outcome: HookOutcome = yield Fire("PreToolUse", call.payload())
    if outcome.blocked:
        return (
            yield from refuse_flow(
                call, deny_reason("PreToolUse", outcome), denied_hooks=denied_hooks
            )
        )
    modified = outcome.modified_input
    tool_input = call.tool_input if modified is None else dict(modified)
    if outcome.decision == "ask" and not call.approved:
        answer: bool | None = None
        if consult:
            answer = yield Consult(call.tool_name, tool_input, outcome.reason)
        if answer is None and can_pause:
            return Ask(ask_reason(outcome), _hook_id(outcome), tool_input, args_sha256(tool_input))
        if not answer:
            return (yield from refuse_flow(call, ask_reason(outcome), denied_hooks=denied_hooks))
    if outcome.output is not None:
        return Mock(outcome.output)
    return Proceed(tool_input, modified=modified is not None)


def post_flow(call: ToolCall, output: Any, *, mocked: bool = False) -> Generator[Effect, Any, Any]:
    """``PostToolUse`` on ``output``: what the caller gets (a hook's rewrite, else it)."""
    payload = post_tool_use_payload(call.payload(), output, mocked=mocked)
    outcome: HookOutcome = yield Fire("PostToolUse", payload)
    return output if outcome.output is None else outcome.output


def failed_flow(
    call: ToolCall,
    error: BaseException,
    *,
    failure_hooks: bool,
    detail: Mapping[str, Any] | None = None,
) -> Generator[Effect, Any, FailedAnswer]:
    """``PostToolUseFailure`` for a tool that raised ``error``: ``Raise`` or ``Refuse``.

    ``detail`` replaces the ``error``/``error_type`` fields where the engine reports a
    failure another way (an error message instead of an exception).
    """
    if isinstance(error, ToolDenied):  # a guard inside the tool said no: a refusal
        return Refuse(error.reason or str(error), retry=error.retry)
    if failure_hooks:
        fields = error_fields(error) if detail is None else dict(detail)
        yield Fire("PostToolUseFailure", {**call.payload(), **fields})
    return Raise(error)
