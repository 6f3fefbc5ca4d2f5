"""Adapters that fire a ``HookRegistry`` at the moments of orchestra's engines.

- ``registry.as_task_hooks()``: a ``TaskHooks`` firing ``TaskCreated`` before a task's
  first attempt (a deny fails the task) and ``TaskCompleted`` when it ended, with its
  state and error.
- ``registry.as_subagent_hooks()``: a ``SubagentHooks`` firing ``SubagentStart`` before
  each attempt of a dispatch (a deny fails the dispatch) and ``SubagentStop`` after it.
- ``@registry.guard("Tool")``: wraps a tool function; ``PreToolUse`` may deny the call
  (``ToolDenied``) or rewrite its arguments, then ``PostToolUse`` gets the result or
  ``PostToolUseFailure`` the error.

An adapter only overrides the moments whose events have hooks, so the engines skip the
others at no cost.
"""

from __future__ import annotations

import contextvars
import enum
import functools
import inspect
import uuid
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from typing import TYPE_CHECKING, Any, ParamSpec, TypeAlias, TypeVar, final, overload

import anyio
import anyio.to_thread

from orchestra._decisions import Fail
from orchestra._errors import ToolDenied
from orchestra._hooks import SubagentHookContext, SubagentHooks, TaskHookContext, TaskHooks
from orchestra.tracing import get_tracer
from orchestra.tracing._engine import set_tool_result, tool_span
from orchestra.tracing.names import ATTR_TOOL_DECISION

if TYPE_CHECKING:
    from opentelemetry.trace import Span

    from orchestra.skills._outcome import HookOutcome
    from orchestra.skills._registry import HookRegistry

__all__ = ["AskCallback", "Guard", "OutcomeCallback", "RegistrySubagentHooks", "RegistryTaskHooks"]

_P = ParamSpec("_P")
_R = TypeVar("_R")

AskCallback: TypeAlias = Callable[[str, Mapping[str, Any], "str | None"], "bool | Awaitable[bool]"]
"""Answers a hook's ``ask`` for a guarded tool: (tool, tool_input, reason) -> approve?"""
OutcomeCallback: TypeAlias = Callable[[str, "HookOutcome"], "Awaitable[None] | None"]
"""Gets the outcome of each event a guarded call fired that had hooks: (event, outcome)."""


def _refusal(event: str, outcome: HookOutcome) -> str:
    return outcome.reason or f"blocked by a {event} hook at {outcome.decided_by}"


def _trim(cls: type, base: type, keep: Mapping[str, bool]) -> type:
    """A subclass of ``cls`` with the moments not in ``keep`` reset to ``base``'s."""
    reset = {moment: getattr(base, moment) for moment, wanted in keep.items() if not wanted}
    return type(cls.__name__, (cls,), reset) if reset else cls


def _error_fields(error: BaseException | None) -> dict[str, Any]:
    if error is None:
        return {"error": None, "error_type": None}
    return {"error": str(error) or type(error).__name__, "error_type": type(error).__qualname__}


class RegistryTaskHooks(TaskHooks):
    """``TaskHooks`` that fire ``TaskCreated`` and ``TaskCompleted`` hooks.

    ``TaskCreated`` fires before every attempt of a task (``attempt`` in the event); a
    deny or block fails the task with the hook's reason. ``TaskCompleted`` fires once
    per task when it reached its terminal state, whatever it is (``state``:
    ``succeeded``, ``failed``, ``skipped``, ``upstream_failed`` or ``cancelled``, also
    for tasks that never started), with the last error (``error``, ``error_type``) or
    a ``TaskCreated`` deny's reason. The hooks' messages (``additionalContext``) are
    passed on with ``ctx.add_message``: later hooks see them, a task run by an agent gets
    them after its text, and ``RunResult.messages`` keeps them.

    Args:
        registry: the hooks to fire.
    """

    def __init__(self, registry: HookRegistry) -> None:
        self.registry = registry
        # (run id, task id) -> the reason a TaskCreated hook denied the task, for its
        # TaskCompleted event
        self._denied: dict[tuple[str, str], str] = {}

    @staticmethod
    def payload(ctx: TaskHookContext) -> dict[str, Any]:
        """The event fields for a task: ``task_id``, ``run_id``, ``attempt``, ..."""
        return {
            "task_id": ctx.task.id,
            "run_id": ctx.run_id,
            "attempt": ctx.attempt,
            "executor": ctx.executor,
            "metadata": dict(ctx.task.metadata),
        }

    async def before_execute(self, ctx: TaskHookContext) -> Fail | None:
        """Fire ``TaskCreated`` before each attempt; a deny answers ``Fail``."""
        outcome = await self.registry.fire("TaskCreated", self.payload(ctx))
        for message in outcome.messages:
            ctx.add_message(message)
        if not outcome.blocked:
            return None
        reason = _refusal("TaskCreated", outcome)
        if self.registry.has_hooks("TaskCompleted"):
            self._denied[(ctx.run_id, ctx.task.id)] = reason
        return Fail(reason)

    async def on_end(self, ctx: TaskHookContext, state: enum.Enum) -> None:
        """Fire ``TaskCompleted`` with the task's terminal ``state`` and its last error."""
        denied = self._denied.pop((ctx.run_id, ctx.task.id), None)
        if denied is not None:
            fields = {"error": denied, "error_type": "TaskFailed"}
        else:
            fields = _error_fields(ctx.errors[-1] if ctx.errors else None)
        payload = {**self.payload(ctx), "state": state.value, **fields}
        outcome = await self.registry.fire("TaskCompleted", payload)
        for message in outcome.messages:
            ctx.add_message(message)


class RegistrySubagentHooks(SubagentHooks):
    """``SubagentHooks`` that fire ``SubagentStart`` and ``SubagentStop`` hooks.

    ``SubagentStart`` fires before each attempt of a dispatch (the matcher sees the
    agent's name); a deny or block fails the dispatch with the hook's reason, and its
    messages (``additionalContext``) follow the text the agent gets. ``SubagentStop``
    fires after each attempt, with ``state`` ``"succeeded"`` and the ``output``, or
    ``"failed"`` with ``error`` and ``error_type``; its messages reach the result
    (``SubagentResult.messages``).

    Args:
        registry: the hooks to fire.
    """

    def __init__(self, registry: HookRegistry) -> None:
        self.registry = registry

    @staticmethod
    def payload(ctx: SubagentHookContext) -> dict[str, Any]:
        """The event fields for a dispatch: ``agent_name``, ``task``, ``attempt``, ..."""
        return {
            "agent_name": ctx.subagent_name,
            "agent_type": ctx.subagent_name,  # the field Claude Code's scripts read
            "parent_agent": ctx.parent_agent,
            "execution_mode": ctx.execution_mode.value,
            "task": ctx.task,
            "attempt": ctx.attempt,
            "delegated_from": list(ctx.delegated_from),
        }

    async def before_dispatch(self, ctx: SubagentHookContext) -> Fail | None:
        """Fire ``SubagentStart``; a deny answers ``Fail`` with the hook's reason."""
        outcome = await self.registry.fire("SubagentStart", self.payload(ctx))
        for message in outcome.messages:
            ctx.add_message(message)
        return Fail(_refusal("SubagentStart", outcome)) if outcome.blocked else None

    async def after_dispatch(self, ctx: SubagentHookContext, result: Any) -> None:
        """Fire ``SubagentStop`` with ``state: "succeeded"`` and the output."""
        output = getattr(result, "output", result)
        payload = {**self.payload(ctx), "state": "succeeded", "output": output}
        outcome = await self.registry.fire("SubagentStop", {**payload, **_error_fields(None)})
        for message in outcome.messages:
            ctx.add_message(message)

    async def on_failure(self, ctx: SubagentHookContext, error: BaseException) -> None:
        """Fire ``SubagentStop`` with ``state: "failed"`` and the error."""
        payload = {**self.payload(ctx), "state": "failed", "output": None}
        outcome = await self.registry.fire("SubagentStop", {**payload, **_error_fields(error)})
        for message in outcome.messages:
            ctx.add_message(message)
        return None


def task_hooks(registry: HookRegistry) -> TaskHooks:
    """The ``TaskHooks`` of a registry, overriding only the moments with hooks."""
    keep = {
        "before_execute": registry.has_hooks("TaskCreated"),
        "on_end": registry.has_hooks("TaskCompleted"),
    }
    cls: type[RegistryTaskHooks] = _trim(RegistryTaskHooks, TaskHooks, keep)
    return cls(registry)


def subagent_hooks(registry: HookRegistry) -> SubagentHooks:
    """The ``SubagentHooks`` of a registry, overriding only the moments with hooks."""
    stop = registry.has_hooks("SubagentStop")
    keep = {
        "before_dispatch": registry.has_hooks("SubagentStart"),
        "after_dispatch": stop,
        "on_failure": stop,
    }
    cls: type[RegistrySubagentHooks] = _trim(RegistrySubagentHooks, SubagentHooks, keep)
    return cls(registry)


def _tool_input(sig: inspect.Signature, bound: inspect.BoundArguments) -> dict[str, Any]:
    """The call's arguments by name (``**kwargs`` spread, ``*args`` as a list)."""
    out: dict[str, Any] = {}
    for name, value in bound.arguments.items():
        kind = sig.parameters[name].kind
        if kind is inspect.Parameter.VAR_KEYWORD:
            out.update(value)
        elif kind is inspect.Parameter.VAR_POSITIONAL:
            out[name] = list(value)
        else:
            out[name] = value
    return out


def _arguments(
    sig: inspect.Signature, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> dict[str, Any] | None:
    """The call's arguments by name for the tool span, None if they do not bind."""
    try:
        return _tool_input(sig, sig.bind(*args, **kwargs))
    except TypeError:
        return None


def _call_args(
    tool: str, sig: inspect.Signature, tool_input: Mapping[str, Any]
) -> tuple[list[Any], dict[str, Any]]:
    """Positional and keyword arguments for a (modified) tool input.

    Raises:
        TypeError: the input has names the function does not take.
    """
    rest = dict(tool_input)
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    spread = False
    for name, param in sig.parameters.items():
        if param.kind is inspect.Parameter.VAR_KEYWORD:
            spread = True
        elif name not in rest:
            continue
        elif param.kind is inspect.Parameter.POSITIONAL_ONLY:
            args.append(rest.pop(name))
        elif param.kind is inspect.Parameter.VAR_POSITIONAL:
            args.extend(rest.pop(name))
        else:
            kwargs[name] = rest.pop(name)
    if rest and not spread:
        raise TypeError(f"tool {tool!r} takes no argument(s) {', '.join(map(repr, rest))}")
    kwargs.update(rest)
    return args, kwargs


@final
class Guard:
    """The decorator ``registry.guard(tool)`` returns; see ``HookRegistry.guard``."""

    __slots__ = ("ask", "on_outcome", "registry", "tool")

    def __init__(
        self,
        registry: HookRegistry,
        tool: str,
        ask: AskCallback | None,
        on_outcome: OutcomeCallback | None = None,
    ) -> None:
        self.registry = registry
        self.tool = tool
        self.ask = ask
        self.on_outcome = on_outcome

    @overload
    def __call__(
        self, fn: Callable[_P, Awaitable[_R]]
    ) -> Callable[_P, Coroutine[Any, Any, _R]]: ...

    @overload
    def __call__(self, fn: Callable[_P, _R]) -> Callable[_P, Any]: ...

    def __call__(self, fn: Callable[_P, Any]) -> Callable[_P, Coroutine[Any, Any, Any]]:
        """Wrap ``fn`` (``def`` or ``async def``) into a guarded function of the same kind.

        A guarded ``async def`` tool is awaited as before. A guarded ``def`` tool stays
        callable from sync code (its events fire in a private event loop, the tool runs
        in a worker thread); called on an event loop it returns an awaitable instead.
        """
        sig = inspect.signature(fn)
        is_async = inspect.iscoroutinefunction(fn)
        registry, tool, ask, on_outcome = self.registry, self.tool, self.ask, self.on_outcome

        async def fire(event: str, payload: dict[str, Any]) -> HookOutcome:
            outcome = await registry.fire(event, payload)
            if on_outcome is not None and outcome.records:
                answer = on_outcome(event, outcome)
                if inspect.isawaitable(answer):
                    await answer
            return outcome

        async def call(args: list[Any] | tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            if is_async:
                return await fn(*args, **kwargs)
            return await anyio.to_thread.run_sync(functools.partial(fn, *args, **kwargs))

        @functools.wraps(fn)
        async def checked(args: tuple[Any, ...], kwargs: dict[str, Any], span: Span | None) -> Any:
            pre_hooks = registry.has_hooks("PreToolUse")
            post_hooks = registry.has_hooks("PostToolUse")
            fail_hooks = registry.has_hooks("PostToolUseFailure")
            denied_hooks = registry.has_hooks("PermissionDenied")
            if not (pre_hooks or post_hooks or fail_hooks):
                return await call(args, kwargs)
            tool_input = _tool_input(sig, sig.bind(*args, **kwargs))
            fields = {"tool_name": tool, "tool_use_id": f"toolu_{uuid.uuid4().hex}"}
            call_args: list[Any] | tuple[Any, ...] = args
            call_kwargs: dict[str, Any] = kwargs
            modified = False
            if pre_hooks:
                pre = await fire("PreToolUse", {**fields, "tool_input": tool_input})
                refusal: str | None = None
                if pre.blocked:
                    refusal = _refusal("PreToolUse", pre)
                elif pre.decision == "ask" and not await _approve(ask, tool, tool_input, pre):
                    refusal = pre.reason or f"needs approval ({pre.decided_by})"
                if span is not None:
                    span.set_attribute(ATTR_TOOL_DECISION, "deny" if refusal else "allow")
                if refusal is not None:
                    retry = False
                    if denied_hooks:
                        payload = {**fields, "tool_input": tool_input, "reason": refusal}
                        retry = (await fire("PermissionDenied", payload)).retry
                    raise ToolDenied(tool, refusal, retry=retry)
                if pre.output is not None:  # a mock: the tool is not called
                    return pre.output
                if pre.modified_input is not None:
                    tool_input = dict(pre.modified_input)
                    modified = True
            try:
                if modified:
                    call_args, call_kwargs = _call_args(tool, sig, tool_input)
                result = await call(call_args, call_kwargs)
            except Exception as exc:
                if fail_hooks:
                    payload = {**fields, "tool_input": tool_input, **_error_fields(exc)}
                    await fire("PostToolUseFailure", payload)
                raise
            if post_hooks:
                payload = {**fields, "tool_input": tool_input, "tool_response": result}
                post = await fire("PostToolUse", payload)
                if post.output is not None:  # a rewrite of what the caller gets
                    return post.output
            return result

        @functools.wraps(fn)
        async def guarded(*args: _P.args, **kwargs: _P.kwargs) -> Any:
            tracer = get_tracer()
            if tracer is None:
                return await checked(args, kwargs, None)
            with tool_span(tracer, tool, arguments=_arguments(sig, args, kwargs)) as span:
                result = await checked(args, kwargs, span)
                set_tool_result(span, result)
                return result

        if is_async:
            return guarded

        @functools.wraps(fn)
        def guarded_sync(*args: _P.args, **kwargs: _P.kwargs) -> Any:
            # On an event loop the caller can only await: hand it the coroutine. From
            # sync code (a plain script, a worker thread) the events fire in a private
            # event loop and the tool's result comes back as from the plain function.
            try:
                anyio.get_current_task()
            except (anyio.NoEventLoopError, RuntimeError):
                # A worker thread may carry its loop's context (asyncio.to_thread copies
                # it, sniffio's marker included) without a loop: run in a private one.
                call = functools.partial(anyio.run, functools.partial(guarded, *args, **kwargs))
                return _loop_free_context().run(call)
            return guarded(*args, **kwargs)

        return guarded_sync


def _loop_free_context() -> contextvars.Context:
    """A copy of the current context that no longer says an event loop runs here."""
    context = contextvars.copy_context()
    try:
        import sniffio
    except ImportError:  # anyio then looks for a running loop itself
        return context
    context.run(sniffio.current_async_library_cvar.set, None)
    return context


async def _approve(
    ask: AskCallback | None, tool: str, tool_input: Mapping[str, Any], outcome: HookOutcome
) -> bool:
    if ask is None:
        return False
    answer = ask(tool, tool_input, outcome.reason)
    if inspect.isawaitable(answer):
        answer = await answer
    return bool(answer)
