"""One task of a run, all its attempts, in layers as ``agents/_dispatch.py`` reads (internal).

``run_task`` loops over attempts; each attempt's ``steps`` run under the task's deadline
(its ``timeout`` bounds the whole attempt, hooks included):

- the ``before_execute`` hooks (they may replace the inputs, skip or fail:
  ``before_decided``);
- the body, run by the executor (for a task run by an agent, then its dispatch:
  ``dispatched``);
- the ``after_execute`` hooks (they may replace the output: ``after_decided``), then,
  for a branch task, its choice (``settled``);

and, outside the deadline, ``failed``: what follows a failed attempt (``on_failure``
hooks, else the task's ``retries``: the rule ``_attempts.after_failure`` shares with the
dispatcher). ``_settle`` ends the task.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final, final

import anyio

from orchestra._attempts import Verdict
from orchestra._attempts import after_failure as _after_failure
from orchestra._decisions import Again, GiveOutput, Replace, Retry
from orchestra._hooks import NO_INPUTS, task_context
from orchestra.dag._contexts import upstream_states
from orchestra.dag._plan import KIND_ASYNC
from orchestra.dag._run_hooks import ends_first
from orchestra.dag._settle import decided, end_cancelled, end_fatal, recorded
from orchestra.tracing._engine import NO_ATTEMPT, NO_RUN, STATE_RETRYING

if TYPE_CHECKING:
    from orchestra._hooks import TaskHookContext
    from orchestra.dag._model import Task
    from orchestra.dag._scheduler import _Run
    from orchestra.dag._task_checks import Options

__all__ = ["run_task"]

_NO_NOTES: Final[list[str]] = []  # the messages of an attempt no hook sees (never appended)
_TASK_RETRIES: Final = "task.retries"  # who decided a retry, for traces, when no hook did


@final
class _Task:
    """What the attempts of one task share: its inputs, errors so far and messages."""

    __slots__ = (
        "at",
        "awaited_here",
        "ctx",
        "errors",
        "failure",
        "i",
        "inputs",
        "kwargs",
        "notes",
        "options",
        "started",
        "task",
        "timeout",
    )

    def __init__(self, run: _Run, i: int) -> None:
        self.i = i
        self.task: Task = run.state.order[i]
        options: Options = self.task._options  # read as the plan does: no property call
        self.options = options
        outputs = run.state.outputs
        wants = run.plan.wants[i]
        self.inputs = {w: outputs.get(w) for w in wants} if wants else {}
        self.kwargs = self.inputs  # this attempt's, as the before hooks replaced them
        self.errors: tuple[BaseException, ...] = ()  # oldest first, as contexts show them
        self.notes = [] if run.hooked else _NO_NOTES  # this attempt's messages
        # The body's error while its on_failure hooks run: a cancellation meanwhile (say,
        # fail_fast stopping the run for another task) still ends the task FAILED.
        self.failure: BaseException | None = None
        self.started = time.monotonic()
        self.at = NO_ATTEMPT
        self.ctx: TaskHookContext | None = None  # this attempt's, while kwargs and errors stand
        # The seconds that bound each attempt: the task's timeout, unless the executor
        # applies it (AppliesTimeouts: it times the body itself); for a task run by an
        # agent the scheduler still times the body and the dispatch together.
        self.timeout = (
            None
            if options.timeout is None or (run.capabilities.times and options.agent is None)
            else options.timeout
        )
        # an async body the run's own executor would call as it is: awaited here instead
        self.awaited_here = run.plan.kinds[i] == KIND_ASYNC and run.given_executor is None

    def context(self, run: _Run) -> TaskHookContext:
        """This attempt's hook context, made again when its inputs or errors changed.

        One context serves all the attempt's hooks, until a ``Replace`` of the inputs or
        a failure.
        """
        ctx = self.ctx
        if ctx is None:
            task = self.task
            ctx = self.ctx = task_context(
                task,
                run.state.attempts[self.i],
                self.options.agent,
                run.run_id,
                self.errors,
                self.started,
                MappingProxyType(self.kwargs) if self.kwargs else NO_INPUTS,
                upstream_states(run, self.i) if task.deps else NO_INPUTS,
                self.notes,
            )
        return ctx

    def again(self, run: _Run) -> None:
        """The next attempt starts afresh: the inputs as given, no messages, no failure."""
        self.kwargs = self.inputs
        self.notes = [] if run.hooked else _NO_NOTES
        self.failure = None
        self.ctx = None

    def failed(self, error: BaseException) -> None:
        """The attempt raised ``error``: it is one of the task's errors from now on."""
        self.failure = error
        self.errors += (error,)
        self.ctx = None
        self.at.error(error)


async def run_task(run: _Run, i: int) -> None:
    """Run task ``i`` to its end, attempt after attempt; a ``BaseException`` stops the run.

    The attempts loop here rather than in a coroutine of their own: a hooked task's
    instructions are 2% fewer for the layer it saves.
    """
    t = _Task(run, i)
    try:
        if run.ends_pending and not run.ends_pending.isdisjoint(run.plan.upstreams[i]):
            await ends_first(run, i)  # an upstream's on_end comes before this task's hooks
        ended = False
        while not ended:
            attempt = run.state.start(i)
            if run.tel is not NO_RUN:  # (a call of NO_RUN's no-op costs 1% of a hooked task)
                t.at = run.tel.attempt(t.task, attempt, t.at)
            try:
                if t.timeout is None:  # no scope to enter (a null one costs two calls)
                    ended = await steps(run, t)
                else:
                    with anyio.fail_after(t.timeout):
                        ended = await steps(run, t)
            except Exception as exc:
                ended = await failed(run, t, exc)
            except run.cancelled:
                raise
            except BaseException as exc:  # KeyboardInterrupt, SystemExit...: never retried
                t.failed(exc)
                if run.has_on_failure:  # the hooks see it, then it stops the run
                    await run.calls["on_failure"]((t.context(run), exc), t.task.id, run.record)
                raise
    except run.cancelled:
        end_cancelled(run, i, t.failure)
        raise
    except BaseException as exc:
        end_fatal(run, i, exc)
    finally:
        duration = time.monotonic() - t.started
        recorded(run, i, duration)
        if run.tel is not NO_RUN:
            run.tel.task_done(t.at, run.state.states[i], duration)
        if run.has_on_end:
            inputs = MappingProxyType(t.kwargs) if t.kwargs else NO_INPUTS
            run.ends[i] = (t.errors, t.started, inputs, t.notes)
        elif t.notes:
            run.messages[t.task.id] = tuple(t.notes)


async def steps(run: _Run, t: _Task) -> bool:
    """The attempt under its deadline: ``before_execute``, the body, ``after_execute``.

    A moment only inline ``def`` hooks implement is called here and now
    (``run.calls_now``), with no coroutine around it; an answer of None (no hook had an
    opinion) asks nothing more. True when the attempt ended the task.
    """
    if run.has_before:
        args = (t.context(run),)
        decision, by = (
            run.calls_now["before_execute"](args, t.task.id, run.record)
            if run.before_now
            else await run.calls["before_execute"](args, t.task.id, run.record)
        )
        if decision is not None and before_decided(run, t, decision, by):
            return True
    if t.awaited_here:  # as awaited_in_place awaits it (a call with **{} costs 20% more)
        output = await (t.task.fn(**t.kwargs) if t.kwargs else t.task.fn())
    elif t.options.agent is None:  # the body: the executor's own awaitable, no coroutine around it
        output = await run.executor.execute(t.task, t.kwargs)
    else:
        output = await dispatched(run, t)
    if run.has_after:
        seen = output if run.remote is None else await run.remote.value(t.i, output)
        after = (t.ctx or t.context(run), seen)  # no call while the before hooks' one stands
        decision, by = (
            run.calls_now["after_execute"](after, t.task.id, run.record)
            if run.after_now
            else await run.calls["after_execute"](after, t.task.id, run.record)
        )
        if decision is not None:
            return after_decided(run, t, output, decision, by)
    if t.options.branch:
        return settled(run, t, output)
    run.state.succeed(t.i, output)  # settled's plain case with no call: 2% of a hooked task
    return True


def before_decided(run: _Run, t: _Task, decision: Any, by: str | None) -> bool:
    """What the ``before_execute`` hooks decided (not None); True when it ended the task."""
    if type(decision) is Replace:  # the inputs, as the hooks replaced them
        t.at.decision(decision, by)
        if type(decision.value) is GiveOutput:  # the output: no body runs
            if run.remote is not None:
                run.remote.replaced(t.i, None)
            reason = f"output given by {by}" if by is not None else "output given"
            return settled(run, t, decision.value.value, reason)
        t.kwargs = dict(decision.value)
        t.ctx = None
        return False
    decided(run, t.i, Verdict(decision=decision, hook=by), None, t.at)
    return True


async def dispatched(run: _Run, t: _Task) -> Any:
    """The body of a task run by an agent, then its dispatch; the agent's answer."""
    task = t.task
    result = await run.executor.execute(task, t.kwargs)
    assert run.dispatcher is not None
    assert task.agent is not None
    text = str(result)
    if t.notes:  # what hooks added for the agent
        text = "\n\n".join((text, "\n".join(t.notes)))
    answer = await run.dispatcher.dispatch(task.agent, text, parent=run.dag.name)
    return answer.output


def after_decided(run: _Run, t: _Task, result: Any, decision: Any, by: str | None) -> bool:
    """What the ``after_execute`` hooks decided (not None) about ``result``. True.

    A ``Replace`` changes the output (then ``settled``: a branch's choice, SUCCEEDED);
    any other answer is a fail-closed hook's error, which fails the task.
    """
    if type(decision) is not Replace:
        decided(run, t.i, Verdict(decision=decision, hook=by), None, t.at)
        return True
    t.at.decision(decision, by)
    if run.remote is not None:
        run.remote.replaced(t.i, result)
    return settled(run, t, decision.value)


def settled(run: _Run, t: _Task, output: Any, reason: str | None = None) -> bool:
    """The task SUCCEEDED with ``output``; a branch task follows what it names. True."""
    chosen = None
    if t.options.branch:
        try:
            chosen = branch_choice(run, t.i, output)
        except ValueError as exc:  # not a choice among its direct downstream tasks
            decided(run, t.i, Verdict(decision=None, hook=None), exc, t.at)
            return True
        t.at.branch(tuple(run.state.order[d].id for d in chosen))
    run.state.succeed(t.i, output, reason=reason, chosen=chosen)
    return True


async def failed(run: _Run, t: _Task, error: Exception) -> bool:
    """What follows a failed attempt; True when it ended the task, False to retry."""
    t.failed(error)
    decision = by = None
    if run.has_on_failure:
        failure = (t.context(run), error)
        decision, by = await run.calls["on_failure"](failure, t.task.id, run.record)
    verdict = _after_failure(
        decision,
        by,
        attempt=run.state.attempts[t.i],
        max_attempts=run.max_attempts,
        fallback=Retry(t.task.retry_delay) if run.state.attempts[t.i] <= t.task.retries else None,
        budget=run.budget,
    )
    if isinstance(verdict.decision, Again) and verdict.overruled is None:
        t.failure = None  # a retry's wait, cancelled, ends it CANCELLED
        t.at.decision(verdict.decision, verdict.hook or _TASK_RETRIES)
        t.at.end(STATE_RETRYING)
        if verdict.decision.delay:
            await anyio.sleep(verdict.decision.delay)
        t.again(run)
        return False
    decided(run, t.i, verdict, error, t.at)
    return True


def branch_choice(run: _Run, i: int, output: object) -> list[int]:
    """The direct downstream tasks branch task ``i`` follows, from its final output.

    Raises:
        ValueError: the output does not name direct downstream tasks (``chosen_ids``).
    """
    order = run.state.order
    dependents = run.plan.dependents[i]
    chosen = chosen_ids(order[i], output, [order[d].id for d in dependents])
    return [d for d in dependents if order[d].id in chosen]


def chosen_ids(task: Task, answer: object, dependents: Sequence[str]) -> tuple[str, ...]:
    """The ids a branch task's output names: one id, or a list (or tuple, set) of ids.

    Raises:
        ValueError: the output is not an id or a collection of ids, or names a task that
            is not one of the branch's direct downstream tasks.
    """
    ids = (answer,) if isinstance(answer, str) else answer
    if not isinstance(ids, list | tuple | set | frozenset) or not all(
        isinstance(x, str) for x in ids
    ):
        raise ValueError(
            f"branch task {task.id!r} must return the id (or a list of ids) of direct "
            f"downstream tasks to follow, got {answer!r}"
        )
    strangers = [x for x in ids if x not in dependents]
    if strangers:
        raise ValueError(
            f"branch task {task.id!r} chose {', '.join(map(repr, strangers))}, which is not "
            f"one of its direct downstream tasks ({', '.join(map(repr, dependents)) or 'none'})"
        )
    return tuple(dict.fromkeys(ids))
