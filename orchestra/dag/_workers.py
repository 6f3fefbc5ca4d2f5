"""The run's workers: long-lived tasks that take task indexes from the ready deque (internal).

A worker that finds work waiting takes it without a checkpoint, so bodies that never
suspend run back to back with no task creation, no stream and no limiter per node. The
run yields to the loop once ``SLICE`` seconds passed since its last pass, whatever the
worker: the first worker past the deadline leads a pass and the others that were
running tasks follow it until it resumes, so one loop pass runs at most about ``SLICE``
of bodies (timers, I/O and other tasks are served). The slice is the loop thread's CPU
time, read only once ``SLICE`` seconds of wall time passed: time the thread waited for
the GIL (another thread of the process busy, say a dask client's) or for the OS is not
the loop's work, and counting it would end a pass after every task.

Idle workers wait until a worker wakes one, and a worker wakes one only when it starts
a task while more are ready and no woken worker is on its way: should that task's body
wait, the woken one takes the next. Bodies that never wait so keep one worker busy and
the others asleep (waking a worker per ready task would have them all wake and sleep
again at every loop pass); bodies that do wait wake a worker each, up to the cap.

Each body runs in its own copy of the run's context, as a task would: a worker compares
its context with a snapshot after each task and, if a body (or a hook) changed it,
hands over to a new worker spawned from the run's base context.

A task with nothing around its body (no hooks, timeout, retries, agent, tracing or
custom executor: ``Task._kind``) runs in place: the worker awaits (or calls, inline) the
body itself, and hands what it ended with to the run's journal, if any; every other task
goes through ``run_task``'s attempt loop.
"""

from __future__ import annotations

import contextvars
import time
from typing import TYPE_CHECKING, Final

import anyio

from orchestra.dag._model import TaskState
from orchestra.dag._plan import KIND_ASYNC
from orchestra.dag._run_hooks import end_tasks
from orchestra.dag._settle import release_rest
from orchestra.dag._task_run import end_cancelled, end_failed, end_fatal, run_task

if TYPE_CHECKING:
    from orchestra.dag._scheduler import _Run

__all__ = ["SLICE", "worker"]

SLICE: Final = 0.005  # seconds of work the workers do, all together, between loop passes
_SUCCEEDED: Final = TaskState.SUCCEEDED
_AT_ONCE: Final = 1e-9  # seconds: a timer due at the loop's next pass


async def worker(run: _Run, cancelled: type[BaseException]) -> None:
    """Run ready tasks until every task ended, the run stops, or this context changed."""
    ready = run.ready
    reuse = run.reuse
    kinds = run.kinds
    order = run.order
    wants = run.wants
    outputs = run.outputs
    attempts = run.attempts
    durations = run.durations
    states = run.states
    remaining = run.remaining
    dependents = run.dependents
    early = run.early_on_success
    plain = run.runs_on_success
    idle = run.idle
    journal = run.journal
    journal_none = journal.none if journal is not None else _unjournaled
    journal_atom = journal.atom if journal is not None else _unjournaled
    journal_atoms = journal.atoms if journal is not None else frozenset()
    clock = time.perf_counter  # one reading per task: its end, and the slice's check
    cpu = time.thread_time  # read when the slice's wall time is over
    snapshot = contextvars.copy_context
    fresh = snapshot()  # this worker's context as it started: the run's base
    run.woken -= 1  # started: this worker looks at the ready deque now
    now = clock()
    ran = False  # whether this worker ran a task since it last waited idle
    while True:
        if ready:
            if now >= run.slice_end:  # past too while a worker leads a pass, or stopped
                if run.stopping:
                    return
                if run.passing or cpu() >= run.slice_cpu:
                    if ran or not run.passing:
                        await loop_pass(run)
                    else:  # woken for work the worker leading the pass will take
                        await park(run)
                    now = clock()
                    continue
                run.slice_end = now + SLICE  # the thread mostly waited: the slice goes on
            i = ready.popleft()
            ran = True
            if ready and not run.woken and idle:  # should this body wait, one takes the next
                wake_one(run)
            kind = kinds[i]
            if kind:  # the body in place (no hook sees it RUNNING): see the docstring
                task = order[i]
                tid = task.id
                attempts[i] = 1
                started = now
                try:
                    want = wants[i]
                    if kind == KIND_ASYNC:
                        if want:
                            result = await task.fn(**{w: outputs.get(w) for w in want})
                        else:
                            result = await task.fn()
                    elif want:
                        result = snapshot().run(task.fn, **{w: outputs.get(w) for w in want})
                    else:
                        result = snapshot().run(task.fn)
                except Exception as exc:
                    now = clock()
                    durations[tid] = now - started
                    end_failed(run, i, exc)
                    if journal is not None:
                        journal.settled(
                            i, run.states[i], 1, durations[tid], None, run.errors.get(tid)
                        )
                except cancelled:
                    durations[tid] = clock() - started
                    end_cancelled(run, i, None)
                    if journal is not None:
                        journal.settled(i, run.states[i], 1, durations[tid], None, None)
                    raise
                except BaseException as exc:
                    now = clock()
                    durations[tid] = now - started
                    end_fatal(run, i, exc)
                    if journal is not None:
                        journal.settled(
                            i, run.states[i], 1, durations[tid], None, run.errors.get(tid)
                        )
                else:
                    outputs[tid] = result
                    now = clock()
                    durations[tid] = now - started
                    # settle(i, SUCCEEDED), its common case in line: no on_end hook or
                    # remote output comes here; a dependent whose rule must decide, and
                    # the ones after it, are release_rest's
                    states[i] = _SUCCEEDED
                    run.done += 1
                    remaining[i] = -1
                    for d in dependents[i]:
                        left = remaining[d] - 1
                        if left < 0:  # queued or ended already
                            continue
                        remaining[d] = left
                        if left:
                            if not early[d]:
                                continue
                        elif plain[d]:  # every upstream succeeded
                            ready.append(d)
                            continue
                        release_rest(run, i, d, left)
                        break
                    if journal is not None:
                        if result is None:  # the common case: see RunJournal.none
                            journal_none(i)
                        elif type(result) in journal_atoms:
                            journal_atom(i)
                        else:
                            journal.settled(i, _SUCCEEDED, 1, now - started, result, None)
            else:
                if i in reuse:
                    run.reuse_task(i)
                else:
                    await run_task(run, i, cancelled)
                if run.ending:  # on_end hooks may wait: one takes the next ready task
                    if ready and not run.woken and idle:
                        wake_one(run)
                    await end_tasks(run)
                now = clock()
            if snapshot() != fresh:  # the body (or a hook) changed this context
                if run.done < run.total and not run.stopping:
                    respawn(run, cancelled)
                else:
                    wake_all(run)
                return
        elif run.done >= run.total or run.stopping:
            wake_all(run)
            return
        else:
            await park(run)
            ran = False
            now = clock()


def _unjournaled(i: int) -> None:
    """``RunJournal.none`` (``atom``) of a run without a journal: never called."""


async def park(run: _Run) -> None:
    """Wait among the idle workers until a worker wakes this one (``wake_one``)."""
    event = anyio.Event()
    run.idle.append(event)
    await event.wait()
    run.woken -= 1


def wake_one(run: _Run) -> None:
    """Wake the idle worker that waited last."""
    run.idle.pop().set()
    run.woken += 1


def wake_all(run: _Run) -> None:
    """Wake every idle worker: the run ended (or stops), they return."""
    while run.idle:
        wake_one(run)


async def loop_pass(run: _Run) -> None:
    """Let the event loop run: lead a pass, or follow the worker that leads one.

    The leader waits on a timer that is due at once rather than a plain checkpoint: an
    event loop queues the callbacks it runs next in order, and a timer's come after
    those already queued, so what a timer or I/O woke meanwhile (say, a task sleeping
    10 ms) runs before the workers' next slice, not one slice later (measured with
    asyncio: the largest gap of a 10 ms heartbeat beside CPU-bound bodies falls from
    about 20 ms of CPU time to about 11).
    """
    if run.passing:  # follow: once the leader resumes (one step per pass, not per loop turn)
        await run.passed.wait()
        return
    run.passing = True
    passed = run.passed = anyio.Event()
    try:
        await anyio.sleep(_AT_ONCE)
    finally:
        run.passing = False
        if not run.stopping:  # stop() ended the slice for good
            run.slice_end = time.perf_counter() + SLICE
            run.slice_cpu = time.thread_time() + SLICE
        passed.set()


def respawn(run: _Run, cancelled: type[BaseException]) -> None:
    """Start a worker in the run's base context, to replace one whose context changed."""
    assert run.tg is not None
    assert run.base is not None
    run.woken += 1
    run.base.run(run.tg.start_soon, worker, run, cancelled)
