"""The run's workers: long-lived tasks that take task indexes from the ready queue (internal).

A worker that finds work waiting takes it without a checkpoint, so bodies that never
suspend run back to back with no task creation, no stream and no limiter per node. The
run yields to the loop once ``SLICE`` seconds passed since its last pass, whatever the
worker: the first worker past the deadline leads a pass and the others that were
running tasks follow it until it resumes, so one loop pass runs at most about ``SLICE``
of bodies (timers, I/O and other tasks are served). The slice is the loop thread's CPU
time, read only once ``SLICE`` seconds of wall time passed: time the thread waited for
the GIL or for the OS is not the loop's work.

A run starts one worker (given an executor of its own, which may batch what one loop pass
submits, a worker per task ready at its start, up to the cap). Idle workers wait
until a worker wakes one, and a worker wakes one (or, none idle, starts one more, up to
the cap) only when it starts a task while more are ready and no woken worker is on its
way: should that task's body wait, the woken one takes the next. Bodies that never wait
so keep one worker busy and the others asleep; bodies that do wait wake or start a
worker each, up to the cap.

Each body runs in its own copy of the run's context, as a task would: a worker compares
its context with a snapshot after each task and, if a body (or a hook) changed it,
hands over to a new worker spawned from the run's base context.

A task with nothing around its body (``_plan.kind``, in a run with no hooks, tracing or
executor of its own) runs in place (``awaited_in_place``, ``called_in_place``); every
other goes through ``run_task``.
"""

from __future__ import annotations

import contextvars
import time
from typing import TYPE_CHECKING, Final

import anyio

from orchestra.dag._attempt import run_task
from orchestra.dag._plan import KIND_ASYNC, KIND_INLINE
from orchestra.dag._run_hooks import end_tasks
from orchestra.dag._settle import end_cancelled, end_failed, end_fatal, recorded

if TYPE_CHECKING:
    from orchestra.dag._scheduler import _Run

__all__ = ["SLICE", "worker"]

SLICE: Final = 0.005  # seconds of work the workers do, all together, between loop passes
_AT_ONCE: Final = 1e-9  # seconds: a timer due at the loop's next pass


async def worker(run: _Run) -> None:
    """Run ready tasks until every task ended, the run stops, or this context changed."""
    state = run.state
    ready = state.ready
    fresh = contextvars.copy_context()  # this worker's context as it started: the run's base
    run.woken -= 1  # started: this worker looks at the ready queue now
    while True:
        if ready:
            if time.perf_counter() >= run.slice_end and await _slice_over(run):
                if run.stopping:
                    return
                continue
            i = ready.popleft()
            hand_on(run)  # should this body wait, a worker takes the next task
            kind = run.kinds[i]
            if kind == KIND_INLINE:
                called_in_place(run, i)  # no coroutine for a call that never waits
            elif kind == KIND_ASYNC:
                await awaited_in_place(run, i)
            elif i in run.reuse:  # an output a resumed run journaled
                run.reuse_task(i)
            else:
                await run_task(run, i)
            if run.ending:
                await _ends(run)
            if contextvars.copy_context() != fresh:  # the body (or a hook) changed it
                if not state.finished and not run.stopping:
                    respawn(run)
                else:
                    wake_all(run)
                return
        elif state.finished or run.stopping:
            wake_all(run)
            return
        else:
            await park(run)


async def _ends(run: _Run) -> None:
    """The due ``on_end`` hooks; they may wait, so a worker takes the next task."""
    hand_on(run)
    await end_tasks(run)


async def awaited_in_place(run: _Run, i: int) -> None:
    """Task ``i``'s async body with nothing around it, awaited here."""
    state = run.state
    fn = state.order[i].fn
    want = run.plan.wants[i]
    state.start(i)
    started = time.perf_counter()
    try:
        result = await (fn(**{w: state.outputs.get(w) for w in want}) if want else fn())
    except Exception as exc:
        end_failed(run, i, exc)
    except run.cancelled:
        end_cancelled(run, i, None)
        raise
    except BaseException as exc:
        end_fatal(run, i, exc)
    else:
        state.succeed(i, result)
    finally:
        recorded(run, i, time.perf_counter() - started)


def called_in_place(run: _Run, i: int) -> None:
    """Task ``i``'s sync inline body with nothing around it, called here (no coroutine)."""
    state = run.state
    task = state.order[i]
    want = run.plan.wants[i]
    kwargs = {w: state.outputs.get(w) for w in want} if want else {}
    state.start(i)
    started = time.perf_counter()
    try:
        result = contextvars.copy_context().run(task.fn, **kwargs)
    except Exception as exc:
        end_failed(run, i, exc)
    except BaseException as exc:  # a cancellation cannot reach a call that never waits
        end_fatal(run, i, exc)
    else:
        state.succeed(i, result)
    finally:
        recorded(run, i, time.perf_counter() - started)


async def _slice_over(run: _Run) -> bool:
    """Past the slice's wall time: True when the workers let the loop run (or stopped).

    A slice is over once the loop thread's CPU time says so too (time spent waiting for
    the GIL or the OS is not the loop's work); else it goes on.
    """
    if run.stopping:
        return True
    if not run.passing and time.thread_time() < run.slice_cpu:
        run.slice_end = time.perf_counter() + SLICE  # the thread mostly waited
        return False
    await loop_pass(run)
    return True


async def park(run: _Run) -> None:
    """Wait among the idle workers until a worker wakes this one (``wake_one``)."""
    event = anyio.Event()
    run.idle.append(event)
    await event.wait()
    run.woken -= 1


def hand_on(run: _Run) -> None:
    """Should what this worker runs next wait, have a worker on its way to the next task.

    Unless no task is ready or a woken worker is on its way already: the idle worker
    that waited last is woken, or, none idle, one more is started (fewer than the cap run).
    """
    if run.state.ready and not run.woken and (run.idle or run.workers_started < run.workers):
        wake_one(run)


def wake_one(run: _Run) -> None:
    """Wake the idle worker that waited last, or start one more (fewer than the cap run)."""
    run.woken += 1
    if run.idle:
        run.idle.pop().set()
    else:
        assert run.tg is not None
        run.workers_started += 1
        run.tg.start_soon(worker, run)


def wake_all(run: _Run) -> None:
    """Wake every idle worker: the run ended (or stops), they return."""
    while run.idle:
        wake_one(run)


async def loop_pass(run: _Run) -> None:
    """Let the event loop run: lead a pass, or follow the worker that leads one.

    The leader waits on a timer that is due at once rather than a plain checkpoint: an
    event loop queues the callbacks it runs next in order, and a timer's come after
    those already queued, so what a timer or I/O woke meanwhile runs before the
    workers' next slice, not one slice later.
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


def respawn(run: _Run) -> None:
    """Start a worker in the run's base context, to replace one whose context changed."""
    assert run.tg is not None
    assert run.base is not None
    run.woken += 1
    run.base.run(run.tg.start_soon, worker, run)
