"""Settling a task: the last layer of an attempt, turning a verdict into a terminal state.

Each function here ends task ``i`` through ``RunState``'s writers (``succeed``,
``fail``, ``skip``, ``cancel``) and nothing else: ``decided`` for a hook's (or the
task's own) verdict, ``end_failed`` for a failure nobody had a say on, ``end_cancelled``
and ``end_fatal`` for a cancellation and a ``BaseException``; ``recorded`` notes the
task's duration and hands its end to the run's journal (internal).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from orchestra._attempts import Verdict
from orchestra._decisions import Replace, Skip
from orchestra._errors import TaskFailed
from orchestra.tracing._engine import NO_ATTEMPT, AttemptSpan

if TYPE_CHECKING:
    from orchestra.dag._scheduler import _Run

FATAL_GRACE: Final = 0.1  # seconds the other running bodies get after a BaseException

__all__ = ["decided", "end_cancelled", "end_failed", "end_fatal", "recorded"]

_NO_VERDICT: Final = Verdict(decision=None, hook=None)  # a failure nobody had a say on
# Who took a decision, for traces, when no hook did.
_TASK_RETRIES: Final = "task.retries"
_ORCHESTRA: Final = "orchestra"


def decided(
    run: _Run,
    i: int,
    verdict: Verdict,
    error: BaseException | None,
    at: AttemptSpan = NO_ATTEMPT,
) -> None:
    """End task ``i`` as a (non-retry) verdict says; no decision means a plain failure."""
    decision = verdict.decision
    if verdict.overruled is not None:  # the hook's (or task's) Retry, refused by a cap
        at.decision(verdict.overruled, verdict.hook or _TASK_RETRIES)
        at.decision(decision, _ORCHESTRA)
    elif decision is not None:
        at.decision(decision, verdict.hook or _TASK_RETRIES)
    state = run.state
    tid = state.order[i].id
    who = f" by {verdict.hook}" if verdict.hook is not None else ""
    if isinstance(decision, Replace):  # a substitute output recovers the failure
        if run.remote is not None:
            run.remote.replaced(i, None)
        state.succeed(i, decision.value, error=error, reason=f"recovered{who}")
        return
    reason = getattr(decision, "reason", None)
    if isinstance(decision, Skip):
        state.skip(i, f"skipped{who}" + (f": {reason}" if reason else ""), error)
        return
    why = f"failed{who}" + (f": {reason}" if reason else "") if decision is not None else None
    state.fail(i, error if error is not None else TaskFailed(tid, reason), why)
    if run.fail_fast:
        run.stop()


def end_failed(run: _Run, i: int, error: Exception) -> None:
    """Task ``i``'s only attempt failed, no hook or retry to ask: FAILED with ``error``."""
    decided(run, i, _NO_VERDICT, error)


def end_cancelled(run: _Run, i: int, failure: BaseException | None) -> None:
    """Task ``i`` was cancelled: CANCELLED, or FAILED if its body had failed meanwhile."""
    if run.state.states[i].terminal:
        return
    if failure is None:
        run.state.cancel(i)
    elif isinstance(failure, Exception):  # its body failed: cancelling loses no failure
        run.state.fail(i, failure)
    else:
        end_fatal(run, i, failure)


def end_fatal(run: _Run, i: int, error: BaseException) -> None:
    """A ``BaseException`` from task ``i``'s body or a hook: FAILED with it; the run stops.

    ``execute()`` re-raises it (with the others, when several tasks raised one) once
    every worker has ended.
    """
    run.fatal.append(error)
    if not run.state.states[i].terminal:
        run.state.fail(i, error)
    run.stop(FATAL_GRACE)


def recorded(run: _Run, i: int, duration: float) -> None:
    """Note task ``i``'s duration (all attempts); journal how it ended."""
    state = run.state
    tid = state.order[i].id
    run.durations[tid] = duration
    if run.journal is not None:
        lost = run.journal.fence()
        if lost is not None:  # another holder runs these tasks now: this run stops
            end_fatal(run, i, lost)
            return
        run.journal.settled(
            i,
            state.states[i],
            state.attempts[i],
            duration,
            state.outputs.get(tid),
            state.errors.get(tid),
        )
