"""``HookChain``: the engine seam that compiles hook objects once and calls them.

The DAG scheduler, the subagent dispatcher and every integration call hooks through a
``HookChain``: it keeps, per moment of a trait, the methods that hook objects really
override (``chain.has(moment)`` is the zero-cost guard), calls them in registration
order (``orchestra._calling``), isolates their errors, and merges their answers by
precedence.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final, TypeAlias, final

import attrs

from orchestra._calling import (
    HookImpl,
    OnError,
    call_all,
    call_now,
    call_traced,
    call_traced_now,
)
from orchestra._decisions import Again, Decision
from orchestra._errors import did_you_mean
from orchestra._hooks import NO_INPUTS, TaskHookContext, TaskHooks, task_context
from orchestra._moments import MOMENTS, Moment, check, hook_objects
from orchestra._sync import run_now

if TYPE_CHECKING:
    from opentelemetry.trace import Tracer

    from orchestra.dag._model import Task, TaskState

__all__ = ["DEFAULT_HOOK_TIMEOUT", "Caller", "CallerNow", "Carries", "HookChain"]

_Answer: TypeAlias = "tuple[Decision | None, str | None]"
Caller: TypeAlias = "Callable[[tuple[Any, ...], str | None, OnError], Awaitable[_Answer]]"
"""``chain.caller(moment)``: called with the moment's arguments, the subject, on_error."""
CallerNow: TypeAlias = "Callable[[tuple[Any, ...], str | None, OnError], _Answer]"
"""``chain.caller_now(moment)``: called with the moment's arguments, the subject, on_error."""

DEFAULT_HOOK_TIMEOUT: Final = 60.0
"""Seconds a hook call may take unless the hook object or the engine says otherwise."""

Carries: TypeAlias = Mapping[str, Iterable[type[Decision] | type[Again]]]
"""The answers an engine carries out, by moment (``HookChain``'s ``carries``): decision
classes, or a base (``Again``) for every decision declared as one."""


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
        timeout: seconds a hook call may take (None = no limit), unless the hook object
            has a ``timeout`` attribute of its own. An ``async def`` call past it is
            cancelled and counts as a hook error. A ``def`` hook is called inline (it
            costs a function call) and cannot be cancelled: one still running past its
            timeout is reported while it runs (a warning on the ``orchestra`` logger
            naming the hook and the moment) and is a hook error when it returns. A hook
            object with ``blocking = True`` has its ``def`` hooks called in worker
            threads instead, where the timeout abandons them and the engine goes on.
        carries: for an engine that carries out only some of a moment's answers, the
            decision classes it carries out, by moment (a base, ``Again``, stands for
            every class under it the moment allows; a moment left out keeps every
            answer it allows). Any other answer there is a hook error, as an answer the
            moment does not allow is: logged, passed to ``on_error``, and no opinion
            (``Fail`` for a ``fail_closed`` hook). An agent bridge whose model decides
            handoffs says ``carries={"before_dispatch": (Fail,)}``, and a hook's
            ``Delegate`` there is refused by name instead of silently dropped. Checked
            once, here: nothing is added to a call.

    Raises:
        TypeError: ``trait`` is not a hook trait; or an object is refused, naming it, the
            method and the closest moment: a public method whose name is close to a
            moment (``on_fail``), an overridden moment whose signature cannot take the
            moment's arguments, an object of the other trait only, an object that
            implements no moment of ``trait``, a ``timeout`` attribute that is not a
            number > 0 or None, or a ``blocking`` attribute that is not a bool. No object
            is registered when one is refused.
        ValueError: ``timeout`` is not a number > 0 or None; or ``carries`` names a
            moment the trait does not have, or a class its moment does not allow.
    """

    __slots__ = ("_async", "_awaiting", "_impls", "_trait", "timeout")

    def __init__(
        self,
        hooks: Iterable[object],
        trait: type = TaskHooks,
        timeout: float | None = DEFAULT_HOOK_TIMEOUT,
        *,
        carries: Carries | None = None,
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
        if carries is not None:
            moments = _carried(trait, moments, carries)
        # Every object is checked before any is compiled: none is half-registered.
        implemented = [(hook, check(hook, trait)) for hook in hook_objects(hooks)]
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
        self._async = frozenset(
            moment for moment, impls in self._impls.items() if any(i.is_async for i in impls)
        )
        self._awaiting = self._async | {
            moment for moment, impls in self._impls.items() if any(i.blocking for i in impls)
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
        """Whether a call of ``moment`` may suspend.

        It may when an ``async`` hook implements it, or a ``def`` hook of a ``blocking``
        object (which runs in a worker thread). A call of inline ``def`` hooks only never
        yields to the event loop, so nothing can cancel it half-way.
        """
        if moment not in self._impls:
            raise ValueError(self._unknown(moment))
        return moment in self._awaiting

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
        on_error: OnError = None,
        tracer: Tracer | None = None,
    ) -> Awaitable[tuple[Decision | None, str | None]]:
        """Call every implementation of ``moment`` in order and merge their answers.

        A ``def`` hook is called inline; one of a ``blocking`` hook object in a worker
        thread, abandoned at its timeout. A hook that raises ``Exception``, times out (an
        inline ``def`` hook: returns past its timeout), or answers something its moment
        does not allow is logged on the ``orchestra`` logger, passed to ``on_error`` as a
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
            return call_all(impls, args, subject, on_error)
        return call_traced(impls, args, subject, on_error, tracer)

    def call_now(
        self,
        moment: str,
        *args: Any,
        subject: str | None = None,
        on_error: OnError = None,
        tracer: Tracer | None = None,
    ) -> tuple[Decision | None, str | None]:
        """``call``, here and now, for a moment only ``def`` hooks implement.

        What ``await chain.call(...)`` gives, without a coroutine or an event loop: for
        engines that run nodes synchronously (Hamilton's driver, a Prefect task), where
        ``awaits(moment)`` is False. Errors are isolated as in ``call``; a ``def`` hook
        that returns an awaitable is a hook error here (it cannot be awaited). A
        ``blocking`` hook object's call is waited for here, at most its timeout.

        Raises:
            ValueError: ``moment`` is not a moment of the chain's trait.
            RuntimeError: an ``async def`` hook implements ``moment``: use ``call``.
        """
        impls = self._implementations(moment)
        if moment in self._async:
            raise RuntimeError(self._is_async(impls))
        if tracer is None:
            return call_now(impls, args, subject, on_error)
        return call_traced_now(impls, args, subject, on_error, tracer)

    def caller(self, moment: str, *, tracer: Tracer | None = None) -> Caller:
        """``call`` of one moment, bound once for an engine's hot path.

        ``chain.caller(moment, tracer=t)(args, subject, on_error)`` is
        ``chain.call(moment, *args, subject=subject, on_error=on_error, tracer=t)``
        without the cost of a call with ``*args`` and keywords (about 0.3 µs a call):
        what an engine binds once per run for a moment it calls per task.

        Raises:
            ValueError: ``moment`` is not a moment of the chain's trait.
        """
        impls = self._implementations(moment)
        if tracer is None:
            return functools.partial(call_all, impls)
        return functools.partial(call_traced, impls, tracer=tracer)

    def caller_now(self, moment: str, *, tracer: Tracer | None = None) -> CallerNow:
        """``call_now`` of one moment, bound once for an engine's hot path (see ``caller``).

        Raises:
            ValueError: ``moment`` is not a moment of the chain's trait.
            RuntimeError: an ``async def`` hook implements ``moment``: use ``caller``.
        """
        impls = self._implementations(moment)
        if moment in self._async:
            raise RuntimeError(self._is_async(impls))
        if tracer is None:
            return functools.partial(call_now, impls)
        return functools.partial(call_traced_now, impls, tracer=tracer)

    def _implementations(self, moment: str) -> tuple[HookImpl, ...]:
        try:
            return self._impls[moment]
        except KeyError:
            raise ValueError(self._unknown(moment)) from None

    @staticmethod
    def _is_async(impls: tuple[HookImpl, ...]) -> str:
        return (
            f"{', '.join(i.label for i in impls if i.is_async)} is async: "
            "await chain.call(...) instead of chain.call_now(...)"
        )

    run_now = staticmethod(run_now)
    """Run an awaitable (``chain.call(...)``, say) to its end from synchronous code.

    ``HookChain.run_now(awaitable, needs_loop=chain.awaits(moment))``: without an event
    loop when it cannot suspend (only ``def`` hooks), else on an event loop of its own
    (on a helper thread when this thread runs one already). For engines whose nodes run
    synchronously (Hamilton's driver, a Prefect task); see ``orchestra._sync``.
    """

    @staticmethod
    def task_context(
        *,
        task: Task,
        attempt: int,
        executor: str | None,
        run_id: str,
        errors: tuple[BaseException, ...] = (),
        started_at: float = 0.0,
        inputs: Mapping[str, Any] = NO_INPUTS,
        upstream_states: Mapping[str, TaskState] = NO_INPUTS,
        notes: list[str] | None = None,
    ) -> TaskHookContext:
        """A ``TaskHookContext``, built for an engine's hot path.

        The same object ``TaskHookContext(...)`` makes from the same fields, in about a
        third of the time (the frozen class's constructor pays for each field): what an
        engine calls once per task attempt.

        Args:
            task: as in ``TaskHookContext``, and so on for each field.
            attempt: the attempt number, 1-based (0 for a task that never started).
            executor: the name of the agent running the task, or None.
            run_id: the id of the run.
            errors: the errors of the task's attempts so far, oldest first.
            started_at: ``time.monotonic()`` when the first attempt started.
            inputs: the keyword arguments the body gets (a read-only mapping).
            upstream_states: each upstream task's ``TaskState``, by id.
            notes: the list every context of the attempt shares for ``add_message``
                (None: a new one).
        """
        return task_context(
            task,
            attempt,
            executor,
            run_id,
            errors,
            started_at,
            inputs,
            upstream_states,
            [] if notes is None else notes,
        )

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


def _carried(trait: type, moments: Mapping[str, Moment], carries: Carries) -> Mapping[str, Moment]:
    """The trait's moments, each narrowed to the answers the engine carries out there."""
    if not isinstance(carries, Mapping):
        raise TypeError(f"carries must be a mapping of moment -> decision classes, got {carries!r}")
    narrowed = dict(moments)
    for moment, classes in carries.items():
        spec = moments.get(moment)
        if spec is None:
            raise ValueError(
                f"carries names {moment!r}, which is not a moment of {trait.__name__}"
                + did_you_mean(str(moment), moments)
            )
        named = tuple(classes)  # a base (``Again``) stands for every allowed class under it
        kept = tuple(t for t in spec.allowed if any(_under(t, c) for c in named))
        stray = ", ".join(
            getattr(c, "__name__", repr(c))
            for c in named
            if not any(_under(t, c) for t in spec.allowed)
        )
        if stray:
            allowed = ", ".join(t.__name__ for t in spec.allowed) or "nothing"
            raise ValueError(
                f"carries[{moment!r}] holds {stray}: {trait.__name__}.{moment} may answer "
                f"{allowed} only"
            )
        narrowed[moment] = attrs.evolve(spec, allowed=kept)
    return narrowed


def _under(cls: type, named: object) -> bool:
    """Whether the decision class ``cls`` is ``named`` or declared as one (``Retry``: ``Again``)."""
    return isinstance(named, type) and issubclass(cls, named)
