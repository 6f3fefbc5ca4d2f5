"""The attempt driver: every attempt of one piece of work, without I/O (as tenacity's).

An engine feeds ``TaskAttempts`` what happened and does what it answers::

    attempts = driver.begin(task, inputs, context=make_context)
    while True:
        answer = attempts.started(span)          # DoRun | DoGive | DoSkip | DoFail
        if type(answer) is DoRun:
            try:
                output = body(answer.inputs)
            except Exception as exc:
                answer = attempts.failed(exc)    # DoSleep | DoGive | DoSkip | DoFail
            else:
                answer = attempts.succeeded(output)  # DoGive | DoFail
        if type(answer) is DoSleep:
            time.sleep(answer.delay)
            continue
        return answer                            # settled, on_end called once

or lets ``run_sync``/``run_async`` do exactly that. Each event is one generator
(``_start``, ``_succeed``, ``_fail``) that yields the hook calls it needs and returns the
answer; ``started``/``succeeded``/``failed`` drive it from synchronous code (``def``
hooks inline, ``async def`` ones on a loop of their own: Hamilton's sync lifecycle,
LangGraph's ``invoke``), ``astarted``/``asucceeded``/``afailed`` on the caller's loop.
So what a decision means is written once, for both forms.

What the driver owns: the merge (``HookChain``), the attempt cap, the run's retry
budget and the task's own ``retries`` (``orchestra._attempts.after_failure``, the rule
orchestra's scheduler and dispatcher share), the reasons (``"skipped by X: why"``), the
decisions and errors on the attempt's span, and ``on_end`` exactly once.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Awaitable, Callable
from typing import Any, Final, TypeAlias, TypeVar, final

import anyio
from opentelemetry import trace
from opentelemetry.trace import Span, Tracer

from orchestra._attempts import DEFAULT_MAX_ATTEMPTS, RetryBudget
from orchestra._chain import HookChain
from orchestra._errors import HookError
from orchestra.bridge._answers import DoRun, DoSleep, Ended
from orchestra.bridge._flow import ContextFactory, Flow, Steps
from orchestra.dag import Task
from orchestra.tracing import names

__all__ = ["AttemptDriver", "ContextFactory", "SpanFactory", "TaskAttempts"]

_T = TypeVar("_T")
_Passthrough: TypeAlias = tuple[type[BaseException], ...]
_MOMENTS: Final = ("before_execute", "after_execute", "on_failure", "on_end")
SpanFactory: TypeAlias = Callable[[int, "Span | None"], "Span | None"]
"""Starts the span of attempt N (given the previous attempt's span), or None."""


@final
class AttemptDriver:
    """The task moments of one ``HookChain``, compiled once; ``begin`` drives a task's attempts.

    Args:
        chain: the hooks (a ``TaskHooks`` chain).
        max_attempts: the attempt cap no hook can lift.
        task_retries: whether a task's own ``retries``/``retry_delay`` decide when no hook
            has an opinion (False for an engine that applies its own retry policy then:
            ``DoFail.decision`` is None for such a plain failure).
        calls_on_end: whether the driver calls ``on_end`` when the work ends (False for an
            engine whose own final state calls it: Prefect's state hooks).

    Attributes:
        hooked: whether any hook implements a task moment (else an engine may skip the
            driver entirely: it would answer ``DoRun`` and ``DoGive`` only).
    """

    __slots__ = ("awaiting", "chain", "has", "hooked", "max_attempts", "task_retries")

    def __init__(
        self,
        chain: HookChain,
        *,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        task_retries: bool = True,
        calls_on_end: bool = True,
    ) -> None:
        if not isinstance(max_attempts, int) or max_attempts < 1:
            raise ValueError(f"max_attempts must be an int >= 1, got {max_attempts!r}")
        self.chain = chain
        self.max_attempts = max_attempts
        self.task_retries = task_retries
        self.has = {m: chain.has(m) and (calls_on_end or m != "on_end") for m in _MOMENTS}
        self.hooked = any(self.has.values())
        self.awaiting = frozenset(m for m in _MOMENTS if chain.awaits(m))

    def begin(
        self,
        task: Task,
        inputs: Any,
        *,
        context: ContextFactory,
        on_error: Callable[[HookError], object] | None = None,
        tracer: Tracer | None = None,
        budget: RetryBudget | None = None,
        attempt: int = 0,
        errors: tuple[BaseException, ...] = (),
        settle: Callable[[TaskAttempts, Ended], object] | None = None,
    ) -> TaskAttempts:
        """The attempts of one run of ``task`` with ``inputs``.

        Args:
            task: the task (its ``id`` names it in reasons and errors).
            inputs: what the body gets unless a ``before_execute`` hook replaces it.
            context: builds each attempt's hook context.
            on_error: gets each ``HookError`` (a run's ``hook_errors.append``).
            tracer: puts each hook call in a span (None: none).
            budget: the run's retry budget, spent by each retry that goes ahead.
            attempt: attempts made already (an engine that counts its own runs, Prefect).
            errors: the errors of those attempts.
            settle: called with the attempts and their ending answer before the ``on_end``
                hooks run (a bound method of the engine's run, say: no closure, no cycle).
        """
        return TaskAttempts(
            self, task, inputs, context, (on_error, tracer, budget, settle), attempt, errors
        )


@final
class TaskAttempts(Flow):
    """Every attempt of one run of a task: feed it events, carry out its answers.

    Read by the context factory: ``task``, ``attempt`` (1-based once started), ``errors``
    (the attempts' errors so far), ``inputs`` (as replaced), ``started_at``, ``notes``
    (the messages the attempt's contexts share) and ``span`` (the attempt's, or None).
    Made by ``AttemptDriver.begin``.
    """

    __slots__ = ()

    # -- the events, sync and async --------------------------------------------------------

    def started(self, span: Span | None = None) -> DoRun | Ended:
        """An attempt starts (``span`` its span): run the body, or how the work ends unrun."""
        return self._drive(self._start(span))

    def succeeded(self, output: Any) -> Ended:
        """The body returned ``output``: how the work ends (``DoGive``, or ``DoFail``)."""
        return self._drive(self._succeed(output))

    def failed(self, error: Exception) -> DoSleep | Ended:
        """The body raised ``error``: wait and retry, or how the work ends."""
        return self._drive(self._fail(error))

    def never_ran(self, state: Any) -> None:
        """The work ends in ``state`` without any attempt (its upstream failed): ``on_end``."""
        self._drive(self._unrun(state))

    async def astarted(self, span: Span | None = None) -> DoRun | Ended:
        """``started``, on the caller's event loop."""
        return await self._adrive(self._start(span))

    async def asucceeded(self, output: Any) -> Ended:
        """``succeeded``, on the caller's event loop."""
        return await self._adrive(self._succeed(output))

    async def afailed(self, error: Exception) -> DoSleep | Ended:
        """``failed``, on the caller's event loop."""
        return await self._adrive(self._fail(error))

    async def anever_ran(self, state: Any) -> None:
        """``never_ran``, on the caller's event loop."""
        await self._adrive(self._unrun(state))

    # -- the whole loop, sync and async ----------------------------------------------------

    def run_sync(
        self,
        body: Callable[[Any], Any],
        *,
        spans: SpanFactory | None = None,
        passthrough: _Passthrough = (),
    ) -> Ended:
        """Every attempt, from synchronous code: ``body(inputs)`` each time; how it ended.

        Args:
            body: runs the work on the inputs and returns its output.
            spans: starts each attempt's span (it is current while the body runs).
            passthrough: exceptions that are not failures (an engine's control flow):
                they propagate untouched.
        """
        span = None
        while True:
            span = spans(self.attempt + 1, span) if spans is not None else None
            try:
                answer = self._one_sync(body, span, passthrough)
            finally:
                _close(span, self._ended)
            if not isinstance(answer, DoSleep):
                return answer
            if answer.delay:
                time.sleep(answer.delay)

    def _one_sync(
        self, body: Callable[[Any], Any], span: Span | None, passthrough: _Passthrough
    ) -> DoSleep | Ended:
        answer = self.started(span)
        if not isinstance(answer, DoRun):
            return answer
        try:
            with _current(span):
                output = body(answer.inputs)
        except passthrough:
            raise
        except Exception as exc:
            return self.failed(exc)
        return self.succeeded(output)

    async def run_async(
        self,
        body: Callable[[Any], Awaitable[Any]],
        *,
        spans: SpanFactory | None = None,
        passthrough: _Passthrough = (),
    ) -> Ended:
        """``run_sync`` on the caller's event loop (asyncio or trio), awaiting ``body(inputs)``."""
        span = None
        while True:
            span = spans(self.attempt + 1, span) if spans is not None else None
            try:
                answer = await self._one_async(body, span, passthrough)
            finally:
                _close(span, self._ended)
            if not isinstance(answer, DoSleep):
                return answer
            if answer.delay:
                await anyio.sleep(answer.delay)

    async def _one_async(
        self, body: Callable[[Any], Awaitable[Any]], span: Span | None, passthrough: _Passthrough
    ) -> DoSleep | Ended:
        answer = await self.astarted(span)
        if not isinstance(answer, DoRun):
            return answer
        try:
            with _current(span):
                output = await body(answer.inputs)
        except passthrough:
            raise
        except Exception as exc:
            return await self.afailed(exc)
        return await self.asucceeded(output)

    # -- the two drivers: where the hook calls happen ---------------------------------------

    def _drive(self, flow: Steps[_T]) -> _T:
        d, how = self._d, self._how
        try:
            moment, args = next(flow)
            while True:
                with _current(self.span):  # the hooks' spans nest under the attempt's
                    if moment in d.awaiting:  # an async def hook: a loop of its own
                        call = d.chain.call(moment, *args, **how)
                        merged = HookChain.run_now(call, needs_loop=True)
                    else:
                        merged = d.chain.call_now(moment, *args, **how)
                moment, args = flow.send(merged)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]  # the flow's own answer

    async def _adrive(self, flow: Steps[_T]) -> _T:
        d, how = self._d, self._how
        try:
            moment, args = next(flow)
            while True:
                with _current(self.span):
                    if moment in d.awaiting:
                        merged = await d.chain.call(moment, *args, **how)
                    else:
                        merged = d.chain.call_now(moment, *args, **how)
                moment, args = flow.send(merged)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]  # the flow's own answer


_NO_SPAN: Final = contextlib.nullcontext()


def _current(span: Span | None) -> contextlib.AbstractContextManager[Any]:
    """Make an attempt's span the current one (its children nest); nothing when None."""
    return _NO_SPAN if span is None else trace.use_span(span, end_on_exit=False)


def _close(span: Span | None, ended: Ended | None) -> None:
    """End an attempt's span, with the state the work ended in (if it ended)."""
    if span is None:
        return
    if ended is not None and span.is_recording():
        span.set_attribute(names.ATTR_TASK_STATE, ended.state.value)
    span.end()
