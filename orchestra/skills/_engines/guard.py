"""``@registry.guard("Tool")``: a tool function wrapped in the tool events.

``PreToolUse`` may deny the call (``ToolDenied``) or rewrite its arguments, then
``PostToolUse`` gets the result or ``PostToolUseFailure`` the error; a denied call
fires ``PermissionDenied``. A ``PreToolUse`` mock (an ``output``) answers instead of the
tool, and ``PostToolUse`` still fires, with ``mocked: true``. A guarded ``def`` tool
stays callable from sync code.
"""

from __future__ import annotations

import contextvars
import functools
import inspect
import sys
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from typing import TYPE_CHECKING, Any, ParamSpec, TypeAlias, TypeVar, final, overload

import anyio
import anyio.to_thread

from orchestra._ambient import policy_scope
from orchestra._errors import ToolDenied
from orchestra._tool_call import Mock, Proceed, Refuse, ToolCall
from orchestra._tool_hooks import ToolHooks
from orchestra._tool_span import set_tool_result, tool_span
from orchestra.tracing import get_tracer

if TYPE_CHECKING:
    from orchestra.skills._firing.outcome import HookOutcome
    from orchestra.skills._firing.registry import HookRegistry

__all__ = ["AskCallback", "Guard", "OutcomeCallback"]

_P = ParamSpec("_P")
_R = TypeVar("_R")

AskCallback: TypeAlias = Callable[[str, Mapping[str, Any], "str | None"], "bool | Awaitable[bool]"]
"""Answers a hook's ``ask`` for a guarded tool: (tool, tool_input, reason) -> approve?"""
OutcomeCallback: TypeAlias = Callable[[str, "HookOutcome"], "Awaitable[None] | None"]
"""Gets the outcome of each event a guarded call fired that had hooks: (event, outcome)."""


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

        hooks = ToolHooks(registry, ask=ask, on_outcome=on_outcome, inner=True)

        async def call(args: list[Any] | tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            if is_async:
                return await fn(*args, **kwargs)
            return await anyio.to_thread.run_sync(functools.partial(fn, *args, **kwargs))

        @functools.wraps(fn)
        async def checked(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            if not hooks.watching:  # no tool hooks, no budget open here
                return await call(args, kwargs)
            tool_call = ToolCall(tool, _tool_input(sig, sig.bind(*args, **kwargs)))
            answer = await hooks.pre(tool_call)  # this caller cannot pause: no Ask
            if isinstance(answer, Refuse):
                raise ToolDenied(tool, answer.reason, retry=answer.retry)
            if isinstance(answer, Mock):  # a mock: the tool is not called
                return await hooks.post(tool_call, answer.output, mocked=True)
            assert isinstance(answer, Proceed)  # a budget's refusal came as a Refuse
            call_args: list[Any] | tuple[Any, ...] = args
            call_kwargs: dict[str, Any] = kwargs
            try:
                if answer.modified:
                    tool_call = tool_call.with_input(answer.tool_input)
                    call_args, call_kwargs = _call_args(tool, sig, answer.tool_input)
                result = await call(call_args, call_kwargs)
            except Exception as exc:
                await hooks.failed(tool_call, exc)  # a guard's ToolDenied inside goes on too
                raise
            return await hooks.post(tool_call, result)

        @functools.wraps(fn)
        async def guarded(*args: _P.args, **kwargs: _P.kwargs) -> Any:
            with policy_scope(registry):  # work started inside the tool: the same policy
                if get_tracer() is None:
                    return await checked(args, kwargs)
                with tool_span(tool, arguments=_arguments(sig, args, kwargs)) as span:
                    result = await checked(args, kwargs)
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
    sniffio = sys.modules.get("sniffio")  # its marker can only be set once it is imported
    if sniffio is None:  # anyio then looks for a running loop itself
        return context
    context.run(sniffio.current_async_library_cvar.set, None)
    return context
