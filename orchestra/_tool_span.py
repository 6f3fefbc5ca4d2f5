"""``tool_span``: the one ``execute_tool {name}`` span every bridge opens around a call."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from opentelemetry import trace

from orchestra.tracing import get_tracer
from orchestra.tracing._engine import set_tool_result as _set_tool_result
from orchestra.tracing._engine import tool_span as _engine_tool_span
from orchestra.tracing.names import GEN_AI_TOOL_CALL_ID

if TYPE_CHECKING:
    from opentelemetry.trace import Span

__all__ = ["set_tool_result", "tool_span"]


def set_tool_result(span: Span | None, result: Any) -> None:
    """Put a tool's result on its ``tool_span`` (only when content capture is on)."""
    if span is not None:
        _set_tool_result(span, result)


def tool_span(
    tool_name: str,
    *,
    call_id: str | None = None,
    arguments: Mapping[str, Any] | None = None,
    parent: Span | None = None,
) -> contextlib.AbstractContextManager[Span | None]:
    """The ``execute_tool {tool_name}`` span of one call, current while the block runs.

    GenAI conventions: ``gen_ai.operation.name`` ``execute_tool``, ``gen_ai.tool.name``,
    ``gen_ai.tool.call.id``; the arguments only when content capture is on (put the
    result with ``set_tool_result``). The protocol sets ``orchestra.tool.decision`` on
    it. Yields None (and costs one check) when no tracer is configured for orchestra.

    Args:
        tool_name: the tool's name.
        call_id: the call's id, if the engine has one.
        arguments: the call's arguments (kept only with content capture).
        parent: the span to start it under, instead of the current span.
    """
    tracer = get_tracer()
    if tracer is None:
        return contextlib.nullcontext()
    return _traced_tool_span(tracer, tool_name, call_id, arguments, parent)


@contextlib.contextmanager
def _traced_tool_span(
    tracer: trace.Tracer,
    tool_name: str,
    call_id: str | None,
    arguments: Mapping[str, Any] | None,
    parent: Span | None,
) -> Iterator[Span]:
    under = trace.use_span(parent, end_on_exit=False) if parent is not None else None
    with (
        under if under is not None else contextlib.nullcontext(),
        _engine_tool_span(tracer, tool_name, arguments=arguments) as span,
    ):
        if call_id:
            span.set_attribute(GEN_AI_TOOL_CALL_ID, call_id)
        yield span
