"""The anyio DAG scheduler: one ``_Run`` per run (``run()`` is its public face).

Design (measured, see ``bench/scheduler.py``): a fixed pool of long-lived worker tasks,
as many as ``max_concurrency`` allows, takes task indexes from one ready deque
(``_workers``); finishing a task settles its dependents (``_settle``): trigger rules,
upstream failures, and wakes idle workers for the new ready work. A task's attempts,
with their hooks, are ``_task_run``'s; the run's own hooks are ``_run_hooks``'s.
"""

from __future__ import annotations

import contextvars
import math
import time
import uuid
from collections import deque
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final

import anyio
import anyio.abc

from orchestra._attempts import RetryBudget
from orchestra._chain import DEFAULT_HOOK_TIMEOUT, HookChain
from orchestra._errors import DAGError, HookError
from orchestra._hooks import TaskHooks
from orchestra._reporting import start_reporting, stop_reporting
from orchestra.dag._executor import AgentDispatcher, Executor, LocalExecutor
from orchestra.dag._model import DAG, TaskState
from orchestra.dag._remote import RemoteOutputs, chained
from orchestra.dag._result import Column, RunResult
from orchestra.dag._run_hooks import before_run, end_run
from orchestra.dag._settle import settle
from orchestra.dag._threads import ThreadPool
from orchestra.dag._workers import SLICE, worker
from orchestra.tracing._engine import NO_RUN, RunTelemetry

if TYPE_CHECKING:
    from opentelemetry.trace import Tracer

    from orchestra.dag._journal import RunJournal


__all__ = ["_Run"]

_PENDING: Final = TaskState.PENDING
_SUCCEEDED: Final = TaskState.SUCCEEDED
_FAILED: Final = TaskState.FAILED
_UPSTREAM_FAILED: Final = TaskState.UPSTREAM_FAILED
_CANCELLED: Final = TaskState.CANCELLED
_THREADS_UNCAPPED: Final = 40  # threads for sync bodies when max_concurrency=None (anyio's)
_NOT_OK: Final = (_FAILED, _UPSTREAM_FAILED, _CANCELLED)


class _Run:
    """One execution of a DAG (internal; ``run()`` is the public face)."""

    executor: Executor  # set by execute(): the default one needs the event loop
    passed: anyio.Event  # set when the loop pass under way ends (made by its leader)
    settle = settle

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
        hook_timeout: float | None = DEFAULT_HOOK_TIMEOUT,
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
        if fail_fast:
            dag.validate(fail_fast=True)
        self.dag = dag
        self.plan = plan
        self.order = plan.order
        self.dependents = plan.dependents
        self.wants = plan.wants
        if dispatcher is None and plan.agent is not None:
            raise DAGError(
                f"task {plan.agent.id!r} is executed by agent {plan.agent.agent!r}: "
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
        self.remaining = remaining = plan.indegree.copy()
        self.ready: deque[int] = deque(plan.sources)
        # Rules that decide early on a success; "always" tasks start at once (-1: queued).
        self.early_on_success = plan.early
        # Whether a task runs as soon as its last upstream succeeds: its rule runs it
        # after successes, and no upstream ended otherwise (settling clears it).
        self.runs_on_success = plan.on_success.copy()
        for i in plan.always:
            if remaining[i]:
                remaining[i] = -1
                self.ready.append(i)
        self.cleaning = False  # after a fail_fast stop: only run_on_fail_fast tasks run
        self.done = 0
        self.not_ok = 0  # tasks settled FAILED, UPSTREAM_FAILED or CANCELLED
        self.index = plan.index
        self.idle: list[anyio.Event] = []  # what wakes each idle worker, in the order they waited
        self.woken = 0  # workers started or woken that did not look at the ready deque yet
        self.slice_end = 0.0  # when the workers next let the loop run (-inf: stopped)
        self.slice_cpu = 0.0  # ... and the loop thread's CPU time by then (_workers)
        self.passing = False  # a worker leads a loop pass (the slice ended)
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
        chain = self.chain = HookChain(hooks, TaskHooks, timeout=hook_timeout)
        # One boolean per hook point: with no hooks, a run does nothing more.
        self.has_before = chain.has("before_execute")
        self.has_after = chain.has("after_execute")
        self.has_on_failure = chain.has("on_failure")
        self.has_on_end = chain.has("on_end")
        self.end_awaits = self.has_on_end and chain.awaits("on_end")
        self.hooked = self.has_before or self.has_after or self.has_on_failure or self.has_on_end
        self.run_hooks = chain.has("before_run") or chain.has("after_run") or self.has_on_end
        self.ending: deque[int] = deque()  # tasks whose on_end is due, in the order they ended
        self.ends: dict[int, tuple[Any, ...]] = {}  # what on_end's context needs of a task that ran
        self.up_views: dict[int, Mapping[str, TaskState]] = {}  # upstream states, by task
        self.messages: dict[str, tuple[str, ...]] = {}
        self.record = self.hook_errors.append
        self.tg: anyio.abc.TaskGroup | None = None
        self.started = 0.0
        self.finished = 0.0
        self.max_concurrency = self.workers if max_concurrency is None else max_concurrency
        self.capped = max_concurrency is not None
        # An executor whose outputs stay remote (it has fetch): None = plain values.
        self.remote = RemoteOutputs.for_run(executor, plan, chain.hooks("after_execute"))
        self.executor_times = bool(getattr(executor, "applies_timeouts", False))
        # Telemetry, decided once per run in execute(): NO_RUN records nothing.
        self.tel: RunTelemetry = NO_RUN
        self.tracer: Tracer | None = None
        self.journal = journal
        self.reuse: dict[int, Any] = {}  # index -> output, of the tasks a resume reuses
        self.kinds = [0] * n  # per task, how a worker runs it: set by execute()

    @property
    def upstreams(self) -> list[tuple[int, ...]]:
        """Per task, its upstreams' indexes (the plan's, built on first use)."""
        return self.plan.upstreams

    # -- the run --------------------------------------------------------------------------

    async def execute(self) -> RunResult:
        self.started = time.monotonic()
        cancelled = anyio.get_cancelled_exc_class()
        if self.journal is not None:
            self.reuse = await self.journal.start(
                self.dag,
                self.run_id,
                self.order,
                self.upstreams,
                self.durations,
                self.outputs,
                keep_outputs=self.remote is None,
            )
        if self.given_executor is not None:
            self.executor = self.given_executor
        else:
            self.executor = LocalExecutor()
            if self.plan.threads:
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
        if tel is NO_RUN and self.remote is not None:
            self.executor = chained(self, self.executor)  # dependents submitted ahead
        if (
            tel is NO_RUN
            and not self.hooked
            and self.given_executor is None
            and self.remote is None
        ):
            kinds = self.plan.kinds  # bodies with nothing around them run in place
            if self.reuse:  # except the tasks a resume reuses
                kinds = list(kinds)
                for i in self.reuse:
                    kinds[i] = 0
            self.kinds = kinds
        escaped: BaseException | None = None
        result: RunResult | None = None
        # Adapters report the errors of the hooks they run (YAML hooks) to this run.
        reporting = start_reporting(self.record)
        self.base = contextvars.copy_context()
        try:
            if not (self.chain.has("before_run") and await before_run(self)):
                await self.work(cancelled)
                if self.stopping and self.fail_fast and self.fatal is None:
                    await self.clean_up(cancelled)
        except BaseException as exc:
            escaped = exc
            raise
        finally:
            if self.threads is not None:
                self.threads.close()
            if self.done < self.total:
                self.cancel_unfinished()
            if self.remote is not None:
                if escaped is None and self.fatal is None:
                    await self.remote.finish(self.outputs, self.errors)
                else:
                    self.remote.release_all(self.outputs)
            if self.run_hooks:  # on_end and after_run, exactly once, however the run ends
                with anyio.CancelScope(shield=True):
                    result = await end_run(self)
            else:
                self.finished = time.monotonic()
            if tel is not NO_RUN:
                self.finish_trace(tel, self.fatal or escaped)
            if self.journal is not None:
                await self.journal.finish(self.states, self.attempts, self.errors)
            stop_reporting(reporting)
        if self.fatal is not None:
            raise self.fatal
        return result if result is not None else self.result()

    async def work(self, cancelled: type[BaseException]) -> None:
        """Run the workers until every task ended (or the run stops)."""
        self.idle.clear()  # of workers a fail_fast stop cancelled
        self.woken = self.workers
        self.slice_end = time.perf_counter() + SLICE
        self.slice_cpu = time.thread_time() + SLICE
        async with anyio.create_task_group() as tg:
            self.tg = tg
            for _ in range(self.workers):
                tg.start_soon(worker, self, cancelled)

    async def clean_up(self, cancelled: type[BaseException]) -> None:
        """After a fail_fast stop: run the ``run_on_fail_fast`` tasks, as cleanup.

        The other tasks that did not start end CANCELLED first; the cleanup tasks' rules
        judge their upstreams as they ended, those CANCELLED included.
        """
        self.cleaning = True  # gate() ends every other task CANCELLED
        self.runs_on_success = [
            plain and task.run_on_fail_fast
            for plain, task in zip(self.runs_on_success, self.order, strict=True)
        ]
        self.stopping = False
        self.fail_fast = False  # a failing cleanup task stops no other
        ready = self.ready
        order = self.order
        keep = [i for i in ready if order[i].run_on_fail_fast and not self.states[i].terminal]
        ready.clear()
        ready.extend(keep)
        for i, task in enumerate(order):
            if not self.states[i].terminal and not task.run_on_fail_fast:
                self.settle(i, _CANCELLED)
        if self.done < self.total:
            await self.work(cancelled)

    def cancel_unfinished(self) -> None:
        """The tasks that did not end: CANCELLED (their on_end is due)."""
        states = self.states
        for i, state in enumerate(states):
            if not state.terminal:
                states[i] = _CANCELLED
                self.not_ok += 1
                if self.has_on_end:
                    self.ending.append(i)

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
            resume_notes=journal.notes if journal is not None else {},
            messages=self.messages,
        )

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

    def stop(self) -> None:
        """Cancel everything still running (fail_fast, or a fatal BaseException)."""
        self.stopping = True
        self.slice_end = -math.inf  # workers take no more tasks
        if self.tg is not None:
            self.tg.cancel_scope.cancel()
