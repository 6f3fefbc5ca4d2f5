"""Calling compiled hook methods: in order, errors isolated, answers merged (internal).

``HookChain`` (``orchestra._chain``) compiles each overridden hook method into a
``HookImpl``; the functions here call a moment's implementations: ``call_all`` awaiting
(``async def`` hooks, timeouts), ``call_now`` here and now (``def`` hooks only), and
their ``traced`` twins that put each call in a ``hook {moment}`` span.
"""

from __future__ import annotations

import functools
import inspect
import logging
import sys
import time
import types
from collections.abc import Awaitable, Callable, Coroutine, Generator, Sequence
from types import CoroutineType
from typing import TYPE_CHECKING, Any, Final, TypeAlias, cast, final

import anyio

from orchestra._decisions import Decision, Fail, Replace, pick
from orchestra._errors import HookError
from orchestra._moments import BadReplace, Moment
from orchestra._offload import call_in_thread
from orchestra.tracing._engine import hook_span, record_decision, record_error, record_hook_error

if TYPE_CHECKING:
    from opentelemetry.trace import Span, Tracer

__all__ = ["HookImpl", "OnError", "call_all", "call_now", "call_traced", "call_traced_now"]

logger: Final = logging.getLogger("orchestra")

OnError: TypeAlias = "Callable[[HookError], object] | None"
_Args: TypeAlias = tuple[Any, ...]


@final
class HookImpl:
    """One overridden hook method, ready to call (internal).

    ``label`` (``Class.moment``) is how the hook is named everywhere it is printed: hook
    errors, the ``by`` of a decision, span attributes and reprs.
    """

    __slots__ = (
        "allowed",
        "chain",
        "fail_closed",
        "fn",
        "hook",
        "is_async",
        "label",
        "moment",
        "name",
        "timeout",
    )

    def __init__(self, hook: object, moment: str, spec: Moment, timeout: float | None) -> None:
        self.hook = hook
        self.fn: Callable[..., Any] = getattr(hook, moment)
        self.is_async = inspect.iscoroutinefunction(self.fn)
        self.fail_closed = bool(getattr(hook, "fail_closed", False))
        self.name = type(hook).__name__
        self.moment = moment
        self.label = f"{self.name}.{moment}"
        self.allowed = spec.allowed
        self.chain = spec.chain
        self.timeout = _hook_timeout(hook, timeout)

    def __repr__(self) -> str:
        return f"<HookImpl {self.label}>"

    def error(self, subject: str | None, message: str) -> HookError:
        """A ``HookError`` about this implementation, named by its label."""
        about = f" for {subject!r}" if subject is not None else ""
        return HookError(
            f"hook {self.label}{about} {message}",
            hook=self.name,
            moment=self.moment,
            subject=subject,
        )


def _hook_timeout(hook: object, default: float | None) -> float | None:
    """The hook object's own ``timeout`` attribute if it has one, else ``default``."""
    timeout = getattr(hook, "timeout", default)
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0
    ):
        raise TypeError(
            f"{type(hook).__name__}.timeout must be a number of seconds > 0 or None, "
            f"got {timeout!r}"
        )
    return timeout


async def call_all(
    impls: Sequence[HookImpl],
    args: tuple[Any, ...],
    subject: str | None,
    on_error: OnError,
    offload: bool = False,
) -> tuple[Decision | None, str | None]:
    """Call ``impls`` in order (errors isolated), merge the answers, name the winner.

    With ``offload``, each ``def`` hook is called in a daemon thread under its timeout
    (``orchestra._offload``), so that a hung one is a hook error, not a hung run.
    """
    answers: list[Decision | None] | None = None  # made when a hook has an opinion
    steps: bool | None = None  # whether coroutines may be stepped here: asked once, if needed
    for impl in impls:
        try:
            if offload and not impl.is_async:
                answer = await _offloaded(impl, args)
            else:
                answer = impl.fn(*args)
            if impl.is_async or _awaitable(impl, answer):
                if impl.timeout is None:
                    answer = await answer
                else:
                    if steps is None:
                        steps = _on_asyncio()
                    answer = _stepped(impl, answer, steps)
                    if type(answer) is _Waiting:
                        answer = await answer
        except _HookTimeout:
            answer = _isolate(
                impl, impl.error(subject, f"timed out after {impl.timeout:g} s"), on_error
            )
        except Exception as exc:
            answer = _raised(impl, exc, subject, on_error)
        else:
            if answer is not None:
                answer, args = _checked(impl, answer, args, subject, on_error)
        if answers is not None:
            answers.append(answer)
        elif answer is not None:
            answers = [None] * impls.index(impl) + [answer]
    return (None, None) if answers is None else _merged(impls, answers)


def call_now(
    impls: Sequence[HookImpl], args: tuple[Any, ...], subject: str | None, on_error: OnError
) -> tuple[Decision | None, str | None]:
    """``_call_all`` for ``def`` hooks only, here and now: no coroutine, no event loop."""
    answers: list[Decision | None] | None = None  # made when a hook has an opinion
    for impl in impls:
        try:
            answer = impl.fn(*args)
        except Exception as exc:
            answer = _raised(impl, exc, subject, on_error)
        else:
            if answer is not None:
                if _awaitable(impl, answer):
                    getattr(answer, "close", _nothing)()  # no "never awaited" warning
                    error = impl.error(
                        subject, "returned an awaitable where it is called now: make it async def"
                    )
                    answer = _isolate(impl, error, on_error)
                else:
                    answer, args = _checked(impl, answer, args, subject, on_error)
        if answers is not None:
            answers.append(answer)
        elif answer is not None:
            answers = [None] * impls.index(impl) + [answer]
    return (None, None) if answers is None else _merged(impls, answers)


def _awaitable(impl: HookImpl, answer: object) -> bool:
    """Whether a ``def`` hook returned an awaitable (a decorated coroutine function, say)."""
    return answer is not None and type(answer) not in impl.allowed and inspect.isawaitable(answer)


def _nothing() -> None:
    return None


def _raised(impl: HookImpl, exc: Exception, subject: str | None, on_error: OnError) -> Fail | None:
    error = impl.error(subject, f"raised {type(exc).__name__}: {exc}")
    error.__cause__ = exc
    return _isolate(impl, error, on_error)


def _checked(
    impl: HookImpl, answer: Any, args: _Args, subject: str | None, on_error: OnError
) -> tuple[Decision | None, _Args]:
    """An answer the moment allows, and the next hook's arguments when ``Replace`` chains."""
    if type(answer) not in impl.allowed:
        allowed = ", ".join(t.__name__ for t in impl.allowed) or "nothing"
        error = impl.error(subject, f"returned {answer!r}; None or {allowed} expected")
        return _isolate(impl, error, on_error), args
    if impl.chain is not None and type(answer) is Replace:
        # each hook sees the value as replaced by those before it
        try:
            return answer, impl.chain(args, answer.value)
        except BadReplace as exc:
            return _isolate(impl, impl.error(subject, f"answered {exc}"), on_error), args
    return answer, args


def _merged(
    impls: Sequence[HookImpl], answers: list[Decision | None]
) -> tuple[Decision | None, str | None]:
    """The winning answer and its hook's label, or ``(None, None)``."""
    if answers.count(None) == len(answers):  # the common case: no hook had an opinion
        return None, None
    i = pick(answers, chained=impls[0].chain is not None)
    return answers[i], impls[i].label


class _HookTimeout(Exception):
    """A hook call ran past its timeout (internal)."""


_NOT_STEPPED: Final = object()


def _stepped(impl: HookImpl, answer: Awaitable[Any], steps: bool) -> Any:
    """A hook's answer if it is there without waiting, else the ``_Waiting`` for it.

    A cancel scope costs more than a whole ``async def`` hook that never waits (2-5 µs
    against 0.5), and cancellation can only reach a call where it waits. On asyncio a
    coroutine is stepped once here: one that finishes without waiting (most hooks) is
    done, with nothing to bound; one that waits goes on under ``asyncio.timeout``, armed
    then (asyncio keeps no stack of scopes, so a deadline armed after the first step is
    sound), the time already run taken off. trio can only interrupt a wait through a
    cancel scope opened before the hook's first step (which may open scopes of its own:
    ``trio.sleep`` does), so on trio, and for any awaitable that is not a coroutine, the
    call runs in one.
    """
    if not steps or type(answer) is not CoroutineType:
        return _Waiting(impl, answer, _NOT_STEPPED, 0.0)
    started = time.monotonic()
    try:
        waits_on = answer.send(None)
    except StopIteration as done:
        return done.value
    return _Waiting(impl, answer, waits_on, started)


def _on_asyncio() -> bool:
    """Whether this task runs on asyncio (anyio's other backend is trio)."""
    # Asking asyncio or trio costs about 0.5 µs; trio not imported means asyncio.
    trio = sys.modules.get("trio")
    return trio is None or not trio.lowlevel.in_trio_run()


@final
class _Waiting:
    """The rest of a hook call that waits, bounded by the hook's timeout (internal)."""

    __slots__ = ("answer", "impl", "started", "waits_on")

    def __init__(
        self, impl: HookImpl, answer: Awaitable[Any], waits_on: Any, started: float
    ) -> None:
        self.impl = impl
        self.answer = answer
        self.waits_on = waits_on  # what a coroutine stepped once waits on, or _NOT_STEPPED
        self.started = started

    def __await__(self) -> Generator[Any, Any, Any]:
        return self._bounded().__await__()

    async def _bounded(self) -> Any:
        limit = self.impl.timeout
        assert limit is not None  # a call without a timeout is awaited as it is
        if self.waits_on is _NOT_STEPPED:
            with anyio.move_on_after(limit):
                return await self.answer
            raise _HookTimeout  # only reached when the timeout cancelled the call
        import asyncio  # loaded: its loop runs this (here: ``import orchestra`` stays light)

        deadline = asyncio.timeout(limit - (time.monotonic() - self.started))
        try:
            async with deadline:
                return await _resumed(cast("Coroutine[Any, Any, Any]", self.answer), self.waits_on)
        except TimeoutError:
            if deadline.expired():
                raise _HookTimeout from None
            raise  # the hook's own TimeoutError: a hook error like any other


@types.coroutine
def _resumed(coro: Coroutine[Any, Any, Any], waits_on: Any) -> Generator[Any, Any, Any]:
    """Go on awaiting ``coro`` from where its first step suspended (on ``waits_on``).

    What ``await coro`` does after its first step: what the event loop sends or throws
    (cancellation included) goes to the coroutine, what it waits on goes to the loop.
    """
    while True:
        try:
            sent = yield waits_on
        except GeneratorExit:
            coro.close()
            raise
        except BaseException as exc:  # thrown into the hook where it waits, as await does
            step = functools.partial(coro.throw, exc)
        else:
            step = functools.partial(coro.send, sent)
        try:
            waits_on = step()
        except StopIteration as done:
            return done.value


async def _offloaded(impl: HookImpl, args: tuple[Any, ...]) -> Any:
    if impl.timeout is None:
        return await call_in_thread(impl.fn, *args)
    with anyio.move_on_after(impl.timeout):
        return await call_in_thread(impl.fn, *args)
    raise _HookTimeout  # only reached when the timeout cancelled the call


async def call_traced(
    impls: Sequence[HookImpl],
    args: tuple[Any, ...],
    subject: str | None,
    on_error: OnError,
    tracer: Tracer,
    offload: bool = False,
) -> tuple[Decision | None, str | None]:
    """``_call_all`` with a ``hook {moment}`` span around each call."""
    answers: list[Decision | None] = []
    for impl in impls:
        with hook_span(
            tracer, impl.moment, hook_type="python", name=impl.name, subject=subject
        ) as span:
            errors: list[HookError] = []
            answer, _ = await call_all((impl,), args, subject, errors.append, offload)
            _spanned(span, impl, errors, answer, on_error)
        if impl.chain is not None and type(answer) is Replace:
            args = impl.chain(args, answer.value)  # checked by _call_all already
        answers.append(answer)
    return _merged(impls, answers)


def call_traced_now(
    impls: Sequence[HookImpl],
    args: tuple[Any, ...],
    subject: str | None,
    on_error: OnError,
    tracer: Tracer,
) -> tuple[Decision | None, str | None]:
    """``_call_now`` with a ``hook {moment}`` span around each call."""
    answers: list[Decision | None] = []
    for impl in impls:
        with hook_span(
            tracer, impl.moment, hook_type="python", name=impl.name, subject=subject
        ) as span:
            errors: list[HookError] = []
            answer, _ = call_now((impl,), args, subject, errors.append)
            _spanned(span, impl, errors, answer, on_error)
        if impl.chain is not None and type(answer) is Replace:
            args = impl.chain(args, answer.value)  # checked by _call_now already
        answers.append(answer)
    return _merged(impls, answers)


def _spanned(
    span: Span, impl: HookImpl, errors: list[HookError], answer: Any, on_error: OnError
) -> None:
    """Put one hook call's errors and decision on its span, and pass the errors on."""
    for error in errors:
        record_hook_error(span, error, impl.name)
        record_error(span, error)
        if on_error is not None:
            on_error(error)
    if answer is not None:
        record_decision(span, answer, impl.label)


def _isolate(impl: HookImpl, error: HookError, on_error: OnError) -> Fail | None:
    logger.warning("%s", error, exc_info=error.__cause__ or error)
    if on_error is not None:
        on_error(error)
    return Fail(f"fail-closed {error}") if impl.fail_closed else None
