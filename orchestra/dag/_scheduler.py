"""The anyio DAG scheduler: one ``_Run`` per run (``run()`` is its public face).

Design (measured, see ``bench/scheduler.py``): a fixed pool of long-lived worker tasks,
as many as ``max_concurrency`` allows, takes task indexes from one ready deque. A worker
that finds work waiting takes it without a checkpoint, so bodies that never suspend run
back to back with no task creation, no stream and no limiter per node. The run yields to
the loop once ``_SLICE`` seconds passed since its last pass, whatever the worker: the
first worker past the deadline leads a pass and the others follow it until it resumes,
so one loop pass runs at most about ``_SLICE`` of bodies (timers, I/O and other tasks
are served). Each body runs in its own copy of the run's context, as a task would: a
worker compares its context with a snapshot after each task and, if a body (or a hook)
changed it, hands over to a new worker spawned from the run's base context. Finishing a
task settles its dependents iteratively (trigger rules, upstream failures), so deep
chains never recurse, and wakes idle workers for the new ready work.
"""

from __future__ import annotations

import contextvars
import time
import uuid
from collections import deque
from collections.abc import Awaitable, Iterable
from typing import TYPE_CHECKING, Any, Final

import anyio
import anyio.abc
import anyio.lowlevel

from orchestra._attempts import RetryBudget, Verdict, after_failure
from orchestra._chain import HookChain
from orchestra._decisions import Decision, Retry, Skip
from orchestra._errors import DAGError, HookError, TaskFailed
from orchestra._hooks import TaskHookContext, TaskHooks
from orchestra.dag._executor import AgentDispatcher, Executor, LocalExecutor
from orchestra.dag._journal import RunJournal
from orchestra.dag._model import DAG, Task, TaskState
from orchestra.dag._remote import RemoteOutputs
from orchestra.dag._result import Column, RunResult
from orchestra.dag._threads import ThreadPool
from orchestra.tracing._engine import NO_ATTEMPT, NO_RUN, STATE_RETRYING, AttemptSpan, RunTelemetry

if TYPE_CHECKING:
    from opentelemetry.trace import Tracer


__all__ = ["_Run"]

_PENDING: Final = TaskState.PENDING
_RUNNING: Final = TaskState.RUNNING
_SUCCEEDED: Final = TaskState.SUCCEEDED
_FAILED: Final = TaskState.FAILED
_SKIPPED: Final = TaskState.SKIPPED
_UPSTREAM_FAILED: Final = TaskState.UPSTREAM_FAILED
_CANCELLED: Final = TaskState.CANCELLED
_SLICE: Final = 0.005  # seconds of work the workers do, all together, between loop passes
_THREADS_UNCAPPED: Final = 40  # threads for sync bodies when max_concurrency=None (anyio's)
_NOT_OK: Final = (_FAILED, _UPSTREAM_FAILED, _CANCELLED)
# Who took a decision, for traces, when no hook did.
_TASK_RETRIES: Final = "task.retries"
_ORCHESTRA: Final = "orchestra"


class _Run:
    """One execution of a DAG (internal; ``run()`` is the public face)."""

    executor: Executor  # set by execute(): the default one needs the event loop

    def __init__(
        self,
        dag: DAG,
        *,
        hooks: Iterable[object],
        max_concurrency: int | None,
        fail_fast: bool,
        retry_budget: int | None,
        executor: Executor | None,
        dispatcher: AgentDispatcher | None,
        max_attempts: int,
        journal: RunJournal | None = None,
    ) -> None:
        if max_concurrency is not None and (
            not isinstance(max_concurrency, int) or max_concurrency < 1
        ):
            raise ValueError(
                f"max_concurrency must be None or an int >= 1, got {max_concurrency!r}"
            )
        if retry_budget is not None and (not isinstance(retry_budget, int) or retry_budget < 0):
            raise ValueError(f"retry_budget must be None or an int >= 0, got {retry_budget!r}")
        if not isinstance(max_attempts, int) or max_attempts < 1:
            raise ValueError(f"max_attempts must be an int >= 1, got {max_attempts!r}")
        plan = dag.plan()
        self.dag = dag
        self.order = plan.order
        self.dependents = plan.dependents
        self.wants = plan.wants
        self.upstreams = plan.upstreams
        if dispatcher is None:
            for task in self.order:
                if task.agent is not None:
                    raise DAGError(
                        f"task {task.id!r} is executed by agent {task.agent!r}: "
                        "pass run(..., dispatcher=...)"
                    )
        n = len(self.order)
        self.total = n
        self.states: list[TaskState] = [_PENDING] * n
        self.attempts = [0] * n
        self.durations: dict[str, float] = {}
        self.outputs: dict[str, Any] = {}
        self.errors: dict[str, BaseException] = {}
        self.reasons: dict[str, str] = {}
        self.hook_errors: list[HookError] = []
        self.remaining = list(plan.indegree)
        self.ready: deque[int] = deque(plan.sources)
        self.done = 0
        self.not_ok = 0  # tasks settled FAILED, UPSTREAM_FAILED or CANCELLED
        self.index = plan.index
        self.idle: list[anyio.Event] = []
        self.slice_end = 0.0  # when the workers next let the loop run
        self.passing = False  # a worker leads a loop pass: the others follow it
        self.base: contextvars.Context | None = None  # the context new workers start in
        self.threads: ThreadPool | None = None
        self.stopping = False
        self.fatal: BaseException | None = None
        self.workers = n if max_concurrency is None else min(max_concurrency, n)
        self.fail_fast = fail_fast
        self.budget = RetryBudget(retry_budget)
        self.max_attempts = max_attempts
        self.given_executor = executor
        self.dispatcher = dispatcher
        self.run_id = uuid.uuid4().hex
        chain = self.chain = HookChain(hooks, TaskHooks, timeout=None)
        # One boolean per hook point: with no hooks, a run does nothing more.
        self.has_before = chain.has("before_execute")
        self.has_after = chain.has("after_execute")
        self.has_on_failure = chain.has("on_failure")
        self.record = self.hook_errors.append
        self.tg: anyio.abc.TaskGroup | None = None
        self.started = 0.0
        self.finished = 0.0
        self.max_concurrency = self.workers if max_concurrency is None else max_concurrency
        self.capped = max_concurrency is not None
        # An executor whose outputs stay remote (it has fetch): None = plain values.
        self.remote = RemoteOutputs.for_run(
            executor, self.order, self.upstreams, self.dependents, chain.hooks("after_execute")
        )
        self.executor_times = bool(getattr(executor, "applies_timeouts", False))
        # Telemetry, decided once per run in execute(): NO_RUN records nothing.
        self.tel: RunTelemetry = NO_RUN
        self.tracer: Tracer | None = None
        self.journal = journal
        self.reuse: dict[int, Any] = {}  # index -> output, of the tasks a resume reuses

    # -- the run --------------------------------------------------------------------------

    async def execute(self) -> RunResult:
        self.started = time.monotonic()
        cancelled = anyio.get_cancelled_exc_class()
        if self.journal is not None:
            self.reuse = await self.journal.start(
                self.dag, self.run_id, self.order, self.upstreams, outputs=self.remote is None
            )
        if self.given_executor is not None:
            self.executor = self.given_executor
        else:
            self.executor = LocalExecutor()
            if any(not (t.is_async or t.inline) for t in self.order):
                pool = ThreadPool(max(self.workers, 1) if self.capped else _THREADS_UNCAPPED)
                self.threads = self.executor._threads = pool
        tel = self.tel = RunTelemetry.start(
            self.dag.name,
            self.run_id,
            tasks=self.total,
            max_concurrency=self.max_concurrency,
            deps=((task.id, task.deps) for task in self.order),
        )
        self.tracer = tel.tracer
        escaped: BaseException | None = None
        self.base = contextvars.copy_context()
        self.slice_end = time.perf_counter() + _SLICE
        try:
            async with anyio.create_task_group() as tg:
                self.tg = tg
                for _ in range(self.workers):
                    tg.start_soon(self.worker, cancelled)
        except BaseException as exc:
            escaped = exc
            raise
        finally:
            if self.threads is not None:
                self.threads.close()
            if self.done < self.total:
                states = self.states
                for i, state in enumerate(states):
                    if not state.terminal:
                        states[i] = _CANCELLED
                        self.not_ok += 1
            if self.remote is not None:
                if escaped is None and self.fatal is None:
                    await self.remote.finish(self.outputs, self.errors)
                else:
                    self.remote.release_all(self.outputs)
            self.finished = time.monotonic()
            if tel is not NO_RUN:
                self.finish_trace(tel, self.fatal or escaped)
            if self.journal is not None:
                await self.journal.finish(self.states, self.attempts, self.errors)
        if self.fatal is not None:
            raise self.fatal
        return self.result()

    def finish_trace(self, tel: RunTelemetry, error: BaseException | None) -> None:
        """End the run span: outcome, tasks that never ran, a fatal error."""
        failed = sum(1 for s in self.states if s in _NOT_OK)
        not_run = [
            (task.id, state.value)
            for task, state, n in zip(self.order, self.states, self.attempts, strict=True)
            if n == 0
        ]
        tel.finish(ok=not failed, failed=failed, not_run=not_run, error=error)

    def result(self) -> RunResult:
        journal = self.journal
        return RunResult(
            ok=not self.not_ok,
            states=Column(self.index, self.states),
            outputs=self.outputs,
            errors=self.errors,
            attempts=Column(self.index, self.attempts),
            run_id=self.run_id,
            reasons=self.reasons,
            hook_errors=tuple(self.hook_errors),
            durations=self.durations,
            duration=self.finished - self.started,
            reused=frozenset(journal.reused_ids) if journal is not None else frozenset(),
            resumed_from=journal.resumed_from if journal is not None else None,
        )

    async def worker(self, cancelled: type[BaseException]) -> None:
        ready = self.ready
        reuse = self.reuse
        clock = time.perf_counter
        snapshot = contextvars.copy_context
        fresh = snapshot()  # this worker's context as it started: the run's base
        while True:
            if ready and not self.stopping:
                if self.passing or clock() >= self.slice_end:
                    await self.loop_pass()
                    continue
                i = ready.popleft()
                if i in reuse:
                    self.reuse_task(i)
                    continue
                await self.run_task(i, cancelled)
                if snapshot() != fresh:  # the body (or a hook) changed this context
                    if self.done < self.total and not self.stopping:
                        self.respawn(cancelled)
                    return
            elif self.done >= self.total or self.stopping:
                return
            else:
                event = anyio.Event()
                self.idle.append(event)
                await event.wait()

    async def loop_pass(self) -> None:
        """Let the event loop run: lead a pass, or follow the worker that leads one."""
        if self.passing:
            await anyio.lowlevel.checkpoint()
            return
        self.passing = True
        try:
            await anyio.lowlevel.checkpoint()
        finally:
            self.passing = False
            self.slice_end = time.perf_counter() + _SLICE

    def respawn(self, cancelled: type[BaseException]) -> None:
        """Start a worker in the run's base context, to replace one whose context changed."""
        assert self.tg is not None
        assert self.base is not None
        self.base.run(self.tg.start_soon, self.worker, cancelled)

    # -- one task: its attempts, then its terminal state ----------------------------------

    async def run_task(self, i: int, cancelled: type[BaseException]) -> None:
        """Run task ``i`` to its terminal state; a fatal error stops the run."""
        task = self.order[i]
        tid = task.id
        wants = self.wants[i]
        outputs = self.outputs
        kwargs = {w: outputs.get(w) for w in wants} if wants else {}
        errors: list[BaseException] = []
        # The body's error while its on_failure hooks run: a cancellation meanwhile (say,
        # fail_fast stopping the run for another task) still ends the task FAILED.
        failure: BaseException | None = None
        attempt = 0
        started = time.monotonic()
        self.states[i] = _RUNNING
        tel = self.tel
        at = NO_ATTEMPT
        try:
            while True:
                attempt += 1
                self.attempts[i] = attempt
                at = tel.attempt(task, attempt, at)
                if self.has_before:
                    ctx = self.context(task, attempt, errors, started)
                    decision, by = await self.chain.call(
                        "before_execute", ctx, subject=tid, on_error=self.record, tracer=self.tracer
                    )
                    if decision is not None:  # Skip or Fail: the task ends unrun
                        self.decided(i, Verdict(decision=decision, hook=by), None, at)
                        return
                failure = None
                try:
                    if task.agent is None and (task.timeout is None or self.executor_times):
                        result = await self.executor.execute(task, kwargs)
                    else:
                        result = await self.body(task, kwargs)
                    if self.remote is not None and self.has_after:
                        seen = await self.remote.value(i, result)
                    else:
                        seen = result
                except Exception as exc:
                    failure = exc
                    errors.append(exc)
                    at.error(exc)
                    verdict = await self.after_failure(i, attempt, errors, started, exc)
                    decision = verdict.decision
                    if type(decision) is Retry and verdict.overruled is None:
                        failure = None  # a retry's wait, cancelled, ends it CANCELLED
                        at.decision(decision, verdict.hook or _TASK_RETRIES)
                        at.end(STATE_RETRYING)
                        if decision.delay:
                            await anyio.sleep(decision.delay)
                        continue
                    self.decided(i, verdict, exc, at)
                    return
                except cancelled:
                    raise
                except BaseException as exc:
                    # KeyboardInterrupt, SystemExit...: never retried; the hooks see it,
                    # then the handler below records it and stops the run.
                    failure = exc
                    errors.append(exc)
                    at.error(exc)
                    if self.has_on_failure:
                        await self.on_failure(self.context(task, attempt, errors, started), exc)
                    raise
                outputs[tid] = result
                if self.has_after:
                    ctx = self.context(task, attempt, errors, started)
                    decision, by = await self.chain.call(
                        "after_execute",
                        ctx,
                        seen,
                        subject=tid,
                        on_error=self.record,
                        tracer=self.tracer,
                    )
                    if decision is not None:  # a fail-closed hook's error fails the task
                        del outputs[tid]
                        self.decided(i, Verdict(decision=decision, hook=by), None, at)
                        return
                self.settle(i, _SUCCEEDED)
                return
        except cancelled:
            if not self.states[i].terminal:
                if failure is not None:  # its body failed: cancelling loses no failure
                    self.errors[tid] = failure
                    if not isinstance(failure, Exception):
                        self.record_fatal(tid, failure)
                    self.settle(i, _FAILED)
                else:
                    self.settle(i, _CANCELLED)
            raise
        except BaseException as exc:
            # A fatal error from the body or a hook: record it, stop the run, and let
            # execute() re-raise it once every worker has ended.
            self.errors[tid] = exc
            self.record_fatal(tid, exc)
            if not self.states[i].terminal:
                self.settle(i, _FAILED)
            self.stop()
        finally:
            duration = self.durations[tid] = time.monotonic() - started
            if self.journal is not None:
                self.journal.settled(
                    i, self.states[i], attempt, duration, outputs.get(tid), self.errors.get(tid)
                )
            tel.task_done(at, self.states[i], duration)

    def record_fatal(self, tid: str, error: BaseException) -> None:
        """Make ``error`` the one ``run()`` raises, or note it on the one already chosen."""
        if self.fatal is None:
            self.fatal = error
        elif error is not self.fatal:
            self.fatal.add_note(f"task {tid!r} also failed with {error!r}")

    def reuse_task(self, i: int) -> None:
        """End task ``i`` SUCCEEDED with the output its resumed run journaled, without running."""
        assert self.journal is not None
        self.outputs[self.order[i].id] = self.reuse.pop(i)
        self.journal.reused(i)
        self.settle(i, _SUCCEEDED)

    def on_failure(
        self, ctx: TaskHookContext, error: BaseException
    ) -> Awaitable[tuple[Decision | None, str | None]]:
        """Call the ``on_failure`` hooks about ``error``."""
        return self.chain.call(
            "on_failure", ctx, error, subject=ctx.task.id, on_error=self.record, tracer=self.tracer
        )

    async def after_failure(
        self, i: int, attempt: int, errors: list[BaseException], started: float, exc: Exception
    ) -> Verdict:
        """What follows a failed attempt: the hooks' answer, else the task's ``retries``."""
        task = self.order[i]
        decision = by = None
        if self.has_on_failure:
            ctx = self.context(task, attempt, errors, started)
            decision, by = await self.on_failure(ctx, exc)
        return after_failure(
            decision,
            by,
            attempt=attempt,
            max_attempts=self.max_attempts,
            fallback=Retry(task.retry_delay) if attempt <= task.retries else None,
            budget=self.budget,
        )

    def context(
        self, task: Task, attempt: int, errors: list[BaseException], started: float
    ) -> TaskHookContext:
        return TaskHookContext(
            task=task,
            attempt=attempt,
            executor=task.agent,
            run_id=self.run_id,
            errors=tuple(errors),
            started_at=started,
        )

    async def body(self, task: Task, kwargs: dict[str, Any]) -> Any:
        """The attempt's body, with its timeout and, for agent tasks, the dispatch."""
        if task.timeout is not None:
            with anyio.fail_after(task.timeout):
                result = await self.executor.execute(task, kwargs)
                if task.agent is not None:
                    result = await self.dispatch(task, result)
            return result
        result = await self.executor.execute(task, kwargs)
        return await self.dispatch(task, result)

    async def dispatch(self, task: Task, text: Any) -> Any:
        assert self.dispatcher is not None
        assert task.agent is not None
        answer = await self.dispatcher.dispatch(task.agent, str(text), parent=self.dag.name)
        return answer.output

    def decided(
        self, i: int, verdict: Verdict, error: BaseException | None, at: AttemptSpan
    ) -> None:
        """End task ``i`` as a (non-retry) verdict says; no decision means a plain failure."""
        decision = verdict.decision
        if verdict.overruled is not None:  # the hook's (or task's) Retry, refused by a cap
            at.decision(verdict.overruled, verdict.hook or _TASK_RETRIES)
            at.decision(decision, _ORCHESTRA)
        elif decision is not None:
            at.decision(decision, verdict.hook or _TASK_RETRIES)
        tid = self.order[i].id
        who = f" by {verdict.hook}" if verdict.hook is not None else ""
        reason = getattr(decision, "reason", None)
        if isinstance(decision, Skip):
            self.reasons[tid] = f"skipped{who}" + (f": {reason}" if reason else "")
            if error is not None:
                self.errors[tid] = error
            self.settle(i, _SKIPPED)
            return
        if decision is not None:
            self.reasons[tid] = f"failed{who}" + (f": {reason}" if reason else "")
        self.errors[tid] = error if error is not None else TaskFailed(tid, reason)
        self.settle(i, _FAILED)
        if self.fail_fast:
            self.stop()

    def stop(self) -> None:
        """Cancel everything still running (fail_fast, or a fatal BaseException)."""
        self.stopping = True
        if self.tg is not None:
            self.tg.cancel_scope.cancel()

    # -- propagation ----------------------------------------------------------------------

    def settle(self, i: int, state: TaskState) -> None:
        """Record task ``i``'s terminal state and release (or settle) its dependents."""
        states = self.states
        states[i] = state
        self.done += 1
        if state is not _SUCCEEDED and state in _NOT_OK:
            self.not_ok += 1
        remote = self.remote
        if remote is not None:
            remote.ended(i, self.outputs)
        remaining = self.remaining
        dependents = self.dependents
        ready = self.ready
        stack = [i]
        while stack:
            for d in dependents[stack.pop()]:
                remaining[d] -= 1
                if remaining[d] == 0:
                    gate = self.gate(d)
                    if gate is None:
                        ready.append(d)
                    else:
                        states[d] = gate
                        self.done += 1
                        if gate is not _SKIPPED:  # UPSTREAM_FAILED or CANCELLED
                            self.not_ok += 1
                        if remote is not None:
                            remote.ended(d, self.outputs)
                        stack.append(d)
        idle = self.idle
        if idle:
            if self.done >= self.total:
                while idle:
                    idle.pop().set()
            else:
                for _ in range(min(len(idle), len(ready))):
                    idle.pop().set()

    def gate(self, d: int) -> TaskState | None:
        """None if task ``d`` may run now its upstreams ended, else its terminal state."""
        rule = self.order[d].trigger
        if rule == "all_done":
            return None
        states = self.states
        failed = skipped = cancelled = False
        for u in self.upstreams[d]:
            s = states[u]
            if s is _SUCCEEDED:
                continue
            if s is _FAILED or s is _UPSTREAM_FAILED:
                failed = True
            elif s is _SKIPPED:
                skipped = True
            else:
                cancelled = True
        if failed:
            return _UPSTREAM_FAILED
        if cancelled:
            return _CANCELLED
        if skipped and rule == "all_success":
            return _SKIPPED
        return None
