"""One node of a Hamilton run, all its attempts, through the node moments (internal).

Each attempt: ``before_execute`` hooks, the node's lifecycle (the body Hamilton gives
``do_remote_execute``), then ``after_execute`` hooks or the decision of the
``on_failure`` hooks (``failed``); the node then settles and its ``on_end`` hooks run.
What a decision does is decided once, in the steps of ``Nodes``; the attempt loop is
written twice, as a function for the synchronous driver (``run_sync``: no coroutine, no
event loop; an ``async def`` hook gets a loop of its own, a retry's delay blocks) and as
a coroutine for the async driver (``run_async``: the asyncio task Hamilton awaits).

A moment no hook implements costs one boolean; a moment of ``def`` hooks is called with
``HookChain.call_now``; one context serves every moment of an attempt until a
``Replace`` of the inputs changes them; spans exist only when tracing is on.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from collections.abc import Awaitable, Callable, Mapping
from types import MappingProxyType
from typing import Any, Final, TypeAlias, final

from opentelemetry.trace import Span

import orchestra
import orchestra.tracing as ot
from orchestra import Fail, HookChain, HookError, Replace, Retry, Skip, TaskFailed, TaskState
from orchestra_hamilton._run import Run

__all__ = ["Nodes", "reason"]

_SUCCEEDED: Final = TaskState.SUCCEEDED
_End: TypeAlias = tuple[TaskState, Any, BaseException | None]
"""How a node ends: its state, its value downstream, the error it raises (if any)."""


@final
class Nodes:
    """The node moments of one adapter's chain, and the steps of a node's attempts.

    Attributes:
        hooked: whether any hook implements a node moment.
        tasks: by ``id(node)``: a weak reference to the Hamilton node and the
            ``orchestra.Task`` standing for it, made once per node (across runs; a node's
            ``name`` is a property Hamilton joins anew each time).
    """

    __slots__ = (
        "awaiting",
        "call",
        "chain",
        "has_after",
        "has_before",
        "has_end",
        "has_failure",
        "hooked",
        "max_attempts",
        "tasks",
    )

    def __init__(self, chain: HookChain, max_attempts: int) -> None:
        self.chain = chain
        self.max_attempts = max_attempts
        self.has_before = chain.has("before_execute")
        self.has_after = chain.has("after_execute")
        self.has_failure = chain.has("on_failure")
        self.has_end = chain.has("on_end")
        self.hooked = self.has_before or self.has_after or self.has_failure or self.has_end
        moments = ("before_execute", "after_execute", "on_failure", "on_end")
        self.awaiting = frozenset(m for m in moments if chain.awaits(m))
        # how the synchronous driver calls a moment: HookChain.call_now itself, unless an
        # async def hook implements one
        self.call: Callable[..., tuple[Any, str | None]] = (
            self._call_sync if self.awaiting else chain.call_now
        )
        self.tasks: dict[int, tuple[weakref.ref[Any], orchestra.Task]] = {}

    def task(self, node: Any) -> orchestra.Task:
        """The ``orchestra.Task`` standing for a node: id its name, metadata its tags."""
        known = self.tasks.get(id(node))
        if known is not None and known[0]() is node:
            return known[1]
        task = orchestra.Task(
            id=node.name,
            fn=node.callable,
            deps=[d.name for d in node.dependencies],
            metadata=MappingProxyType(dict(node.tags)),
        )
        key = id(node)
        self.tasks[key] = (weakref.ref(node, lambda _: self.tasks.pop(key, None)), task)
        return task

    # -- the attempt loop, twice -------------------------------------------------------------

    def run_sync(self, run: Run, node: Any, body: Callable[..., Any], kwargs: Any) -> Any:
        """Every attempt of one node under the synchronous driver."""
        known = self.tasks.get(id(node))
        task = known[1] if known is not None and known[0]() is node else self.task(node)
        name = task.id
        started = time.monotonic()
        errors: tuple[BaseException, ...] = ()
        span: Span | None = None
        attempt = 0
        while True:
            attempt += 1
            run.attempts[name] = attempt
            if run.trace is not None:
                span = run.trace.attempt(name, attempt, span)
            ctx = end = None
            notes: list[str] = []  # the messages of this attempt, shared by its contexts
            try:
                if self.has_before:
                    ctx = run.context(task, attempt, errors, started, kwargs, notes)
                    decision, by = self.call(
                        "before_execute", ctx, subject=name, on_error=run.record, tracer=run.tracer
                    )
                    if decision is not None:
                        kwargs, end = self.before(run, task, decision, by, span, attempt, kwargs)
                        ctx = None
                if end is None:
                    try:
                        result = body(**kwargs)
                    except Exception as exc:
                        errors += (exc,)
                        decision = by = None
                        if self.has_failure:
                            ctx = run.context(task, attempt, errors, started, kwargs, notes)
                            decision, by = self.call(
                                "on_failure",
                                ctx,
                                exc,
                                subject=name,
                                on_error=run.record,
                                tracer=run.tracer,
                            )
                        delay, end = self.failed(run, name, exc, decision, by, span, attempt)
                        if end is None:
                            if delay:
                                time.sleep(delay)
                            continue
                    else:
                        end = (_SUCCEEDED, result, None)
                        if self.has_after:
                            if ctx is None:
                                ctx = run.context(task, attempt, errors, started, kwargs, notes)
                            decision, by = self.call(
                                "after_execute",
                                ctx,
                                result,
                                subject=name,
                                on_error=run.record,
                                tracer=run.tracer,
                            )
                            if decision is not None:
                                end = self.after(run, task, decision, by, span, attempt, result)
                run.settle(name, end[0], end[1], started)
                if self.has_end:  # the attempt's context, or one as it ended
                    if ctx is None:
                        ctx = run.context(task, attempt, errors, started, kwargs, notes)
                    self.call(
                        "on_end", ctx, end[0], subject=name, on_error=run.record, tracer=run.tracer
                    )
            finally:
                if span is not None:
                    _close(span, run, name)
            if end[2] is not None:
                raise end[2]
            return end[1]

    async def run_async(self, run: Run, node: Any, body: Callable[..., Any], kwargs: Any) -> Any:
        """Every attempt of one node under the async driver (``run_sync``, awaiting)."""
        # upstream nodes are asyncio tasks under the async driver
        kwargs = {k: (await v) if isinstance(v, Awaitable) else v for k, v in kwargs.items()}
        known = self.tasks.get(id(node))
        task = known[1] if known is not None and known[0]() is node else self.task(node)
        step = _Step(task, kwargs)
        span: Span | None = None
        while True:
            step.next(run)
            if run.trace is not None:
                span = run.trace.attempt(task.id, step.attempt, span)
            try:
                end = await self._attempt_async(run, step, body, span)
                if end is None:  # retried
                    continue
                run.settle(task.id, end[0], end[1], step.started)
                if self.has_end:
                    await self.acall(run, "on_end", step.context(run), end[0])
            finally:
                if span is not None:
                    _close(span, run, task.id)
            if end[2] is not None:
                raise end[2]
            return end[1]

    async def _attempt_async(
        self, run: Run, step: _Step, body: Callable[..., Any], span: Span | None
    ) -> _End | None:
        """One attempt under the async driver: how it ended, or None when it is retried."""
        task = step.task
        if self.has_before:
            decision, by = await self.acall(run, "before_execute", step.context(run))
            if decision is not None:
                step.kwargs, end = self.before(
                    run, task, decision, by, span, step.attempt, step.kwargs
                )
                step.ctx = None
                if end is not None:
                    return end
        try:
            result = body(**step.kwargs)
            if isinstance(result, Awaitable):
                result = await result
        except Exception as exc:
            step.errors += (exc,)
            step.ctx = None
            decision = by = None
            if self.has_failure:
                decision, by = await self.acall(run, "on_failure", step.context(run), exc)
            delay, end = self.failed(run, task.id, exc, decision, by, span, step.attempt)
            if end is None and delay:
                await asyncio.sleep(delay)
            return end
        if self.has_after:
            decision, by = await self.acall(run, "after_execute", step.context(run), result)
            if decision is not None:
                return self.after(run, task, decision, by, span, step.attempt, result)
        return (_SUCCEEDED, result, None)

    # -- the steps both loops share -----------------------------------------------------------

    def _call_sync(self, moment: str, *args: Any, **how: Any) -> tuple[Any, str | None]:
        """``HookChain.call_now``, or, for a moment with async hooks, a loop of its own."""
        if moment in self.awaiting:
            return HookChain.run_now(self.chain.call(moment, *args, **how), needs_loop=True)
        return self.chain.call_now(moment, *args, **how)

    async def acall(self, run: Run, moment: str, ctx: Any, *more: Any) -> tuple[Any, str | None]:
        """Call one moment's hooks from the async driver."""
        subject = ctx.task.id
        if moment in self.awaiting:
            return await self.chain.call(
                moment, ctx, *more, subject=subject, on_error=run.record, tracer=run.tracer
            )
        return self.chain.call_now(
            moment, ctx, *more, subject=subject, on_error=run.record, tracer=run.tracer
        )

    def before(
        self,
        run: Run,
        task: orchestra.Task,
        decision: Any,
        by: str | None,
        span: Span | None,
        attempt: int,
        kwargs: Any,
    ) -> tuple[Any, _End | None]:
        """A ``before_execute`` decision: the inputs replaced, or how the node ends unrun."""
        if type(decision) is Replace:
            return _replaced_inputs(run, task.id, decision, by), None
        _decided(span, decision, by, attempt)
        return kwargs, _refused(run, task.id, decision, by)

    def failed(
        self,
        run: Run,
        name: str,
        exc: Exception,
        decision: Any,
        by: str | None,
        span: Span | None,
        attempt: int,
    ) -> tuple[float, _End | None]:
        """After a failed attempt: a retry's delay, or how the node ends."""
        if span is not None:
            ot.record_error(span, exc)
        if isinstance(decision, Retry):
            _decided(span, decision, by, attempt)
            if attempt < self.max_attempts:
                if span is not None:
                    span.set_attribute(ot.ATTR_TASK_STATE, ot.STATE_RETRYING)
                return decision.delay, None
            decision, by = Fail(f"attempt cap of {self.max_attempts} reached"), "orchestra"
        if decision is not None:
            _decided(span, decision, by, attempt)
        run.errors[name] = exc
        if type(decision) is Replace:  # recovered: the substitute is the output
            return 0.0, (_SUCCEEDED, decision.value, None)
        if isinstance(decision, Skip):
            run.reasons[name] = f"skipped by {by}" + reason(decision)
            return 0.0, (TaskState.SKIPPED, None, None)
        if decision is not None:
            run.reasons[name] = f"failed by {by}" + reason(decision)
            exc.add_note(f"orchestra: {run.reasons[name]}")
        return 0.0, (TaskState.FAILED, None, exc)

    def after(
        self,
        run: Run,
        task: orchestra.Task,
        decision: Any,
        by: str | None,
        span: Span | None,
        attempt: int,
        result: Any,
    ) -> _End:
        """An ``after_execute`` decision: the output replaced, or a fail-closed hook error."""
        if type(decision) is Replace:
            return (_SUCCEEDED, decision.value, None)
        _decided(span, decision, by, attempt)
        return _refused(run, task.id, decision, by)

    async def ended(self, run: Run, task: orchestra.Task, state: TaskState) -> None:
        """Call the ``on_end`` hooks of a node the run never reached (attempt 0)."""
        await self.acall(run, "on_end", run.context(task, 0, (), 0.0, {}, []), state)


def _refused(run: Run, name: str, decision: object, by: str | None) -> _End:
    """A node given up: ``Skip`` -> None downstream, ``Fail`` -> ``TaskFailed``."""
    if isinstance(decision, Skip):
        run.reasons[name] = f"skipped by {by}" + reason(decision)
        return (TaskState.SKIPPED, None, None)
    run.reasons[name] = f"failed by {by}" + reason(decision)
    error = run.errors[name] = TaskFailed(name, getattr(decision, "reason", None))
    return (TaskState.FAILED, None, error)


def _replaced_inputs(run: Run, name: str, decision: Any, by: str | None) -> dict[str, Any]:
    value = decision.value
    if not isinstance(value, Mapping):
        error = HookError(
            f"hook {by} for {name!r} answered Replace({value!r}) in before_execute: "
            "the node's inputs must be a mapping of keyword arguments",
            hook=(by or "?").split(".")[0],
            moment="before_execute",
            subject=name,
        )
        run.hook_errors.append(error)
        raise error
    return dict(value)


def _close(span: Span, run: Run, name: str) -> None:
    if span.is_recording() and name in run.states:
        span.set_attribute(ot.ATTR_TASK_STATE, run.states[name].value)
    span.end()


def reason(decision: object) -> str:
    """``": reason"`` of a decision that gives one, else ``""``."""
    why = getattr(decision, "reason", None)
    return f": {why}" if why else ""


def _decided(span: Span | None, decision: object, by: str | None, attempt: int) -> None:
    if span is not None:
        ot.record_decision(span, decision, by, attempt=attempt)


@final
class _Step:
    """What the async driver's attempts of one node share, and the current one's context."""

    __slots__ = ("attempt", "ctx", "errors", "kwargs", "notes", "started", "task")

    def __init__(self, task: orchestra.Task, kwargs: Any) -> None:
        self.task = task
        self.kwargs = kwargs
        self.started = time.monotonic()
        self.errors: tuple[BaseException, ...] = ()
        self.attempt = 0
        self.notes: list[str] = []
        self.ctx: Any = None

    def next(self, run: Run) -> None:
        """A new attempt: counted, with messages and a context of its own."""
        self.attempt += 1
        run.attempts[self.task.id] = self.attempt
        self.notes = []  # the messages of this attempt, shared by its contexts
        self.ctx = None

    def context(self, run: Run) -> Any:
        """The attempt's context as it stands (made again after its inputs or errors change)."""
        if self.ctx is None:
            self.ctx = run.context(
                self.task, self.attempt, self.errors, self.started, self.kwargs, self.notes
            )
        return self.ctx
