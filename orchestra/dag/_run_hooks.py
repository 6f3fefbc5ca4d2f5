"""The run's own hooks: ``before_run``, ``on_end`` once per task, ``after_run`` (internal)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import anyio
import attrs

from orchestra._hooks import NO_INPUTS, RunContext, TaskHookContext, task_context
from orchestra.dag._result import RunResult
from orchestra.dag._task_run import upstream_states

if TYPE_CHECKING:
    from orchestra.dag._scheduler import _Run

__all__ = ["before_run", "end_run", "end_tasks"]


def run_context(run: _Run) -> RunContext:
    return RunContext(
        dag=run.dag.name,
        run_id=run.run_id,
        task_ids=tuple(task.id for task in run.order),
        started_at=run.started,
        resumed_from=run.journal.resumed_from if run.journal is not None else None,
    )


async def before_run(run: _Run) -> bool:
    """``before_run`` hooks; True when a ``Fail`` ended the run before any task."""
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
    why = f"run failed by {by}" + (f": {reason}" if reason else "")
    for task in run.order:  # every task ends CANCELLED without starting
        run.reasons[task.id] = why
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

    A ``def`` hook cannot be interrupted (it never awaits); ``async`` ones are
    shielded, so a cancellation of the run (``fail_fast``, say) cuts none short.
    """
    if run.end_awaits:
        with anyio.CancelScope(shield=True):
            await call_on_end(run)
    else:
        await call_on_end(run)


async def call_on_end(run: _Run) -> None:
    ending = run.ending
    call = run.chain.call
    while ending:
        i = ending.popleft()
        ctx = end_context(run, i)
        await call(
            "on_end",
            ctx,
            run.states[i],
            subject=ctx.task.id,
            on_error=run.record,
            tracer=run.tracer,
        )
        if ctx._notes:
            run.messages[ctx.task.id] = ctx.messages


def end_context(run: _Run, i: int) -> TaskHookContext:
    """The context of task ``i``'s ``on_end``: its last attempt's, or attempt 0."""
    task = run.order[i]
    ran = run.ends.pop(i, None)
    if ran is None:  # it never started
        errors, started, inputs, notes = (), 0.0, NO_INPUTS, []
    else:
        errors, started, inputs, notes = ran
    return task_context(
        task,
        run.attempts[i],
        task.agent,
        run.run_id,
        errors,
        started,
        inputs,
        upstream_states(run, i),
        notes,
    )
