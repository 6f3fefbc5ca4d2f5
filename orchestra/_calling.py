"""Calling compiled hook methods: in order, errors isolated, answers merged (internal).

``HookChain`` (``orchestra._chain``) compiles each overridden hook method into a
``HookImpl``; the functions here call a moment's implementations: ``call_all`` awaiting
(``async def`` hooks, ``blocking`` objects' threads), ``call_now`` here and now (``def``
hooks only), and their ``traced`` twins that put each call in a ``hook {moment}`` span.
How each kind of call is bounded by its timeout is ``orchestra._bounds``.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final, TypeAlias, final

from orchestra._bounds import (
    HookTimeout,
    Waiting,
    may_suspend,
    offloaded,
    on_asyncio,
    stepped,
)
from orchestra._decisions import Decision, Fail, Replace, pick
from orchestra._errors import HookBlocked, HookError
from orchestra._moments import BadReplace, Moment
from orchestra._offload import call_in_thread_now
from orchestra._watchdog import Late, watch, watched
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
        "blocking",
        "chain",
        "fail_closed",
        "fn",
        "hook",
        "is_async",
        "label",
        "moment",
        "name",
        "suspends",
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
        self.blocking = _blocking(hook) and not self.is_async
        # an async def without an await point cannot suspend: nothing to bound, no deadline
        self.suspends = not self.is_async or may_suspend(self.fn)
        if self.timeout is not None and not self.is_async and not self.blocking:
            watch(self.timeout)  # a def hook called inline: the watchdog looks at it

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


def _blocking(hook: object) -> bool:
    """The hook object's ``blocking`` attribute: whether its ``def`` hooks run in threads."""
    blocking = getattr(hook, "blocking", False)
    if not isinstance(blocking, bool):
        raise TypeError(f"{type(hook).__name__}.blocking must be True or False, got {blocking!r}")
    return blocking


async def call_all(
    impls: Sequence[HookImpl],
    args: tuple[Any, ...],
    subject: str | None,
    on_error: OnError,
) -> tuple[Decision | None, str | None]:
    """Call ``impls`` in order (errors isolated), merge the answers, name the winner.

    A ``def`` hook is called inline, watched (``orchestra._watchdog``); one of a
    ``blocking`` hook object in a worker thread under its timeout (``orchestra._offload``).
    """
    answers: list[Decision | None] | None = None  # made when a hook has an opinion
    steps: bool | None = None  # whether coroutines may be stepped here: asked once, if needed
    for impl in impls:
        try:
            if impl.is_async:
                answer = impl.fn(*args)
            elif impl.blocking:
                answer = await offloaded(impl, args)
            else:
                answer = watched(impl, args, subject)
            if impl.is_async or (answer is not None and _awaitable(impl, answer)):
                if impl.timeout is None or not impl.suspends:
                    answer = await answer
                else:
                    if steps is None:
                        steps = on_asyncio()
                    answer = stepped(impl, answer, steps)
                    if type(answer) is Waiting:
                        answer = await answer
        except (HookTimeout, Late) as late:
            answer = _isolate(impl, impl.error(subject, _timed_out(impl, late)), on_error)
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


def _timed_out(impl: HookImpl, late: HookTimeout | Late) -> str:
    return str(late) or f"timed out after {impl.timeout:g} s"


def call_now(
    impls: Sequence[HookImpl], args: tuple[Any, ...], subject: str | None, on_error: OnError
) -> tuple[Decision | None, str | None]:
    """``call_all`` for ``def`` hooks only, here and now: no coroutine, no event loop.

    A ``blocking`` hook object's call waits for its worker thread, at most its timeout.
    """
    answers: list[Decision | None] | None = None  # made when a hook has an opinion
    for impl in impls:
        try:
            if impl.blocking:
                answer = call_in_thread_now(impl.fn, args, impl.timeout)
            else:
                answer = watched(impl, args, subject)
        except (HookTimeout, Late) as late:
            answer = _isolate(impl, impl.error(subject, _timed_out(impl, late)), on_error)
        except TimeoutError:  # the worker thread is abandoned
            answer = _isolate(
                impl, impl.error(subject, f"timed out after {impl.timeout:g} s"), on_error
            )
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
    if impl.fail_closed and isinstance(exc, HookBlocked):  # its verdict: the task's reason
        return Fail(str(exc))
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


async def call_traced(
    impls: Sequence[HookImpl],
    args: tuple[Any, ...],
    subject: str | None,
    on_error: OnError,
    tracer: Tracer,
) -> tuple[Decision | None, str | None]:
    """``_call_all`` with a ``hook {moment}`` span around each call."""
    answers: list[Decision | None] = []
    for impl in impls:
        with hook_span(
            tracer, impl.moment, hook_type="python", name=impl.name, subject=subject
        ) as span:
            errors: list[HookError] = []
            answer, _ = await call_all((impl,), args, subject, errors.append)
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
