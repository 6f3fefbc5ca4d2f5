"""The run's own hooks: ``before_run``, ``on_end`` once per task, ``after_run`` (internal)."""

from __future__ import annotations

import time
from collections import deque
from typing import TYPE_CHECKING

import anyio
import attrs

from orchestra._hooks import RunContext
from orchestra.dag._contexts import end_context
from orchestra.dag._result import RunResult

if TYPE_CHECKING:
    from orchestra.dag._scheduler import _Run

__all__ = ["before_run", "end_run", "end_tasks"]


def run_context(run: _Run) -> RunContext:
    return RunContext(
        dag=run.dag.name,
        run_id=run.run_id,
        task_ids=tuple(task.id for task in run.state.order),
        started_at=run.started,
        resumed_from=run.journal.resumed_from if run.journal is not None else None,
    )


async def before_run(run: _Run) -> bool:
    """``before_run`` hooks; True when a ``Fail`` ended the run before any task.

    Every task then ends CANCELLED without starting, the decision as its reason.
    """
    decision, by = await run.chain.call(
        "before_run",
        run_context(run),
        subject=run.dag.name,
        on_error=run.record,
        tracer=run.tracer,
    )
    if decision is None:
        return False
    reason = getattr(decision, "reason", None)
    run.state.cancel_unfinished(f"run failed by {by}" + (f": {reason}" if reason else ""))
    return True


async def end_run(run: _Run) -> RunResult:
    """``on_end`` for the tasks still due, then ``after_run``; the run's result."""
    if run.ending:
        await end_tasks(run)
    run.finished = time.monotonic()
    result = run.result()
    if run.chain.has("after_run"):
        recorded = len(run.hook_errors)
        await run.chain.call(
            "after_run",
            run_context(run),
            result,
            subject=run.dag.name,
            on_error=run.record,
            tracer=run.tracer,
        )
        if len(run.hook_errors) > recorded:  # after_run's own errors are on the result too
            result = attrs.evolve(result, hook_errors=tuple(run.hook_errors))
    return result


async def end_tasks(run: _Run) -> None:
    """``on_end`` for each task that reached its terminal state, once each, in order.

    Shielded: a cancellation of the run (``fail_fast``, say) cuts none short; each call
    is bounded by its hook's timeout.
    """
    with anyio.CancelScope(shield=True):
        await _end_each(run, run.ending)


async def ends_first(run: _Run, i: int) -> None:
    """Wait until the ``on_end`` calls of task ``i``'s upstreams returned."""
    upstreams = run.plan.upstreams[i]
    while not run.ends_pending.isdisjoint(upstreams):
        if run.ending:  # due and not started: make them here
            await end_tasks(run)
            continue
        if run.ends_over is None:
            run.ends_over = anyio.Event()
        await run.ends_over.wait()


async def _end_each(run: _Run, ending: deque[int]) -> None:
    while ending:
        i = ending.popleft()
        ctx = end_context(run, i)
        try:
            await run.chain.call(
                "on_end",
                ctx,
                run.state.states[i],
                subject=ctx.task.id,
                on_error=run.record,
                tracer=run.tracer,
            )
        finally:
            run.ends_pending.discard(i)
            if run.ends_over is not None:  # tasks wait on it: they look again
                run.ends_over.set()
                run.ends_over = None
        if ctx._notes:
            run.messages[ctx.task.id] = ctx.messages
