"""A prebuilt ``ToolNode``'s tool calls through the tool events (internal).

``with_hooks`` gives every ``ToolNode`` of the graph (given a registry with tool hooks)
a copy of itself with ``wrap_tool_call``/``awrap_tool_call``, LangGraph's own
interceptors, around each call:

- ``PreToolUse`` with ``tool_name``, ``tool_input`` (the model's arguments) and
  ``tool_use_id``: a deny, a block or an unanswered ``ask`` becomes the error
  ``ToolMessage`` the model reads (the reason as its content; ``PermissionDenied`` fires);
  a ``modified_input`` is what the tool gets; a mock ``output`` answers without the tool
  (the first mock in config order), and ``PostToolUse`` still fires, with ``mocked: true``.
- ``PostToolUse`` with ``tool_response`` (the message's content): an ``output`` rewrite is
  the content the model reads. ``PostToolUseFailure`` with ``error``/``error_type`` when
  the tool raised (the error then goes on as the ``ToolNode`` handles it) or answered an
  error message.

Each call is an ``execute_tool {name}`` span under the node's attempt span.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, final

from langchain_core.messages import ToolMessage
from langgraph.errors import GraphBubbleUp
from langgraph.prebuilt import ToolNode
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command
from opentelemetry import trace

import orchestra.tracing as ot
from orchestra.skills import post_tool_use_payload
from orchestra_langgraph._sync import blocking

if TYPE_CHECKING:
    from orchestra.skills import HookRegistry

__all__ = ["ToolEvents", "guarded_tool_node"]

_Result = ToolMessage | Command[Any]
_EVENTS: Final = ("PreToolUse", "PostToolUse", "PostToolUseFailure")


@final
class ToolEvents:
    """The tool events of one registry, fired around one call at a time."""

    __slots__ = ("has", "registry")

    def __init__(self, registry: HookRegistry) -> None:
        self.registry = registry
        self.has = {e: registry.has_hooks(e) for e in (*_EVENTS, "PermissionDenied")}

    @property
    def watching(self) -> bool:
        """Whether any tool event has hooks (else a ``ToolNode`` is left as it is)."""
        return any(self.has[e] for e in _EVENTS)

    async def pre(self, request: ToolCallRequest) -> tuple[ToolCallRequest, _Result | None]:
        """``PreToolUse``: the request as the tool gets it, or the answer without the tool."""
        call = request.tool_call
        if not self.has["PreToolUse"]:
            return request, None
        fields = _fields(call)
        outcome = await self.registry.fire("PreToolUse", fields)
        refusal: str | None = None
        if outcome.blocked:
            refusal = outcome.reason or f"denied by a PreToolUse hook at {outcome.decided_by}"
        elif outcome.decision == "ask":  # a ToolNode has nobody to ask: refused, with why
            refusal = f"needs approval: {outcome.reason or outcome.decided_by}"
        if refusal is not None:
            _mark("deny")
            if self.has["PermissionDenied"]:
                await self.registry.fire("PermissionDenied", {**fields, "reason": refusal})
            return request, _message(call, refusal, error=True)
        _mark("allow")
        if outcome.output is not None:  # a mock: the tool is not called, PostToolUse fires
            return request, await self.post(request, _message(call, outcome.output), mocked=True)
        if outcome.modified_input is not None:
            request = request.override(tool_call={**call, "args": dict(outcome.modified_input)})
        return request, None

    async def post(
        self, request: ToolCallRequest, result: _Result, *, mocked: bool = False
    ) -> _Result:
        """``PostToolUse`` (or ``PostToolUseFailure`` for an error message) on a result."""
        if not isinstance(result, ToolMessage):
            return result  # a Command: the tool steers the graph, nothing to judge
        fields = _fields(request.tool_call)
        if result.status == "error":
            if self.has["PostToolUseFailure"]:
                error = {"error": str(result.content), "error_type": "ToolMessage"}
                await self.registry.fire("PostToolUseFailure", {**fields, **error})
            return result
        if not self.has["PostToolUse"]:
            return result
        payload = post_tool_use_payload(fields, result.content, mocked=mocked)
        outcome = await self.registry.fire("PostToolUse", payload)
        if outcome.output is not None:  # a rewrite of what the model reads
            return result.model_copy(update={"content": _content(outcome.output)})
        return result

    async def failed(self, request: ToolCallRequest, error: Exception) -> None:
        """``PostToolUseFailure`` for a tool that raised."""
        if self.has["PostToolUseFailure"]:
            fields = _fields(request.tool_call)
            payload = {**fields, "error": str(error) or type(error).__name__}
            payload["error_type"] = type(error).__qualname__
            await self.registry.fire("PostToolUseFailure", payload)

    def wrap(
        self, request: ToolCallRequest, execute: Callable[[ToolCallRequest], _Result]
    ) -> _Result:
        """``wrap_tool_call``: one call under ``invoke``/``stream`` (a worker thread)."""
        with _span(request):
            request, answer = blocking(lambda: self.pre(request))
            if answer is not None:
                return answer
            try:
                result = execute(request)
            except GraphBubbleUp:
                raise
            except Exception as exc:
                error = exc
                blocking(lambda: self.failed(request, error))
                raise
            return blocking(lambda: self.post(request, result))

    async def awrap(
        self, request: ToolCallRequest, execute: Callable[[ToolCallRequest], Awaitable[_Result]]
    ) -> _Result:
        """``awrap_tool_call``: one call under ``ainvoke``/``astream``."""
        with _span(request):
            request, answer = await self.pre(request)
            if answer is not None:
                return answer
            try:
                result = await execute(request)
            except GraphBubbleUp:
                raise
            except Exception as exc:
                await self.failed(request, exc)
                raise
            return await self.post(request, result)


def guarded_tool_node(node: ToolNode, events: ToolEvents) -> ToolNode:
    """A copy of ``node`` whose calls go through the tool events.

    Made with ``ToolNode``'s own constructor; its error handling and messages key are
    read from the node (LangGraph keeps them as ``_handle_tool_errors`` and
    ``_messages_key``, and has no public reader). A node that already has an interceptor
    keeps it, inside the events.
    """
    settings = vars(node)
    inner_sync = settings.get("_wrap_tool_call")
    inner_async = settings.get("_awrap_tool_call")
    if inner_sync is not None or inner_async is not None:
        raise ValueError(
            f"ToolNode {node.name!r} already has a wrap_tool_call interceptor: "
            "with_hooks cannot guard it (pass the node without it, or guard the tools "
            "with @registry.guard)"
        )
    return ToolNode(
        list(node.tools_by_name.values()),
        name=node.name or "tools",
        tags=list(node.tags or ()),
        handle_tool_errors=settings["_handle_tool_errors"],
        messages_key=settings["_messages_key"],
        wrap_tool_call=events.wrap,
        awrap_tool_call=events.awrap,
    )


def _fields(call: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "tool_name": call["name"],
        "tool_input": dict(call.get("args") or {}),
        "tool_use_id": call.get("id") or f"toolu_{uuid.uuid4().hex}",
    }


def _content(value: Any) -> Any:
    return value if isinstance(value, str | list) else str(value)


def _message(call: Mapping[str, Any], content: Any, *, error: bool = False) -> ToolMessage:
    return ToolMessage(
        content=_content(content),
        name=call["name"],
        tool_call_id=call.get("id") or "",
        status="error" if error else "success",
    )


def _mark(verdict: str) -> None:
    span = trace.get_current_span()
    if span.is_recording():
        span.set_attribute(ot.names.ATTR_TOOL_DECISION, verdict)


class _span:  # used as a context manager, like a function
    """The ``execute_tool {name}`` span of one call, current while the call runs."""

    __slots__ = ("_cm", "_name")

    def __init__(self, request: ToolCallRequest) -> None:
        self._name = str(request.tool_call["name"])
        self._cm: Any = None

    def __enter__(self) -> None:
        tracer = ot.get_tracer()
        if tracer is not None:
            self._cm = tracer.start_as_current_span(
                ot.names.SPAN_EXECUTE_TOOL.format(tool=self._name),
                attributes={
                    ot.names.GEN_AI_OPERATION_NAME: ot.names.OP_EXECUTE_TOOL,
                    ot.names.GEN_AI_TOOL_NAME: self._name,
                },
            )
            self._cm.__enter__()

    def __exit__(self, *exc: Any) -> None:
        if self._cm is not None:
            self._cm.__exit__(*exc)
