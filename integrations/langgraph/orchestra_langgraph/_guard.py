"""``guard_tools``: LangChain tools guarded wherever they are called (internal).

A hand-written tool node (LangGraph's quickstart calls ``tool.invoke(tool_call["args"])``
itself), a tool called from a node function, an agent loop of the user's own: every call of
a guarded tool goes through the policy, driven by ``orchestra.bridge.ToolHooks``:

- ``PreToolUse`` with ``tool_name``, ``tool_input`` (the arguments as called) and
  ``tool_use_id`` (the tool call's ``id`` when the tool is invoked with a whole tool call);
  a deny, a block or an unanswered ``ask`` is the refusal the caller reads instead of the
  tool's output: the reason as a string for ``tool.invoke(args)``, an error ``ToolMessage``
  for ``tool.invoke(tool_call)`` (``PermissionDenied`` fires); the body never runs.
- a ``modified_input`` is what the tool gets, a mock ``output`` answers without it, and
  ``PostToolUse``'s rewrite is what the caller reads; ``PostToolUseFailure`` when it raised
  (the error then goes on; a ``ToolDenied`` of a guard inside is a refusal).
- TaskHooks (``hooks``) decide around each call as one task (task id the tool's name):
  ``Retry`` calls it again, ``Skip`` answers its reason (``skipped by ...``), ``Fail`` raises,
  ``Replace`` changes its arguments or its output.

With no registry (or hooks) of its own, a call follows the ambient policy of the guarded
work it runs in (``orchestra.bridge.resolve_policy``); while the tool runs, its policy is
the ambient one (an agent or graph it starts is guarded by it too).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable, Iterator, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, final

from langchain_core.messages import ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.errors import GraphBubbleUp

import orchestra
from orchestra import HookChain, TaskHooks
from orchestra.bridge import (
    AttemptDriver,
    DoSkip,
    Mock,
    Policy,
    Proceed,
    Refuse,
    ToolCall,
    ToolHooks,
    carry,
    policy_scope,
    resolve_policy,
    tool_span,
)
from orchestra_langgraph._tree import judged

if TYPE_CHECKING:
    from orchestra.skills import HookRegistry

__all__ = ["GuardedTool", "Outcome", "ToolAttempts", "guard_tools"]

_PASS = (GraphBubbleUp,)
"""An interrupt (or ``Command(graph=PARENT)``) inside a call is not a failure: it passes."""


class GuardedTool(BaseTool):
    """A LangChain tool whose every call goes through orchestra's policy (``guard_tools``)."""

    inner: BaseTool
    """The tool as given: what runs when the policy lets the call through."""
    registry: Any = None
    """The tool events' registry (None: the ambient policy's)."""
    task_hooks: tuple[Any, ...] = ()
    """TaskHooks around each call (empty: the ambient policy's)."""

    def _run(self, *args: Any, **kwargs: Any) -> Any:  # pragma: no cover - invoke is used
        raise NotImplementedError

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        """One call: the policy, then (if it lets it through) the tool's own ``invoke``."""
        call, shape = _call(self.inner.name, input)
        policy = resolve_policy(self.registry, self.task_hooks, kinds=(TaskHooks,))
        with _scope(call, policy):
            output = ToolAttempts(policy, call, self.inner.invoke, _meta(self)).run_sync(
                lambda args: self._once_sync(policy, call.with_input(args), input, config)
            )
        return shape(output)

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        """``invoke``, awaited (``ainvoke``/``astream`` graphs)."""
        call, shape = _call(self.inner.name, input)
        policy = resolve_policy(self.registry, self.task_hooks, kinds=(TaskHooks,))
        with _scope(call, policy):
            output = await ToolAttempts(policy, call, self.inner.invoke, _meta(self)).run_async(
                lambda args: self._once_async(policy, call.with_input(args), input, config)
            )
        return shape(output)

    def _once_sync(
        self, policy: Policy, call: ToolCall, given: Any, config: RunnableConfig | None
    ) -> Outcome:
        hooks = ToolHooks(policy.registry)
        answer = hooks.pre_sync(call)  # nobody to ask here: an ask is a refusal
        if isinstance(answer, Refuse):
            return Outcome(answer.reason, refused=True)
        if isinstance(answer, Mock):
            return Outcome(hooks.post_sync(call, answer.output, mocked=True))
        assert isinstance(answer, Proceed)
        call = call.with_input(dict(answer.tool_input))
        try:
            with judged(self.inner.name):  # judged here: not again by a run's TreeGuard
                result = self.inner.invoke(_input(given, call), config)
        except Exception as exc:
            failure = hooks.failed_sync(call, exc)
            if isinstance(failure, Refuse):
                return Outcome(failure.reason, refused=True)
            raise failure.error from None
        return Outcome(_rewritten(result, hooks.post_sync(call, _content(result))))

    async def _once_async(
        self, policy: Policy, call: ToolCall, given: Any, config: RunnableConfig | None
    ) -> Outcome:
        hooks = ToolHooks(policy.registry)
        answer = await hooks.pre(call)
        if isinstance(answer, Refuse):
            return Outcome(answer.reason, refused=True)
        if isinstance(answer, Mock):
            return Outcome(await hooks.post(call, answer.output, mocked=True))
        assert isinstance(answer, Proceed)
        call = call.with_input(dict(answer.tool_input))
        try:
            with judged(self.inner.name):  # judged here: not again by a run's TreeGuard
                result = await self.inner.ainvoke(_input(given, call), config)
        except Exception as exc:
            failure = await hooks.failed(call, exc)
            if isinstance(failure, Refuse):
                return Outcome(failure.reason, refused=True)
            raise failure.error from None
        return Outcome(_rewritten(result, await hooks.post(call, _content(result))))


@final
class Outcome:
    """What one call answered: the tool's result (or a rewrite), or a refusal's reason."""

    __slots__ = ("refused", "value")

    def __init__(self, value: Any, *, refused: bool = False) -> None:
        self.value = value
        self.refused = refused


@final
class ToolAttempts:
    """The TaskHooks around one call (a task named after the tool), or just the call."""

    __slots__ = ("call", "driver", "task")

    def __init__(
        self, policy: Policy, call: ToolCall, fn: Any, metadata: Mapping[str, Any]
    ) -> None:
        hooks = [h for h in policy.hooks if isinstance(h, TaskHooks)]
        self.driver = AttemptDriver(HookChain(hooks, trait=TaskHooks)) if hooks else None
        self.call = call
        self.task = orchestra.Task(
            id=call.tool_name, fn=fn, metadata=MappingProxyType(dict(metadata))
        )

    def _begin(self) -> Any:
        assert self.driver is not None
        return self.driver.begin(self.task, self.call.tool_input, context=_context)

    def run_sync(self, once: Any) -> Outcome:
        if self.driver is None:
            return once(self.call.tool_input)  # type: ignore[no-any-return]
        return _settled(self._begin().run_sync(once, passthrough=_PASS))

    async def run_async(self, once: Any) -> Outcome:
        if self.driver is None:
            return await once(self.call.tool_input)  # type: ignore[no-any-return]
        return _settled(await self._begin().run_async(once, passthrough=_PASS))


def _settled(end: Any) -> Outcome:
    """How the TaskHooks ended the call: its outcome, a skip's reason, or raise."""
    if isinstance(end, DoSkip):
        return Outcome(end.reason or "skipped", refused=True)
    output = carry(end)
    return output if isinstance(output, Outcome) else Outcome(output)


def _context(attempts: Any) -> Any:
    inputs = attempts.inputs
    return HookChain.task_context(
        task=attempts.task,
        attempt=attempts.attempt,
        executor=None,
        run_id="langchain-tool",
        errors=attempts.errors,
        started_at=attempts.started_at or time.time(),
        inputs=MappingProxyType(dict(inputs) if isinstance(inputs, Mapping) else {}),
        notes=attempts.notes,
    )


def _meta(tool: GuardedTool) -> dict[str, Any]:
    meta = dict(tool.inner.metadata or {})
    if tool.inner.tags:
        meta.setdefault("tags", tuple(tool.inner.tags))
    return meta


@contextlib.contextmanager
def _scope(call: ToolCall, policy: Policy) -> Iterator[None]:
    """The call's span, and its policy as the ambient one while the tool runs."""
    span = tool_span(call.tool_name, call_id=call.tool_use_id)
    with span, policy_scope(policy.registry, policy.hooks):
        yield


def _call(name: str, given: Any) -> tuple[ToolCall, Any]:
    """The call as the hooks see it, and how to shape the answer for the caller."""
    if isinstance(given, Mapping) and given.get("type") == "tool_call":
        call_id = given.get("id") or ""
        args = dict(given.get("args") or {})
        call = ToolCall(name, args, tool_use_id=call_id) if call_id else ToolCall(name, args)

        def as_message(outcome: Outcome) -> Any:
            if not outcome.refused and isinstance(outcome.value, ToolMessage | Mapping):
                return outcome.value
            return ToolMessage(
                content=_text(outcome.value),
                name=name,
                tool_call_id=call_id,
                status="error" if outcome.refused else "success",
            )

        return call, as_message
    args = dict(given) if isinstance(given, Mapping) else {"input": given}
    return ToolCall(name, args), lambda outcome: outcome.value


def _input(given: Any, call: ToolCall) -> Any:
    """What the tool gets: the call's (possibly rewritten) arguments, in the given shape."""
    if isinstance(given, Mapping) and given.get("type") == "tool_call":
        return {**given, "args": dict(call.tool_input)}
    if isinstance(given, Mapping):
        return dict(call.tool_input)
    return call.tool_input.get("input", given)


def _content(result: Any) -> Any:
    """What ``PostToolUse`` judges: a ``ToolMessage``'s content, else the result."""
    return result.content if isinstance(result, ToolMessage) else result


def _rewritten(result: Any, output: Any) -> Any:
    if output is _content(result):
        return result
    if isinstance(result, ToolMessage):
        return result.model_copy(update={"content": _text(output)})
    return output


def _text(value: Any) -> Any:
    return value if isinstance(value, str | list) else str(value)


def guard_tools(
    tools: Iterable[BaseTool],
    registry: HookRegistry | None = None,
    hooks: Iterable[object] = (),
) -> list[BaseTool]:
    """Guard LangChain tools wherever they are called (a hand-written tool node too).

    Args:
        tools: the tools (``@tool`` functions, ``StructuredTool``s, any ``BaseTool``).
        registry: the YAML hooks (``orchestra.skills.load(...)``); None: at each call,
            the ambient policy's (the guarded work it runs in), else no tool events.
        hooks: TaskHooks around each call (a task named after the tool, its metadata
            the tool's ``metadata`` and ``tags``); empty: the ambient policy's.

    Returns:
        One guarded tool per tool, in order, with the same name, description and schema.

    Raises:
        TypeError: a tool is not a LangChain ``BaseTool``.

    Examples:
        >>> from langchain_core.tools import tool
        >>> @tool
        ... def add(a: int, b: int) -> int:
        ...     '''Add two numbers.'''
        ...     return a + b
        >>> [guarded] = guard_tools([add])
        >>> guarded.name, guarded.invoke({"a": 1, "b": 2})
        ('add', 3)
    """
    own = tuple(hooks)
    guarded: list[BaseTool] = []
    for tool in tools:
        if not isinstance(tool, BaseTool):
            raise TypeError(f"guard_tools takes LangChain tools (BaseTool), got {tool!r}")
        inner = tool.inner if isinstance(tool, GuardedTool) else tool
        guarded.append(
            GuardedTool(
                name=inner.name,
                description=inner.description,
                args_schema=inner.args_schema,
                return_direct=inner.return_direct,
                response_format=inner.response_format,
                metadata=inner.metadata,
                tags=inner.tags,
                inner=inner,
                registry=registry,
                task_hooks=own,
            )
        )
    return guarded
