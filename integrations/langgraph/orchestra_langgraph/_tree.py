"""Tools called anywhere in a hooked run's tree, judged through the run's callbacks (internal).

A plain ``ToolNode`` or a compiled graph a node function calls (LangGraph's own
subgraph-streaming test), a tool an ``@entrypoint`` body invokes: none of them is a node
of the hooked graph, but LangChain hands the run's config (its callbacks) to every
runnable started inside the run, passed along or read from its context. The bridge adds
``TreeGuard`` to the run's callbacks: LangChain calls its ``on_tool_start`` with the
call's real input (``inputs``, the arguments as the model sent them) and
``tool_call_id`` before the tool's body, and, as its ``raise_error`` says, an error it
raises is the call's:

- ``PreToolUse`` allows: the tool runs;
- it denies (or blocks, or asks: nobody can answer here): ``ToolRefused`` is raised
  before the body, a ``ToolInvocationError`` whose message is the reason, so a
  ``ToolNode`` with its default error handling answers the model an error
  ``ToolMessage`` with the reason and the run goes on (``handle_tool_errors=True``: the
  model reads ``Error: ToolRefused('<reason>')``; ``False``, or a tool invoked by hand:
  the error ends the node, as any error of its tool);
- a ``modified_input`` or a mock ``output`` cannot be carried out from a callback (it
  sees the call, it does not make it): the call is refused with a reason that says so,
  never run with the input the hook did not want.

A call a guarded path already judged (a hooked ``ToolNode``, ``guard_tools``,
``OrchestraMiddleware``) is marked (``judged``) while it runs and is not judged again;
tools it starts inside are.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, final

from langchain_core.callbacks import BaseCallbackHandler
from langgraph.prebuilt.tool_node import ToolInvocationError

from orchestra.bridge import Mock, Proceed, Refuse, ToolCall, ToolHooks, tool_span
from orchestra_langgraph._run import current

if TYPE_CHECKING:
    from uuid import UUID

    from orchestra.skills import HookRegistry

__all__ = ["ToolRefused", "TreeGuard", "judged", "untraced"]


@final
class _Mark:
    """The tool a guarded path is running; ``taken`` once its own start was heard."""

    __slots__ = ("name", "taken")

    def __init__(self, name: str) -> None:
        self.name = name
        self.taken = False


_judged: contextvars.ContextVar[_Mark | None] = contextvars.ContextVar(
    "orchestra_langgraph_judged", default=None
)


@contextlib.contextmanager
def judged(name: str) -> Iterator[None]:
    """A guarded path runs the tool ``name`` it judged: its start is not judged again."""
    token = _judged.set(_Mark(name))
    try:
        yield
    finally:
        _judged.reset(token)


def _take(name: str) -> bool:
    """Whether this start is the marked call's own (the first start of that name)."""
    mark = _judged.get()
    if mark is None or mark.taken or mark.name != name:
        return False
    mark.taken = True  # one object in every copy of the context: later starts are judged
    return True


def untraced() -> bool:
    """Whether the run this call is part of has no span (no tracer: no tool span either)."""
    run = current.get()
    return run is not None and run.span is None


class ToolRefused(ToolInvocationError):
    """A tool call refused by orchestra's policy before its body ran (``TreeGuard``).

    A ``ToolInvocationError``, so that a ``ToolNode``'s default error handling answers
    the model with its ``message``: the reason.
    """

    def __init__(self, tool_name: str, reason: str) -> None:  # the class says
        Exception.__init__(self, reason)  # LangGraph's own __init__ wants a ValidationError
        self.message = reason
        self.tool_name = tool_name
        self.tool_kwargs: dict[str, Any] = {}
        self.source = None  # type: ignore[assignment]  # no validation error behind it
        self.filtered_errors = None


_CANNOT = (
    "{what} for {name!r}: orchestra sees this call through LangChain's callbacks and "
    "cannot carry that out here, so the call is refused (guard the tool with "
    "orchestra_langgraph.guard_tools, or put it in a ToolNode of the hooked graph)"
)


class TreeGuard(BaseCallbackHandler):
    """The run's callback handler that judges every tool started in its tree."""

    raise_error = True  # LangChain raises the handler's error out of the tool call
    # the tools' events alone (``ignore_agent`` covers them): no chain or model event
    ignore_chain = True
    ignore_llm = True
    ignore_chat_model = True
    ignore_retriever = True
    ignore_retry = True
    ignore_custom_event = True

    def __init__(self, registry: HookRegistry | None) -> None:
        """Judge with ``registry``'s tool events."""
        self.hooks = ToolHooks(registry)
        # with no registry it only charges budgets: nothing blocks, it may run on the loop
        self.run_inline = registry is None

    def on_tool_start(
        self,
        serialized: dict[str, Any],
        input_str: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        inputs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """Before the tool's body: ``PreToolUse`` on the call; a refusal raises."""
        name = str((serialized or {}).get("name") or kwargs.get("name") or "tool")
        if _take(name):
            return
        if self.run_inline and untraced():  # budgets alone, no span: only the charge
            refusal = self.hooks.charge(name)
            if refusal is not None:
                raise ToolRefused(name, refusal)
            return
        args = dict(inputs) if isinstance(inputs, Mapping) else {"input": input_str}
        given = kwargs.get("tool_call_id")
        call = ToolCall(name, args, tool_use_id=given) if given else ToolCall(name, args)
        with tool_span(name, call_id=call.tool_use_id):
            answer = self.hooks.pre_sync(call)  # a worker thread (LangChain's), no loop
        if isinstance(answer, Refuse):
            raise ToolRefused(name, answer.reason)
        if isinstance(answer, Mock):
            raise ToolRefused(name, _CANNOT.format(what="a PreToolUse mock output", name=name))
        if isinstance(answer, Proceed) and answer.modified:
            raise ToolRefused(name, _CANNOT.format(what="a PreToolUse modified_input", name=name))
