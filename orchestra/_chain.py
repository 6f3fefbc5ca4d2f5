"""``HookChain``: the engine seam that compiles hook objects once and calls them.

The DAG scheduler, the subagent dispatcher and every integration call hooks through a
``HookChain``: it keeps, per moment of a trait, the methods that hook objects really
override (``chain.has(moment)`` is the zero-cost guard), calls them in registration
order, isolates their errors, and merges their answers by precedence.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Final, TypeAlias, final

import anyio

from orchestra._decisions import Decision, Fail, Replace, pick
from orchestra._errors import HookError, did_you_mean
from orchestra._hooks import TaskHooks
from orchestra._moments import MOMENTS, BadReplace, Moment, check
from orchestra.tracing._engine import hook_span, record_decision, record_error, record_hook_error

if TYPE_CHECKING:
    from opentelemetry.trace import Tracer

__all__ = ["DEFAULT_HOOK_TIMEOUT", "HookChain", "HookImpl"]

logger: Final = logging.getLogger("orchestra")

_OnError: TypeAlias = "Callable[[HookError], object] | None"
_Args: TypeAlias = tuple[Any, ...]

DEFAULT_HOOK_TIMEOUT: Final = 60.0
"""Seconds a hook call may take unless the hook object or the engine says otherwise."""


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


@final
class HookChain:
    """Hook objects compiled once for one trait, called in order, answers merged.

    This is the one public way to call hooks: the scheduler, the dispatcher and the
    integrations build a chain once (per run, dispatcher or adapter) and ask it, at each
    moment, whether anything listens (``has``) before building a context to ``call`` it::

        chain = HookChain([RetryPolicy(), Audit()], trait=TaskHooks)
        if chain.has("on_failure"):
            decision, by = await chain.call("on_failure", ctx, error)

    Only the methods a hook class really overrides are kept, so a moment nobody
    implements costs ``has`` and nothing else.

    Args:
        hooks: hook objects, called in this order at each moment.
        trait: ``TaskHooks`` or ``SubagentHooks``: whose moments to compile.
        timeout: seconds an ``async`` hook call may take (None = no limit), unless the
            hook object has a ``timeout`` attribute of its own. A call past it is
            cancelled and counts as a hook error. A ``def`` hook runs on the event loop
            and cannot be interrupted.

    Raises:
        TypeError: ``trait`` is not a hook trait; or an object is refused, naming it, the
            method and the closest moment: a public method whose name is close to a
            moment (``on_fail``), an overridden moment whose signature cannot take the
            moment's arguments, an object of the other trait only, an object that
            implements no moment of ``trait``, or a ``timeout`` attribute that is not a
            number > 0 or None. No object is registered when one is refused.
        ValueError: ``timeout`` is not a number > 0 or None.
    """

    __slots__ = ("_impls", "_trait", "timeout")

    def __init__(
        self,
        hooks: Iterable[object],
        trait: type = TaskHooks,
        timeout: float | None = DEFAULT_HOOK_TIMEOUT,
    ) -> None:
        moments = MOMENTS.get(trait)
        if moments is None:
            raise TypeError(
                f"trait must be TaskHooks or SubagentHooks, got {trait!r}"
                + did_you_mean(getattr(trait, "__name__", ""), [t.__name__ for t in MOMENTS])
            )
        if timeout is not None and (
            isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0
        ):
            raise ValueError(
                f"hook timeout must be a number of seconds > 0 or None, got {timeout!r}"
            )
        # Every object is checked before any is compiled: none is half-registered.
        implemented = [(hook, check(hook, trait)) for hook in hooks]
        self._trait = trait
        self.timeout = timeout
        self._impls: dict[str, tuple[HookImpl, ...]] = {
            moment: tuple(
                HookImpl(hook, moment, spec, timeout)
                for hook, implements in implemented
                if moment in implements
            )
            for moment, spec in moments.items()
        }

    @property
    def trait(self) -> type:
        """The trait the chain was compiled for."""
        return self._trait

    def has(self, moment: str) -> bool:
        """Whether any hook implements ``moment`` (the engines' zero-cost guard).

        Raises:
            ValueError: ``moment`` is not a moment of the chain's trait.
        """
        try:
            return bool(self._impls[moment])
        except KeyError:
            raise ValueError(self._unknown(moment)) from None

    def awaits(self, moment: str) -> bool:
        """Whether a call of ``moment`` may suspend (an ``async`` hook implements it).

        A call of ``def`` hooks only never yields to the event loop, so nothing can
        cancel it half-way.
        """
        return any(impl.is_async for impl in self._impls[moment])

    def hooks(self, moment: str) -> tuple[object, ...]:
        """The hook objects that implement ``moment``, in calling order."""
        if moment not in self._impls:
            raise ValueError(self._unknown(moment))
        return tuple(impl.hook for impl in self._impls[moment])

    def labels(self, moment: str) -> tuple[str, ...]:
        """The ``Class.moment`` labels of the implementations of ``moment``, in order."""
        if moment not in self._impls:
            raise ValueError(self._unknown(moment))
        return tuple(impl.label for impl in self._impls[moment])

    def call(
        self,
        moment: str,
        *args: Any,
        subject: str | None = None,
        on_error: _OnError = None,
        tracer: Tracer | None = None,
    ) -> Awaitable[tuple[Decision | None, str | None]]:
        """Call every implementation of ``moment`` in order and merge their answers.

        A hook that raises ``Exception``, times out, or answers something its moment does
        not allow is logged on the ``orchestra`` logger, passed to ``on_error`` as a
        ``HookError``, and counts as no opinion, or as ``Fail`` if the hook object sets
        ``fail_closed = True``. Cancellation and any other ``BaseException`` propagate.

        Args:
            moment: the moment, e.g. ``"on_failure"``.
            *args: the moment's arguments (the context first).
            subject: what the call is about (a task id, an agent name), for errors.
            on_error: called with each ``HookError``, e.g. a list's ``append``.
            tracer: an OpenTelemetry tracer (``orchestra.tracing.get_tracer()``) to put
                each call in a ``hook {moment}`` span; None for no spans.

        Returns:
            An awaitable of the merged decision and the label (``Class.moment``) of the hook whose
            answer won, or ``(None, None)`` when no hook had an opinion.
        """
        try:
            impls = self._impls[moment]
        except KeyError:
            raise ValueError(self._unknown(moment)) from None
        if tracer is None:
            return _call_all(impls, args, subject, on_error)
        return _call_traced(impls, args, subject, on_error, tracer)

    def _unknown(self, moment: str) -> str:
        return f"{moment!r} is not a moment of {self._trait.__name__}" + did_you_mean(
            moment, self._impls
        )

    def __repr__(self) -> str:
        moments = ", ".join(
            f"{moment}=[{', '.join(i.name for i in impls)}]"
            for moment, impls in self._impls.items()
            if impls
        )
        return f"<HookChain {self._trait.__name__}: {moments or 'no hooks'}>"


# --- calling ------------------------------------------------------------------------------


async def _call_all(
    impls: Sequence[HookImpl], args: tuple[Any, ...], subject: str | None, on_error: _OnError
) -> tuple[Decision | None, str | None]:
    """Call ``impls`` in order (errors isolated), merge the answers, name the winner."""
    answers: list[Decision | None] = []
    for impl in impls:
        try:
            answer = impl.fn(*args)
            if impl.is_async or (
                # a def that returns an awaitable (a decorated coroutine function, say)
                answer is not None
                and type(answer) not in impl.allowed
                and inspect.isawaitable(answer)
            ):
                answer = await _await(impl, answer)
        except _HookTimeout:
            answer = _isolate(
                impl, impl.error(subject, f"timed out after {impl.timeout:g} s"), on_error
            )
        except Exception as exc:
            error = impl.error(subject, f"raised {type(exc).__name__}: {exc}")
            error.__cause__ = exc
            answer = _isolate(impl, error, on_error)
        else:
            if answer is not None:
                if type(answer) not in impl.allowed:
                    allowed = ", ".join(t.__name__ for t in impl.allowed) or "nothing"
                    error = impl.error(subject, f"returned {answer!r}; None or {allowed} expected")
                    answer = _isolate(impl, error, on_error)
                elif impl.chain is not None and type(answer) is Replace:
                    # each hook sees the value as replaced by those before it
                    try:
                        args = impl.chain(args, answer.value)
                    except BadReplace as exc:
                        answer = _isolate(impl, impl.error(subject, f"answered {exc}"), on_error)
        answers.append(answer)
    if answers.count(None) == len(answers):  # the common case: no hook had an opinion
        return None, None
    i = pick(answers, chained=impls[0].chain is not None)
    return answers[i], impls[i].label


class _HookTimeout(Exception):
    """A hook call ran past its timeout (internal)."""


async def _await(impl: HookImpl, answer: Awaitable[Any]) -> Any:
    if impl.timeout is None:
        return await answer
    with anyio.move_on_after(impl.timeout):
        return await answer
    raise _HookTimeout  # only reached when the timeout cancelled the call


async def _call_traced(
    impls: Sequence[HookImpl],
    args: tuple[Any, ...],
    subject: str | None,
    on_error: _OnError,
    tracer: Tracer,
) -> tuple[Decision | None, str | None]:
    """``_call_all`` with a ``hook {moment}`` span around each call."""
    answers: list[Decision | None] = []
    for impl in impls:
        with hook_span(
            tracer, impl.moment, hook_type="python", name=impl.name, subject=subject
        ) as span:
            errors: list[HookError] = []
            answer, _ = await _call_all((impl,), args, subject, errors.append)
            for error in errors:
                record_hook_error(span, error, impl.name)
                record_error(span, error)
                if on_error is not None:
                    on_error(error)
            if answer is not None:
                record_decision(span, answer, impl.label)
        if impl.chain is not None and type(answer) is Replace:
            args = impl.chain(args, answer.value)  # checked by _call_all already
        answers.append(answer)
    i = pick(answers, chained=impls[0].chain is not None)
    return (answers[i], impls[i].label) if i >= 0 else (None, None)


def _isolate(impl: HookImpl, error: HookError, on_error: _OnError) -> Fail | None:
    logger.warning("%s", error, exc_info=error.__cause__ or error)
    if on_error is not None:
        on_error(error)
    return Fail(f"fail-closed {error}") if impl.fail_closed else None
