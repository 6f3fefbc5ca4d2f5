"""The anyio DAG scheduler: one ``_Run`` per run (``run()`` is its public face).

How the engine is drawn (``docs/architecture.md``):

- ``_Run`` (here) holds what a run is configured with (the plan, the hook chain and its
  one boolean per hook point, the executor and its ``Capabilities``, telemetry, the
  journal) and drives it: ``execute`` -> ``before_run`` -> the workers -> cleanup after
  a ``fail_fast`` stop -> ``on_end``/``after_run``, however it ends.
- ``RunState`` (``_run_state``) owns the tasks' states, counts and the ready queue;
  nothing else writes them.
- ``_workers``: long-lived worker tasks take ready tasks, run a bare body ``in_place``
  or the layered attempt loop (``_attempt``), whose last layer (``_settle``) ends the
  task through ``RunState``.
"""

from __future__ import annotations

import contextlib
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
from orchestra._chain import DEFAULT_HOOK_TIMEOUT, Caller, CallerNow, HookChain
from orchestra._errors import DAGError, HookError
from orchestra._hooks import TaskHooks
from orchestra._moments import hook_objects
from orchestra._reporting import start_reporting, stop_reporting
from orchestra._spending import Spending, budgets_of, spending
from orchestra.dag._executor import (
    AgentDispatcher,
    Capabilities,
    Executor,
    LocalExecutor,
    PooledExecutor,
)
from orchestra.dag._model import DAG, TaskState
from orchestra.dag._plan import KIND_FULL
from orchestra.dag._remote import RemoteOutputs, chained
from orchestra.dag._result import Column, RunResult
from orchestra.dag._run_hooks import before_run, end_run
from orchestra.dag._run_state import RunState
from orchestra.dag._threads import ThreadPool
from orchestra.dag._workers import SLICE, worker
from orchestra.tracing._engine import NO_RUN, RunTelemetry, set_budget_use

if TYPE_CHECKING:
    from opentelemetry.trace import Tracer

    from orchestra.dag._journal import RunJournal


__all__ = ["_Run"]

_THREADS_UNCAPPED: Final = 40  # threads for sync bodies when max_concurrency=None (anyio's)
_NOT_OK: Final = (TaskState.FAILED, TaskState.UPSTREAM_FAILED, TaskState.CANCELLED)


def _check_arguments(
    max_concurrency: int | None, retry_budget: int | None, max_attempts: int
) -> None:
    if max_concurrency is not None and (
        not isinstance(max_concurrency, int) or max_concurrency < 1
    ):
        raise ValueError(f"max_concurrency must be None or an int >= 1, got {max_concurrency!r}")
    if retry_budget is not None and (not isinstance(retry_budget, int) or retry_budget < 0):
        raise ValueError(f"retry_budget must be None or an int >= 0, got {retry_budget!r}")
    if not isinstance(max_attempts, int) or max_attempts < 1:
        raise ValueError(f"max_attempts must be an int >= 1, got {max_attempts!r}")


class _Run:
    """One execution of a DAG (internal; ``run()`` is the public face)."""

    executor: Executor  # set by execute(): the default one needs the event loop
    passed: anyio.Event  # set when the loop pass under way ends (made by its leader)

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
        _check_arguments(max_concurrency, retry_budget, max_attempts)
        plan = dag.plan()
        if fail_fast:
            dag.validate(fail_fast=True)
        if dispatcher is None and plan.agent is not None:
            raise DAGError(
                f"task {plan.agent.id!r} is executed by agent {plan.agent.agent!r}: "
                "pass run(..., dispatcher=...)"
            )
        self.dag = dag
        self.plan = plan
        n = len(plan.order)
        self.workers = n if max_concurrency is None else min(max_concurrency, n)
        self.max_concurrency = self.workers if max_concurrency is None else max_concurrency
        self.capped = max_concurrency is not None
        self.fail_fast = fail_fast
        self.budget = RetryBudget(retry_budget)
        self.max_attempts = max_attempts
        self.given_executor = executor
        self.capabilities = Capabilities(executor)
        self.dispatcher = dispatcher
        self.run_id = uuid.uuid4().hex
        self.journal = journal
        self._hooks(tuple(hook_objects(hooks)), hook_timeout)  # a clear TypeError for H, H()
        self.remote = RemoteOutputs.for_run(
            self.capabilities, plan, self.chain.hooks("after_execute")
        )
        self.state = RunState(
            plan, self._ended if self.has_on_end or self.remote is not None else None
        )
        self.durations: dict[str, float] = {}
        self.hook_errors: list[HookError] = []
        self.record = self.hook_errors.append
        self.messages: dict[str, tuple[str, ...]] = {}
        self.ending: deque[int] = deque()  # tasks whose on_end is due, in the order they ended
        # tasks whose on_end has not returned yet, and an event set as each one does: a
        # task's hooks wait for its upstreams', so an upstream's on_end comes first
        self.ends_pending: set[int] = set()
        self.ends_over: anyio.Event | None = None
        self.ends: dict[int, tuple[Any, ...]] = {}  # what on_end's context needs of a task that ran
        self.up_views: dict[int, Mapping[str, TaskState]] = {}  # upstream states, by task
        self.reuse: dict[int, Any] = {}  # index -> output, of the tasks a resume reuses
        self.kinds = [KIND_FULL] * n  # per task, how a worker runs it: set by execute()
        self.fatal: list[BaseException] = []  # BaseExceptions of bodies: raised at the end
        self.stopping = False
        self.cancelled: type[BaseException] = BaseException  # set by execute()
        self.threads: ThreadPool | None = None  # the run's threads, made by execute()
        # The workers (_workers): idle ones, woken ones, the slice and its loop pass.
        self.idle: list[anyio.Event] = []
        self.workers_started = 0  # workers started (at most ``workers``), each when needed
        self.woken = 0
        self.slice_end = 0.0
        self.slice_cpu = 0.0
        self.passing = False
        self.base: contextvars.Context | None = None  # the context new workers start in
        self.tg: anyio.abc.TaskGroup | None = None
        self.tel: RunTelemetry = NO_RUN  # decided once per run in execute()
        self.tracer: Tracer | None = None
        self.started = 0.0
        self.finished = 0.0

    def _hooks(self, hooks: tuple[object, ...], timeout: float | None) -> None:
        """One boolean per hook point: with no hooks, a run does nothing more."""
        self.budgets = budgets_of(hooks)
        self.spent: tuple[Spending, ...] = ()  # the budgets' counts, opened by execute()
        chain = self.chain = HookChain(hooks, TaskHooks, timeout=timeout)
        self.has_before = chain.has("before_execute")
        self.has_after = chain.has("after_execute")
        self.has_on_failure = chain.has("on_failure")
        self.has_on_end = chain.has("on_end")
        self.hooked = self.has_before or self.has_after or self.has_on_failure or self.has_on_end
        self.run_hooks = chain.has("before_run") or chain.has("after_run") or self.has_on_end
        self.calls: dict[str, Caller] = {}  # the attempt's moments, bound by _prepare()
        self.calls_now: dict[str, CallerNow] = {}  # those called here and now
        self.before_now = self.after_now = False

    def _ended(self, i: int) -> None:
        """``RunState`` says task ``i`` ended: its ``on_end`` is due, its upstreams may go."""
        if self.has_on_end:
            self.ending.append(i)
            self.ends_pending.add(i)
        if self.remote is not None:
            self.remote.ended(i, self.state.outputs)

    # -- the run --------------------------------------------------------------------------

    async def execute(self) -> RunResult:
        """Run the DAG to its end; the ``RunResult`` (or the bodies' ``BaseException``)."""
        self.started = time.monotonic()
        self.cancelled = anyio.get_cancelled_exc_class()
        if self.journal is not None:
            self.reuse = await self.journal.start(
                self.dag,
                self.run_id,
                self.plan.order,
                self.plan.upstreams,
                self.durations,
                self.state.outputs,
                keep_outputs=self.remote is None,
            )
        async with self._thread_pool():
            # the bodies' guarded tools and agents' model calls are charged to the budgets
            with spending(self.budgets) as self.spent:
                return await self._execute()

    def _thread_pool(self) -> contextlib.AbstractAsyncContextManager[object]:
        """The run's threads for sync bodies, when it runs some and has no executor."""
        if self.given_executor is not None or not self.plan.threads:
            return contextlib.nullcontext()
        self.threads = ThreadPool(max(self.workers, 1) if self.capped else _THREADS_UNCAPPED)
        return self.threads

    async def _execute(self) -> RunResult:
        self._prepare()
        escaped: BaseException | None = None
        result: RunResult | None = None
        # Adapters report the errors of the hooks they run (YAML hooks) to this run.
        reporting = start_reporting(self.record)
        self.base = contextvars.copy_context()
        try:
            if not (self.chain.has("before_run") and await before_run(self)):
                await self.work()
                if self.stopping and self.fail_fast and not self.fatal:
                    await self.clean_up()
        except BaseException as exc:
            escaped = exc
            raise
        finally:
            try:
                result = await self._finish(escaped)
            finally:
                stop_reporting(reporting)
        if self.fatal:
            if len(self.fatal) == 1:
                raise self.fatal[0]
            raise BaseExceptionGroup("several tasks raised a BaseException", self.fatal)
        return result

    def _prepare(self) -> None:
        """The executor, telemetry, and which tasks run in place (once per run)."""
        if self.given_executor is not None:
            self.executor = self.given_executor
        elif self.threads is not None:
            self.executor = PooledExecutor(self.threads)
        else:
            self.executor = LocalExecutor()  # no sync body runs in a thread
        tel = self.tel = RunTelemetry.start(
            self.dag.name,
            self.run_id,
            tasks=len(self.plan.order),
            max_concurrency=self.max_concurrency,
            deps=((task.id, task.deps) for task in self.plan.order),
        )
        self.tracer = tel.tracer
        self._bind_hooks()
        if tel is NO_RUN and self.remote is not None:
            self.executor = chained(self, self.executor)  # dependents submitted ahead
        if tel is NO_RUN and not self.hooked and self.given_executor is None:
            self.kinds = list(self.plan.kinds)  # bodies with nothing around them: in place
            for i in self.reuse:  # except the tasks a resume reuses
                self.kinds[i] = KIND_FULL

    def _bind_hooks(self) -> None:
        """The attempt's moments bound once per run (``HookChain.caller``), tracer and all.

        A moment only inline ``def`` hooks implement (and, after the body, no remote
        output to fetch first) is called here and now, with no coroutine around it.
        """
        chain, tracer = self.chain, self.tracer
        self.calls = {
            moment: chain.caller(moment, tracer=tracer)
            for moment in ("before_execute", "after_execute", "on_failure")
        }
        self.before_now = self.has_before and not chain.awaits("before_execute")
        self.after_now = (
            self.has_after and not chain.awaits("after_execute") and self.remote is None
        )
        self.calls_now = {
            moment: chain.caller_now(moment, tracer=tracer)
            for moment, now in (
                ("before_execute", self.before_now),
                ("after_execute", self.after_now),
            )
            if now
        }

    async def _finish(self, escaped: BaseException | None) -> RunResult:
        """However the run ended: unfinished tasks CANCELLED, outputs, hooks, trace, journal."""
        self.state.cancel_unfinished()
        if self.remote is not None:
            if escaped is None and not self.fatal:
                await self.remote.finish(self.state.outputs, self.state.errors)
            else:
                self.remote.release_all(self.state.outputs)
        if self.run_hooks:  # on_end and after_run, exactly once, however the run ends
            with anyio.CancelScope(shield=True):
                result = await end_run(self)
        else:
            self.finished = time.monotonic()
            result = self.result()
        if self.tel is not NO_RUN:
            self.finish_trace(self.tel, self.fatal[0] if self.fatal else escaped)
        if self.journal is not None:
            await self.journal.finish(self.state.states, self.state.attempts, self.state.errors)
        return result

    async def work(self) -> None:
        """Run the workers until every task ended (or the run stops)."""
        self.idle.clear()  # of workers a fail_fast stop cancelled
        # With an executor of the run's own, a worker per task ready now (up to the cap):
        # all start at the loop's first pass, as an executor that batches what one pass
        # submits wants (Dask's). Else one starts; others start as bodies wait (hand_on).
        per_ready = min(self.workers, max(len(self.state.ready), 1))
        first = per_ready if self.given_executor is not None else 1
        self.workers_started = self.woken = first
        self.slice_end = time.perf_counter() + SLICE
        self.slice_cpu = time.thread_time() + SLICE
        async with anyio.create_task_group() as tg:
            self.tg = tg
            for _ in range(first):
                tg.start_soon(worker, self)

    async def clean_up(self) -> None:
        """After a fail_fast stop: run the ``run_on_fail_fast`` tasks, as cleanup."""
        self.stopping = False
        self.fail_fast = False  # a failing cleanup task stops no other
        self.state.keep_for_cleanup()
        if not self.state.finished:
            await self.work()

    def finish_trace(self, tel: RunTelemetry, error: BaseException | None) -> None:
        """End the run span: outcome, tasks that never ran, a fatal error."""
        states = self.state.states
        failed = sum(1 for s in states if s in _NOT_OK)
        not_run = [
            (task.id, state.value)
            for task, state, n in zip(self.plan.order, states, self.state.attempts, strict=True)
            if n == 0
        ]
        if self.spent and tel.span is not None:
            set_budget_use(tel.span, [spent.use() for spent in self.spent])
        tel.finish(ok=not failed, failed=failed, not_run=not_run, error=error)

    def result(self) -> RunResult:
        """The ``RunResult`` of the states reached so far."""
        journal = self.journal
        state = self.state
        return RunResult(
            ok=not state.not_ok,
            states=Column(self.plan.index, state.states),
            outputs=state.outputs,
            errors=state.errors,
            attempts=Column(self.plan.index, state.attempts),
            run_id=self.run_id,
            reasons=state.reasons,
            hook_errors=tuple(self.hook_errors),
            durations=self.durations,
            duration=self.finished - self.started,
            reused=frozenset(journal.reused_ids) if journal is not None else frozenset(),
            resumed_from=journal.resumed_from if journal is not None else None,
            resume_notes=journal.notes if journal is not None else {},
            messages=self.messages,
            branches=state.branches,
            budgets=tuple(spent.use() for spent in self.spent),
        )

    def reuse_task(self, i: int) -> None:
        """End task ``i`` SUCCEEDED with the output its resumed run journaled, without running."""
        assert self.journal is not None
        self.journal.reused(i)
        self.state.succeed(i, self.reuse.pop(i))

    def stop(self, grace: float = 0.0) -> None:
        """No task starts any more; those running are cancelled (after ``grace`` seconds).

        ``fail_fast`` cancels at once. A body's ``BaseException`` gives the others
        ``_settle.FATAL_GRACE``: a thread body that raises one at the same moment ends FAILED
        with it too, rather than CANCELLED with its error lost.
        """
        first = not self.stopping
        self.stopping = True
        self.slice_end = -math.inf  # workers take no more tasks
        if self.tg is None:
            return
        if not grace:
            self.tg.cancel_scope.cancel()
        elif first:
            self.tg.start_soon(self._cancel_after, grace)

    async def _cancel_after(self, grace: float) -> None:
        await anyio.sleep(grace)
        assert self.tg is not None
        self.tg.cancel_scope.cancel()
