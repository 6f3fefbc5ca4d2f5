"""One node of a hooked graph, all its attempts, through the node moments (internal).

Each attempt: ``before_execute`` hooks, the node's own runnable, then ``after_execute``
hooks or the decision of the ``on_failure`` hooks; the node run then settles and its
``on_end`` hooks run once. What a decision does is decided once, in the steps of
``HookedNode``; the attempt loop is written twice, for ``invoke``/``stream`` (worker
threads, no event loop: ``def`` hooks are called with ``HookChain.call_now``) and for
``ainvoke``/``astream`` (awaited on the graph's loop).

Decisions in LangGraph's terms: ``Skip`` leaves the state unchanged (the node's update
is None), ``Fail`` raises (``orchestra.TaskFailed`` before the node, the node's own error
after it), ``Retry`` runs the node's runnable again, ``Replace`` changes the state the node
gets (``before_execute``) or the update it returns (``after_execute``, ``on_failure``).
Interrupts and ``Command(graph=PARENT)`` (LangGraph's ``GraphBubbleUp``) are not
failures: they pass through untouched.
"""

from __future__ import annotations

import asyncio
import time
from types import MappingProxyType
from typing import Any, Final, TypeAlias, final

from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda
from langgraph.errors import GraphBubbleUp
from opentelemetry import trace
from opentelemetry.trace import Span

import orchestra
import orchestra.tracing as ot
from orchestra import Fail, HookChain, Replace, Retry, Skip, TaskFailed, TaskState
from orchestra_langgraph._run import Run, current
from orchestra_langgraph._sync import blocking

__all__ = ["HookedNode", "Moments", "node_runnable", "reason"]

_SUCCEEDED: Final = TaskState.SUCCEEDED
_End: TypeAlias = tuple[TaskState, Any, BaseException | None]
"""How a node run ends: its state, its update, the error it raises (if any)."""
_MOMENTS: Final = ("before_execute", "after_execute", "on_failure", "on_end")


@final
class Moments:
    """The node moments of one chain: which have hooks, which must be awaited."""

    __slots__ = ("awaiting", "chain", "has", "hooked", "max_attempts")

    def __init__(self, chain: HookChain, max_attempts: int) -> None:
        self.chain = chain
        self.max_attempts = max_attempts
        self.has = {m: chain.has(m) for m in _MOMENTS}
        self.hooked = any(self.has.values())
        self.awaiting = frozenset(m for m in _MOMENTS if chain.awaits(m))

    def call_sync(self, run: Run, moment: str, ctx: Any, *more: Any) -> tuple[Any, str | None]:
        """Call one moment's hooks from a worker thread."""
        how: dict[str, Any] = {"subject": ctx.task.id, "on_error": run.record, "tracer": run.tracer}
        if moment in self.awaiting:
            return blocking(lambda: self.chain.call(moment, ctx, *more, **how))
        return self.chain.call_now(moment, ctx, *more, **how)

    async def call_async(
        self, run: Run, moment: str, ctx: Any, *more: Any
    ) -> tuple[Any, str | None]:
        """Call one moment's hooks on the graph's event loop."""
        how: dict[str, Any] = {"subject": ctx.task.id, "on_error": run.record, "tracer": run.tracer}
        if moment in self.awaiting:
            return await self.chain.call(moment, ctx, *more, **how)
        return self.chain.call_now(moment, ctx, *more, **how)


@final
class HookedNode:
    """A node's runnable with the node moments around it."""

    __slots__ = ("inner", "moments", "task")

    def __init__(self, name: str, inner: Runnable[Any, Any], moments: Moments, metadata: Any):
        self.inner = inner
        self.moments = moments
        self.task = orchestra.Task(
            id=name, fn=inner.invoke, metadata=MappingProxyType(dict(metadata or {}))
        )

    # -- the attempt loop, twice ----------------------------------------------------------

    def invoke(self, state: Any, config: RunnableConfig) -> Any:
        """Every attempt of one node run under ``invoke``/``stream``."""
        run = current.get()
        if run is None:  # the node runs outside a hooked run (a graph invoked unhooked)
            return self.inner.invoke(state, config)
        m, name = self.moments, self.task.id
        started, span, attempt = time.monotonic(), None, 0
        errors: tuple[BaseException, ...] = ()
        while True:
            attempt += 1
            run.attempts[name] = run.attempts.get(name, 0) + 1
            span = run.attempt_span(name, attempt, span)
            notes: list[str] = []
            end: _End | None = None
            try:
                if m.has["before_execute"]:
                    ctx = run.context(self.task, attempt, errors, started, state, notes)
                    decision, by = m.call_sync(run, "before_execute", ctx)
                    state, end = self.before(run, decision, by, span, attempt, state)
                if end is None:
                    try:
                        with _current_span(span):
                            update = self.inner.invoke(state, config)
                    except GraphBubbleUp:
                        raise
                    except Exception as exc:
                        errors += (exc,)
                        decision = by = None
                        if m.has["on_failure"]:
                            ctx = run.context(self.task, attempt, errors, started, state, notes)
                            decision, by = m.call_sync(run, "on_failure", ctx, exc)
                        delay, end = self.failed(run, exc, decision, by, span, attempt)
                        if end is None:
                            time.sleep(delay)
                            continue
                    else:
                        end = (_SUCCEEDED, update, None)
                        if m.has["after_execute"]:
                            ctx = run.context(self.task, attempt, errors, started, state, notes)
                            decision, by = m.call_sync(run, "after_execute", ctx, update)
                            end = self.after(run, decision, by, span, attempt, update)
                run.settle(name, end[0], started)
                if m.has["on_end"]:
                    ctx = run.context(self.task, attempt, errors, started, state, notes)
                    m.call_sync(run, "on_end", ctx, end[0])
            finally:
                _close(span, run, name)
            if end[2] is not None:
                raise end[2]
            return end[1]

    async def ainvoke(self, state: Any, config: RunnableConfig) -> Any:
        """Every attempt of one node run under ``ainvoke``/``astream`` (``invoke``, awaiting)."""
        run = current.get()
        if run is None:
            return await self.inner.ainvoke(state, config)
        m, name = self.moments, self.task.id
        started, span, attempt = time.monotonic(), None, 0
        errors: tuple[BaseException, ...] = ()
        while True:
            attempt += 1
            run.attempts[name] = run.attempts.get(name, 0) + 1
            span = run.attempt_span(name, attempt, span)
            notes: list[str] = []
            end: _End | None = None
            try:
                if m.has["before_execute"]:
                    ctx = run.context(self.task, attempt, errors, started, state, notes)
                    decision, by = await m.call_async(run, "before_execute", ctx)
                    state, end = self.before(run, decision, by, span, attempt, state)
                if end is None:
                    try:
                        with _current_span(span):
                            update = await self.inner.ainvoke(state, config)
                    except GraphBubbleUp:
                        raise
                    except Exception as exc:
                        errors += (exc,)
                        decision = by = None
                        if m.has["on_failure"]:
                            ctx = run.context(self.task, attempt, errors, started, state, notes)
                            decision, by = await m.call_async(run, "on_failure", ctx, exc)
                        delay, end = self.failed(run, exc, decision, by, span, attempt)
                        if end is None:
                            await asyncio.sleep(delay)
                            continue
                    else:
                        end = (_SUCCEEDED, update, None)
                        if m.has["after_execute"]:
                            ctx = run.context(self.task, attempt, errors, started, state, notes)
                            decision, by = await m.call_async(run, "after_execute", ctx, update)
                            end = self.after(run, decision, by, span, attempt, update)
                run.settle(name, end[0], started)
                if m.has["on_end"]:
                    ctx = run.context(self.task, attempt, errors, started, state, notes)
                    await m.call_async(run, "on_end", ctx, end[0])
            finally:
                _close(span, run, name)
            if end[2] is not None:
                raise end[2]
            return end[1]

    # -- the steps both loops share ---------------------------------------------------------

    def before(
        self, run: Run, decision: Any, by: str | None, span: Span | None, attempt: int, state: Any
    ) -> tuple[Any, _End | None]:
        """A ``before_execute`` decision: the state replaced, or how the node ends unrun."""
        if decision is None:
            return state, None
        if type(decision) is Replace:
            return decision.value, None
        _decided(span, decision, by, attempt)
        return state, _refused(run, self.task.id, decision, by)

    def failed(
        self,
        run: Run,
        exc: Exception,
        decision: Any,
        by: str | None,
        span: Span | None,
        attempt: int,
    ) -> tuple[float, _End | None]:
        """After a failed attempt: a retry's delay, or how the node run ends."""
        name, cap = self.task.id, self.moments.max_attempts
        if span is not None:
            ot.record_error(span, exc)
        if isinstance(decision, Retry):
            _decided(span, decision, by, attempt)
            if attempt < cap:
                if span is not None:
                    span.set_attribute(ot.names.ATTR_TASK_STATE, ot.names.STATE_RETRYING)
                return decision.delay, None
            decision, by = Fail(f"attempt cap of {cap} reached"), "orchestra"
        if decision is not None:
            _decided(span, decision, by, attempt)
        run.errors[name] = exc
        if type(decision) is Replace:  # recovered: the substitute is the update
            return 0.0, (_SUCCEEDED, decision.value, None)
        if isinstance(decision, Skip):
            run.reasons[name] = f"skipped by {by}" + reason(decision)
            return 0.0, (TaskState.SKIPPED, None, None)
        if decision is not None:
            run.reasons[name] = f"failed by {by}" + reason(decision)
            exc.add_note(f"orchestra: {run.reasons[name]}")
        return 0.0, (TaskState.FAILED, None, exc)

    def after(
        self, run: Run, decision: Any, by: str | None, span: Span | None, attempt: int, update: Any
    ) -> _End:
        """An ``after_execute`` decision: the update replaced, or a fail-closed hook error."""
        if decision is None:
            return (_SUCCEEDED, update, None)
        if type(decision) is Replace:
            return (_SUCCEEDED, decision.value, None)
        _decided(span, decision, by, attempt)
        return _refused(run, self.task.id, decision, by)


def node_runnable(node: HookedNode, name: str) -> Runnable[Any, Any]:
    """The runnable LangGraph runs for a hooked node (sync and async)."""
    return RunnableLambda(node.invoke, node.ainvoke, name=name)


def _refused(run: Run, name: str, decision: object, by: str | None) -> _End:
    """A node given up: ``Skip`` -> no update, ``Fail`` (or a fail-closed error) -> raise."""
    if isinstance(decision, Skip):
        run.reasons[name] = f"skipped by {by}" + reason(decision)
        return (TaskState.SKIPPED, None, None)
    run.reasons[name] = f"failed by {by}" + reason(decision)
    error = run.errors[name] = TaskFailed(name, getattr(decision, "reason", None))
    return (TaskState.FAILED, None, error)


class _current_span:  # used as a context manager, like a function
    """Make an attempt's span the current one while the node runs (its children nest)."""

    __slots__ = ("_cm", "_span")

    def __init__(self, span: Span | None) -> None:
        self._span = span
        self._cm: Any = None

    def __enter__(self) -> None:
        if self._span is not None:
            self._cm = trace.use_span(self._span, end_on_exit=False)
            self._cm.__enter__()

    def __exit__(self, *exc: object) -> None:
        if self._cm is not None:
            self._cm.__exit__(None, None, None)


def _close(span: Span | None, run: Run, name: str) -> None:
    if span is None:
        return
    if span.is_recording() and name in run.states:
        span.set_attribute(ot.names.ATTR_TASK_STATE, run.states[name].value)
    span.end()


def reason(decision: object) -> str:
    """``": reason"`` of a decision that gives one, else ``""``."""
    why = getattr(decision, "reason", None)
    return f": {why}" if why else ""


def _decided(span: Span | None, decision: object, by: str | None, attempt: int) -> None:
    if span is not None:
        ot.record_decision(span, decision, by, attempt=attempt)
