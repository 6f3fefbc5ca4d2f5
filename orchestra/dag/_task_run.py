"""One task of a run, all its attempts: the layers of the attempt loop (internal).

``run_task`` is the loop: ``before_execute`` hooks, the body under its timeout (``body``),
then ``after_execute`` hooks (``after``) or what follows a failure (``after_failure``,
the rule the dispatcher shares), and ``decided`` / ``_Run.settle`` end the task.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final, final

import anyio

from orchestra._attempts import Verdict
from orchestra._attempts import after_failure as _after_failure
from orchestra._decisions import Decision, GivenOutput, Replace, Retry, Skip
from orchestra._errors import TaskFailed
from orchestra._hooks import NO_INPUTS, TaskHookContext, task_context
from orchestra.dag._model import Task, TaskState
from orchestra.tracing._engine import NO_ATTEMPT, STATE_RETRYING, AttemptSpan

if TYPE_CHECKING:
    from orchestra.dag._scheduler import _Run

__all__ = ["end_cancelled", "end_failed", "end_fatal", "run_task", "upstream_states"]

_RUNNING: Final = TaskState.RUNNING
_SUCCEEDED: Final = TaskState.SUCCEEDED
_FAILED: Final = TaskState.FAILED
_SKIPPED: Final = TaskState.SKIPPED
_CANCELLED: Final = TaskState.CANCELLED
_NO_NOTES: Final[list[str]] = []  # the messages of an attempt no hook sees (never appended)
_NO_VERDICT: Final = Verdict(decision=None, hook=None)  # a failure nobody had a say on
# Who took a decision, for traces, when no hook did.
_TASK_RETRIES: Final = "task.retries"
_ORCHESTRA: Final = "orchestra"


async def run_task(run: _Run, i: int, cancelled: type[BaseException]) -> None:
    """Run task ``i`` to its terminal state; a fatal error stops the run.

    Each attempt: ``before_execute`` hooks (``before``), the body under its timeout
    (``body``), then ``after_execute`` hooks (``after``) or the decision after a
    failure (``after_failure``); ``decided`` and ``settle`` end the task. The hook
    steps are inline behind one boolean each: a run without hooks pays nothing more.
    """
    task = run.order[i]
    tid = task.id
    wants = run.wants[i]
    outputs = run.outputs
    inputs = {w: outputs.get(w) for w in wants} if wants else {}
    kwargs = inputs
    errors: list[BaseException] = []
    notes = _NO_NOTES
    # The body's error while its on_failure hooks run: a cancellation meanwhile (say,
    # fail_fast stopping the run for another task) still ends the task FAILED.
    failure: BaseException | None = None
    attempt = 0
    started = time.monotonic()
    run.states[i] = _RUNNING
    tel = run.tel
    at = NO_ATTEMPT
    try:
        while True:
            attempt += 1
            run.attempts[i] = attempt
            at = tel.attempt(task, attempt, at)
            kwargs = inputs
            if run.hooked:
                notes = []
            if run.has_before:
                ctx = context(run, i, attempt, errors, started, kwargs, notes)
                decision, by = await run.chain.call(
                    "before_execute", ctx, subject=tid, on_error=run.record, tracer=run.tracer
                )
                if type(decision) is Replace:  # the inputs, as the hooks replaced them
                    at.decision(decision, by)
                    if type(decision.value) is GivenOutput:  # the output: no body runs
                        given(run, i, decision.value.value, by)
                        return
                    kwargs = dict(decision.value)
                elif decision is not None:  # Skip or Fail: the task ends unrun
                    decided(run, i, Verdict(decision=decision, hook=by), None, at)
                    return
            failure = None
            try:
                if task.agent is None and (task.timeout is None or run.executor_times):
                    result = await run.executor.execute(task, kwargs)
                else:
                    result = await body(run, task, kwargs, notes)
                if run.remote is not None and run.has_after:
                    seen = await run.remote.value(i, result)
                else:
                    seen = result
            except Exception as exc:
                failure = exc
                errors.append(exc)
                at.error(exc)
                verdict = await after_failure(run, i, attempt, errors, started, kwargs, notes)
                decision = verdict.decision
                if type(decision) is Retry and verdict.overruled is None:
                    failure = None  # a retry's wait, cancelled, ends it CANCELLED
                    at.decision(decision, verdict.hook or _TASK_RETRIES)
                    at.end(STATE_RETRYING)
                    if decision.delay:
                        await anyio.sleep(decision.delay)
                    continue
                decided(run, i, verdict, exc, at)
                return
            except cancelled:
                raise
            except BaseException as exc:
                # KeyboardInterrupt, SystemExit...: never retried; the hooks see it,
                # then the handler below records it and stops the run.
                failure = exc
                errors.append(exc)
                at.error(exc)
                if run.has_on_failure:
                    ctx = context(run, i, attempt, errors, started, kwargs, notes)
                    await on_failure(run, ctx, exc)
                raise
            outputs[tid] = result
            if run.has_after:
                ctx = context(run, i, attempt, errors, started, kwargs, notes)
                decision, by = await run.chain.call(
                    "after_execute",
                    ctx,
                    seen,
                    subject=tid,
                    on_error=run.record,
                    tracer=run.tracer,
                )
                if decision is not None and after(run, i, result, decision, by, at):
                    return
            run.settle(i, _SUCCEEDED)
            return
    except cancelled:
        end_cancelled(run, i, failure)
        raise
    except BaseException as exc:
        end_fatal(run, i, exc)
    finally:
        duration = run.durations[tid] = time.monotonic() - started
        if run.journal is not None:
            run.journal.settled(
                i, run.states[i], attempt, duration, outputs.get(tid), run.errors.get(tid)
            )
        tel.task_done(at, run.states[i], duration)
        if run.hooked:
            if run.has_on_end:
                run.ends[i] = (
                    tuple(errors) if errors else (),
                    started,
                    MappingProxyType(kwargs) if kwargs else NO_INPUTS,
                    notes,
                )
            elif notes:
                run.messages[tid] = tuple(notes)


def end_cancelled(run: _Run, i: int, failure: BaseException | None) -> None:
    """Task ``i`` was cancelled: CANCELLED, or FAILED if its body had failed meanwhile."""
    if run.states[i].terminal:
        return
    if failure is not None:  # its body failed: cancelling loses no failure
        tid = run.order[i].id
        run.errors[tid] = failure
        if not isinstance(failure, Exception):
            run.record_fatal(tid, failure)
        run.settle(i, _FAILED)
    else:
        run.settle(i, _CANCELLED)


def end_fatal(run: _Run, i: int, error: BaseException) -> None:
    """A fatal error from task ``i``'s body or a hook: record it and stop the run.

    ``execute()`` re-raises it once every worker has ended.
    """
    tid = run.order[i].id
    run.errors[tid] = error
    run.record_fatal(tid, error)
    if not run.states[i].terminal:
        run.settle(i, _FAILED)
    run.stop()


def end_failed(run: _Run, i: int, error: Exception) -> None:
    """Task ``i``'s only attempt failed, no hook or retry to ask: FAILED with ``error``."""
    decided(run, i, _NO_VERDICT, error, NO_ATTEMPT)


def on_failure(
    run: _Run, ctx: TaskHookContext, error: BaseException
) -> Awaitable[tuple[Decision | None, str | None]]:
    """Call the ``on_failure`` hooks about ``error``."""
    return run.chain.call(
        "on_failure", ctx, error, subject=ctx.task.id, on_error=run.record, tracer=run.tracer
    )


async def after_failure(
    run: _Run,
    i: int,
    attempt: int,
    errors: list[BaseException],
    started: float,
    kwargs: dict[str, Any],
    notes: list[str],
) -> Verdict:
    """What follows a failed attempt: the hooks' answer, else the task's ``retries``."""
    task = run.order[i]
    decision = by = None
    if run.has_on_failure:
        ctx = context(run, i, attempt, errors, started, kwargs, notes)
        decision, by = await on_failure(run, ctx, errors[-1])
    return _after_failure(
        decision,
        by,
        attempt=attempt,
        max_attempts=run.max_attempts,
        fallback=Retry(task.retry_delay) if attempt <= task.retries else None,
        budget=run.budget,
    )


def context(
    run: _Run,
    i: int,
    attempt: int,
    errors: list[BaseException],
    started: float,
    kwargs: dict[str, Any],
    notes: list[str],
) -> TaskHookContext:
    task = run.order[i]
    return task_context(
        task,
        attempt,
        task.agent,
        run.run_id,
        tuple(errors),
        started,
        MappingProxyType(kwargs),
        upstream_states(run, i),
        notes,
    )


def upstream_states(run: _Run, i: int) -> Mapping[str, TaskState]:
    """Task ``i``'s upstream states by id: a live view of the run's states."""
    view = run.up_views.get(i)
    if view is None:
        ups = run.upstreams[i]
        if not ups:
            return NO_INPUTS
        view = run.up_views[i] = _Upstreams(ups, run.order, run.states)
    return view


@final
class _Upstreams(Mapping[str, TaskState]):
    """A task's upstream states by id: a live, read-only view of the run's states."""

    __slots__ = ("_order", "_states", "_ups")

    def __init__(
        self, ups: tuple[int, ...], order: Sequence[Task], states: list[TaskState]
    ) -> None:
        self._ups = ups  # built per task while it runs: the id lookups wait until asked
        self._order = order
        self._states = states

    def __getitem__(self, task_id: str) -> TaskState:
        for u in self._ups:
            if self._order[u].id == task_id:
                return self._states[u]
        raise KeyError(task_id)

    def __iter__(self) -> Iterator[str]:
        return (self._order[u].id for u in self._ups)

    def __len__(self) -> int:
        return len(self._ups)

    def __repr__(self) -> str:
        return repr(dict(self))


async def body(run: _Run, task: Task, kwargs: dict[str, Any], notes: list[str]) -> Any:
    """The attempt's body, with its timeout and, for agent tasks, the dispatch."""
    if task.timeout is not None:
        with anyio.fail_after(task.timeout):
            result = await run.executor.execute(task, kwargs)
            if task.agent is not None:
                result = await dispatch(run, task, result, notes)
        return result
    result = await run.executor.execute(task, kwargs)
    return await dispatch(run, task, result, notes)


async def dispatch(run: _Run, task: Task, text: Any, notes: list[str]) -> Any:
    """Dispatch the body's text to the task's agent (with the hooks' messages)."""
    assert run.dispatcher is not None
    assert task.agent is not None
    text = str(text)
    if notes:
        text = "\n\n".join((text, "\n".join(notes)))
    answer = await run.dispatcher.dispatch(task.agent, text, parent=run.dag.name)
    return answer.output


def after(
    run: _Run, i: int, result: Any, decision: Decision, by: str | None, at: AttemptSpan
) -> bool:
    """An ``after_execute`` answer; True when it ended the task.

    ``Replace`` changes the output; anything else is a fail-closed hook's error,
    which fails the task.
    """
    tid = run.order[i].id
    if type(decision) is Replace:
        at.decision(decision, by)
        run.outputs[tid] = decision.value
        if run.remote is not None:
            run.remote.replaced(i, result)
        return False
    del run.outputs[tid]
    decided(run, i, Verdict(decision=decision, hook=by), None, at)
    return True


def given(run: _Run, i: int, output: Any, by: str | None) -> None:
    """A ``before_execute`` hook gave task ``i``'s output: SUCCEEDED, its body not run."""
    tid = run.order[i].id
    run.outputs[tid] = output
    run.reasons[tid] = f"output given by {by}" if by is not None else "output given"
    if run.remote is not None:
        run.remote.replaced(i, None)
    run.settle(i, _SUCCEEDED)


def decided(
    run: _Run,
    i: int,
    verdict: Verdict,
    error: BaseException | None,
    at: AttemptSpan,
) -> None:
    """End task ``i`` as a (non-retry) verdict says; no decision means a plain failure."""
    decision = verdict.decision
    if verdict.overruled is not None:  # the hook's (or task's) Retry, refused by a cap
        at.decision(verdict.overruled, verdict.hook or _TASK_RETRIES)
        at.decision(decision, _ORCHESTRA)
    elif decision is not None:
        at.decision(decision, verdict.hook or _TASK_RETRIES)
    tid = run.order[i].id
    who = f" by {verdict.hook}" if verdict.hook is not None else ""
    if isinstance(decision, Replace):  # a substitute output recovers the failure
        run.outputs[tid] = decision.value
        if error is not None:
            run.errors[tid] = error
        run.reasons[tid] = f"recovered{who}"
        if run.remote is not None:
            run.remote.replaced(i, None)
        run.settle(i, _SUCCEEDED)
        return
    reason = getattr(decision, "reason", None)
    if isinstance(decision, Skip):
        run.reasons[tid] = f"skipped{who}" + (f": {reason}" if reason else "")
        if error is not None:
            run.errors[tid] = error
        run.settle(i, _SKIPPED)
        return
    if decision is not None:
        run.reasons[tid] = f"failed{who}" + (f": {reason}" if reason else "")
    run.errors[tid] = error if error is not None else TaskFailed(tid, reason)
    run.settle(i, _FAILED)
    if run.fail_fast:
        run.stop()
