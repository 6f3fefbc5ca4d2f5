"""Span helpers the engines share: decisions, errors, hooks, agents and tools (internal).

Engines call ``get_tracer()`` once per run, dispatch or hook chain, and only call these
helpers when it returned a tracer; with tracing off none of this code runs.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Final, Protocol

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from orchestra.tracing import names as n
from orchestra.tracing._state import capture_content, get_instruments

__all__ = [
    "agent_span",
    "decision_kind",
    "hook_span",
    "record_decision",
    "record_error",
    "record_hook_error",
    "set_agent_output",
    "set_tool_result",
    "tool_span",
]


_REASON_CHARS: Final = 256  # a decision's reason on a span (payload stays off spans)


def decision_kind(decision: object) -> str:
    """``retry``, ``skip``, ``fail``, ``delegate`` for decision objects; strings as given."""
    if isinstance(decision, str):
        return decision
    return type(decision).__name__.lower()


def record_decision(
    span: Span,
    decision: object,
    by: str | None,
    *,
    attempt: int | None = None,
    reason: str | None = None,
) -> None:
    """Record a decision on ``span``: ``orchestra.decision*`` attributes and an event.

    What orchestra's engines put on a task attempt, dispatch or tool span when a hook
    decides; an integration's own spans take it the same way (and the decisions metric
    counts it). The reason is cut to 256 characters.

    Args:
        span: the span of the work decided about (a task attempt, a dispatch, a tool).
        decision: a ``Retry``/``Skip``/``Fail``/``Delegate`` or a kind string (``deny``...).
        by: who took it (a hook's name, ``task.retries``, ``orchestra``).
        attempt: the attempt it was taken for.
        reason: the reason, when ``decision`` does not carry one.
    """
    kind = decision_kind(decision)
    attributes: dict[str, Any] = {n.ATTR_DECISION: kind}
    if by:
        attributes[n.ATTR_DECISION_BY] = by
    if reason is None:
        reason = getattr(decision, "reason", None)
    if reason:
        attributes[n.ATTR_DECISION_REASON] = str(reason)[:_REASON_CHARS]
    delay = getattr(decision, "delay", None)
    if delay is not None:
        attributes[n.ATTR_DECISION_DELAY] = float(delay)
    agent = getattr(decision, "agent", None)
    if agent is not None:
        attributes[n.ATTR_DECISION_AGENT] = str(agent)
    span.set_attributes(attributes)
    if attempt is not None:
        attributes[n.ATTR_DECISION_ATTEMPT] = attempt
    span.add_event(n.EVENT_DECISION, attributes)
    instruments = get_instruments()
    if instruments is not None:
        instruments.decisions.add(1, {n.ATTR_DECISION: kind})


def record_error(span: Span, error: BaseException, *, escaped: bool = False) -> None:
    """Record ``error`` on ``span`` (an ``exception`` event), ``error.type``, status ERROR.

    As orchestra's engines record a failed attempt, dispatch or run; ``escaped``: the
    error leaves the span's scope (OpenTelemetry's ``exception.escaped``).
    """
    span.record_exception(error, escaped=escaped)
    span.set_attribute(n.ATTR_ERROR_TYPE, type(error).__qualname__)
    span.set_status(Status(StatusCode.ERROR, f"{type(error).__name__}: {error}"))


def record_hook_error(span: Span, error: BaseException, hook: str) -> None:
    """Record a hook error that was isolated (it counted as no opinion) as an event."""
    span.add_event(
        n.EVENT_HOOK_ERROR,
        {
            n.ATTR_HOOK_NAME: hook,
            n.ATTR_ERROR_TYPE: type(error).__qualname__,
            "exception.message": str(error),
        },
    )


@contextmanager
def hook_span(
    tracer: trace.Tracer,
    event: str,
    *,
    hook_type: str,
    name: str,
    source: str | None = None,
    subject: str | None = None,
    matcher: str | None = None,
) -> Iterator[Span]:
    """A ``hook {event}`` span around one hook call, current while it runs.

    The caller sets ``orchestra.hook.decision``-like outcome attributes on the span it
    gets (``record_decision``), and records errors (``record_error``); an exception that
    escapes is recorded here. The call's duration goes to the ``orchestra.hook.duration``
    histogram.
    """
    attributes: dict[str, Any] = {
        n.ATTR_HOOK_EVENT: event,
        n.ATTR_HOOK_TYPE: hook_type,
        n.ATTR_HOOK_NAME: name,
    }
    if source:
        attributes[n.ATTR_HOOK_SOURCE] = source
    if subject is not None:
        attributes[n.ATTR_HOOK_SUBJECT] = subject
    if matcher is not None:
        attributes[n.ATTR_HOOK_MATCHER] = matcher
    instruments = get_instruments()
    started = time.perf_counter()
    span = tracer.start_span(n.SPAN_HOOK.format(event=event), attributes=attributes)
    try:
        with trace.use_span(span, record_exception=False, set_status_on_exception=False):
            yield span
    except BaseException as exc:
        record_error(span, exc, escaped=True)
        raise
    finally:
        span.end()
        if instruments is not None:
            instruments.hook_duration.record(
                time.perf_counter() - started,
                {n.ATTR_HOOK_EVENT: event, n.ATTR_HOOK_TYPE: hook_type},
            )


@contextmanager
def _current_span(tracer: trace.Tracer, name: str, attributes: dict[str, Any]) -> Iterator[Span]:
    """A span current while the block runs; an exception that escapes is recorded."""
    with tracer.start_as_current_span(
        name,
        kind=SpanKind.INTERNAL,
        attributes=attributes,
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        try:
            yield span
        except BaseException as exc:
            record_error(span, exc, escaped=True)
            raise


def _messages(role: str, text: str) -> str:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}])


@contextmanager
def agent_span(
    tracer: trace.Tracer,
    agent: str,
    *,
    task: str,
    mode: str,
    parent: str | None,
    attempt: int,
    delegated_from: Sequence[str] = (),
) -> Iterator[Span]:
    """An ``invoke_agent {agent}`` span (GenAI conventions) around one dispatch attempt.

    The dispatched text goes on the span (``gen_ai.input.messages``) only when content
    capture is on. An exception that escapes is recorded with status ERROR.
    """
    attributes: dict[str, Any] = {
        n.GEN_AI_OPERATION_NAME: n.OP_INVOKE_AGENT,
        n.GEN_AI_AGENT_NAME: agent,
        n.ATTR_AGENT_MODE: mode,
        n.ATTR_AGENT_ATTEMPT: attempt,
    }
    if parent is not None:
        attributes[n.ATTR_AGENT_PARENT] = parent
    if delegated_from:
        attributes[n.ATTR_AGENT_DELEGATED_FROM] = list(delegated_from)
    if capture_content():
        attributes[n.GEN_AI_INPUT_MESSAGES] = _messages("user", task)
    with _current_span(tracer, n.SPAN_INVOKE_AGENT.format(agent=agent), attributes) as span:
        yield span


def set_agent_output(span: Span, output: Any) -> None:
    """Put an agent's output on its span, only when content capture is on."""
    if capture_content():
        span.set_attribute(n.GEN_AI_OUTPUT_MESSAGES, _messages("assistant", str(output)))


def _json(value: Any) -> str:
    try:
        return json.dumps(value, default=repr)
    except (TypeError, ValueError):
        return repr(value)


@contextmanager
def tool_span(
    tracer: trace.Tracer, tool: str, *, arguments: Mapping[str, Any] | None = None
) -> Iterator[Span]:
    """An ``execute_tool {tool}`` span (GenAI conventions) around one guarded tool call.

    The call's arguments go on the span only when content capture is on; set the
    result with ``set_tool_result``. An exception that escapes is recorded.
    """
    attributes: dict[str, Any] = {
        n.GEN_AI_OPERATION_NAME: n.OP_EXECUTE_TOOL,
        n.GEN_AI_TOOL_NAME: tool,
    }
    if arguments is not None and capture_content():
        attributes[n.GEN_AI_TOOL_CALL_ARGUMENTS] = _json(dict(arguments))
    with _current_span(tracer, n.SPAN_EXECUTE_TOOL.format(tool=tool), attributes) as span:
        yield span


def set_tool_result(span: Span, result: Any) -> None:
    """Put a tool's result on its span, only when content capture is on."""
    if capture_content():
        span.set_attribute(n.GEN_AI_TOOL_CALL_RESULT, _json(result))


class _BudgetUse(Protocol):
    """What a span needs of an ``orchestra._spending.BudgetUse``."""

    @property
    def would_exceed(self) -> tuple[str, ...]: ...

    @property
    def exceeded(self) -> str | None: ...

    def attributes(self) -> dict[str, float]: ...


def set_budget_use(span: Span, uses: Sequence[_BudgetUse]) -> None:
    """Put a run's budget figures on its span: used and limit per kind, what it refused."""
    for use in uses:
        span.set_attributes(use.attributes())
        if use.exceeded is not None:
            span.set_attribute(n.ATTR_BUDGET_EXCEEDED, use.exceeded)
        for reason in use.would_exceed:
            span.add_event(n.EVENT_BUDGET_WOULD_EXCEED, {n.ATTR_DECISION_REASON: reason})
