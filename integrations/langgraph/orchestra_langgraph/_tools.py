"""A prebuilt ``ToolNode``'s tool calls through the tool events (internal).

``with_hooks`` gives every ``ToolNode`` of the graph (given a registry with tool hooks,
or budgets) a copy of itself with ``wrap_tool_call``/``awrap_tool_call``,
LangGraph's own interceptors, around each call, driven by ``orchestra.bridge.ToolHooks``
(the one tool-call protocol; this module only maps its answers onto LangGraph's
messages):

- ``PreToolUse`` with ``tool_name``, ``tool_input`` (the model's arguments) and
  ``tool_use_id``: a deny or a block becomes the error ``ToolMessage`` the model reads
  (the reason as its content; ``PermissionDenied`` fires); an ``ask`` is LangGraph's
  ``interrupt()`` with the pending request (``orchestra.bridge.Ask.request``) when the
  graph has a checkpointer: resume with ``Command(resume={"decision": "approve"})``
  (``deny`` with a ``reason``, ``edit`` with a ``tool_input`` judged again); without a
  checkpointer it is refused as a deny is;
  a ``modified_input`` is what the tool gets; a mock ``output`` answers without the tool
  (the first mock in config order), and ``PostToolUse`` still fires, with ``mocked: true``.
- ``PostToolUse`` with ``tool_response`` (the message's content): an ``output`` rewrite is
  the content the model reads. ``PostToolUseFailure`` with ``error``/``error_type`` when
  the tool raised (the error then goes on as the ``ToolNode`` handles it) or answered an
  error message; a ``ToolDenied`` of a ``@registry.guard`` tool inside is a refusal (the
  error ``ToolMessage`` with its reason), not a failure.

While the tool runs, the registry is the ambient policy (``orchestra.bridge.policy_scope``):
an agent or graph the tool starts through a bridge without its own registry follows it.

Each call is an ``execute_tool {name}`` span under the node's attempt span.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, final

from langchain_core.messages import ToolMessage
from langgraph.config import get_config
from langgraph.errors import GraphBubbleUp
from langgraph.prebuilt import ToolNode
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command, interrupt

from orchestra.bridge import (
    Ask,
    FailedAnswer,
    Mock,
    PreAnswer,
    Proceed,
    Refuse,
    ToolCall,
    ToolHooks,
    policy_scope,
    resume,
    tool_span,
)
from orchestra_langgraph._tree import judged, untraced

if TYPE_CHECKING:
    from orchestra.skills import HookRegistry

__all__ = ["ToolEvents", "guarded_tool_node"]

_Result = ToolMessage | Command[Any]
_CHECKPOINTER: Final = "__pregel_checkpointer"
"""The key of the run's checkpointer in its ``configurable`` (LangGraph has no reader)."""


@final
class ToolEvents:
    """A registry's tool events around one ``ToolNode`` call: ``orchestra.bridge.ToolHooks``."""

    __slots__ = ("hooks", "registry")

    def __init__(self, registry: HookRegistry | None) -> None:
        self.registry = registry
        self.hooks = ToolHooks(registry)

    @property
    def watching(self) -> bool:
        """Whether any tool event has hooks (else a ``ToolNode`` is left as it is)."""
        return self.hooks.watching

    def wrap(
        self, request: ToolCallRequest, execute: Callable[[ToolCallRequest], _Result]
    ) -> _Result:
        """``wrap_tool_call``: one call under ``invoke``/``stream`` (a worker thread)."""
        if self.hooks.charges_only and untraced():  # budgets alone, no span: only the charge
            return self._charged(request, execute)
        hooks, call = self.hooks, _call(request.tool_call)
        with tool_span(call.tool_name, call_id=call.tool_use_id), policy_scope(self.registry):
            answer = hooks.pre_sync(call, can_pause=hooks.has_pre and _can_pause())
            while isinstance(answer, Ask):  # interrupt(): the graph pauses, resumes here
                approval = resume(pending := answer.request(call), interrupt(pending))
                answer = hooks.resume_sync(call, approval, can_pause=True)
            if isinstance(answer, Refuse):
                return _message(request.tool_call, answer.reason, error=True)
            if isinstance(answer, Mock):  # the tool is not called, PostToolUse fires
                output = hooks.post_sync(call, answer.output, mocked=True)
                return _message(request.tool_call, output)
            request, call = _proceed(request, call, answer)
            try:
                with judged(call.tool_name):  # judged here: not again by the run's TreeGuard
                    result = execute(request)
            except GraphBubbleUp:
                raise
            except Exception as exc:
                return _refused(hooks.failed_sync(call, exc), request)
            if not isinstance(result, ToolMessage):
                return result  # a Command: the tool steers the graph, nothing to judge
            failure = _failure(result)
            if failure is not None:
                hooks.failed_sync(call, failure, detail=_detail(failure))
                return result
            return _rewritten(result, hooks.post_sync(call, _response(result)))

    async def awrap(
        self, request: ToolCallRequest, execute: Callable[[ToolCallRequest], Awaitable[_Result]]
    ) -> _Result:
        """``awrap_tool_call``: one call under ``ainvoke``/``astream``."""
        if self.hooks.charges_only and untraced():
            return await self._acharged(request, execute)
        hooks, call = self.hooks, _call(request.tool_call)
        with tool_span(call.tool_name, call_id=call.tool_use_id), policy_scope(self.registry):
            answer = await hooks.pre(call, can_pause=hooks.has_pre and _can_pause())
            while isinstance(answer, Ask):
                approval = resume(pending := answer.request(call), interrupt(pending))
                answer = await hooks.resume(call, approval, can_pause=True)
            if isinstance(answer, Refuse):
                return _message(request.tool_call, answer.reason, error=True)
            if isinstance(answer, Mock):
                output = await hooks.post(call, answer.output, mocked=True)
                return _message(request.tool_call, output)
            request, call = _proceed(request, call, answer)
            try:
                with judged(call.tool_name):  # judged here: not again by the run's TreeGuard
                    result = await execute(request)
            except GraphBubbleUp:
                raise
            except Exception as exc:
                return _refused(await hooks.failed(call, exc), request)
            if not isinstance(result, ToolMessage):
                return result  # a Command: the tool steers the graph, nothing to judge
            failure = _failure(result)
            if failure is not None:
                await hooks.failed(call, failure, detail=_detail(failure))
                return result
            return _rewritten(result, await hooks.post(call, _response(result)))

    def _charged(
        self, request: ToolCallRequest, execute: Callable[[ToolCallRequest], _Result]
    ) -> _Result:
        """A call nothing but budgets judges: charged, or answered the budget's refusal."""
        name = request.tool_call["name"]
        refusal = self.hooks.charge(name)
        if refusal is not None:
            return _message(request.tool_call, refusal, error=True)
        try:
            with judged(name):  # judged here: not again by the run's TreeGuard
                return execute(request)
        finally:
            self.hooks.ran()

    async def _acharged(
        self, request: ToolCallRequest, execute: Callable[[ToolCallRequest], Awaitable[_Result]]
    ) -> _Result:
        """``_charged`` under ``ainvoke``/``astream``."""
        name = request.tool_call["name"]
        refusal = self.hooks.charge(name)
        if refusal is not None:
            return _message(request.tool_call, refusal, error=True)
        try:
            with judged(name):
                return await execute(request)
        finally:
            self.hooks.ran()


class _ErrorMessage(Exception):
    """A tool's error ``ToolMessage``, as the failure ``PostToolUseFailure`` reports."""


def _can_pause() -> bool:
    """Whether the graph runs with a checkpointer (``interrupt()`` can pause it).

    Only a ``PreToolUse`` hook's ``ask`` pauses a call: without such hooks it is not asked.
    """
    try:
        configurable = get_config().get("configurable") or {}
    except RuntimeError:  # called outside a runnable context
        return False
    return configurable.get(_CHECKPOINTER) is not None


def _call(tool_call: Mapping[str, Any]) -> ToolCall:
    given = tool_call.get("id")
    args = tool_call.get("args") or {}  # ToolCall keeps a copy
    if given:
        return ToolCall(tool_call["name"], args, tool_use_id=given)
    return ToolCall(tool_call["name"], args)


def _proceed(
    request: ToolCallRequest, call: ToolCall, answer: PreAnswer
) -> tuple[ToolCallRequest, ToolCall]:
    """The request and call as the tool gets them (a hook's rewrite applied)."""
    assert isinstance(answer, Proceed)
    if not answer.modified:
        return request, call
    args = dict(answer.tool_input)
    request = request.override(tool_call={**request.tool_call, "args": args})
    return request, call.with_input(args)


def _refused(failure: FailedAnswer, request: ToolCallRequest) -> ToolMessage:
    """A guard inside the tool refused: the model reads why; any other error goes on."""
    if isinstance(failure, Refuse):
        return _message(request.tool_call, failure.reason, error=True)
    raise failure.error


def _failure(result: ToolMessage) -> _ErrorMessage | None:
    """The failure an error ``ToolMessage`` reports (the ``ToolNode`` caught the error)."""
    if result.status == "error":
        return _ErrorMessage(str(result.content))
    return None


def _detail(failure: _ErrorMessage) -> dict[str, Any]:
    return {"error": str(failure), "error_type": "ToolMessage"}


def _response(result: ToolMessage) -> Any:
    """What ``PostToolUse`` judges: the message's content."""
    return result.content


def _rewritten(result: ToolMessage, output: Any) -> ToolMessage:
    """The result with a ``PostToolUse`` rewrite as the content the model reads."""
    if output is result.content:
        return result
    return result.model_copy(update={"content": _content(output)})


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


def _content(value: Any) -> Any:
    return value if isinstance(value, str | list) else str(value)


def _message(call: Mapping[str, Any], content: Any, *, error: bool = False) -> ToolMessage:
    return ToolMessage(
        content=_content(content),
        name=call["name"],
        tool_call_id=call.get("id") or "",
        status="error" if error else "success",
    )
