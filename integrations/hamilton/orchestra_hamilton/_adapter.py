"""``HookAdapter``: orchestra ``TaskHooks`` as a Hamilton lifecycle adapter.

One seam carries the node hooks: Hamilton's ``do_remote_execute`` method, which receives
each node with a function that runs the node's whole lifecycle (other adapters'
``pre_node_execute``/``post_node_execute`` hooks and ``do_node_execute`` method, e.g.
the cache). The adapter calls it once per attempt, so retries are real re-executions
that every other adapter sees, and the ``do_node_execute`` slot stays free for caching.
The run hooks ride ``pre_graph_execute``/``post_graph_execute``.

The node loop is one coroutine. Under the synchronous driver it never suspends (hooks
are called synchronously, sleeps block), so it is driven to its end without an event
loop; under the async driver it becomes the asyncio task that Hamilton awaits.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Generator, Mapping
from types import MappingProxyType
from typing import Any, Final, final

from hamilton import node as hamilton_node
from hamilton.async_driver import AsyncGraphAdapter
from hamilton.execution.graph_functions import topologically_sort_nodes
from hamilton.graph import FunctionGraph
from hamilton.lifecycle.base import (
    BaseDoRemoteExecute,
    BasePostGraphExecute,
    BasePostGraphExecuteAsync,
    BasePreGraphExecute,
    BasePreGraphExecuteAsync,
)
from opentelemetry.trace import Span

import orchestra
import orchestra.tracing as ot
from orchestra import (
    Fail,
    HookChain,
    HookError,
    Replace,
    Retry,
    RunContext,
    Skip,
    TaskFailed,
    TaskHooks,
    TaskState,
)
from orchestra.dag import DEFAULT_MAX_ATTEMPTS
from orchestra_hamilton._calls import run_now
from orchestra_hamilton._run import Run, Trace, record_decision, record_error

__all__ = ["HookAdapter"]

_NODE_MOMENTS: Final = ("before_execute", "after_execute", "on_failure", "on_end")
_RUN_MOMENTS: Final = ("before_run", "after_run")
_ENGINE: Final = "Hamilton"


@final
class _Deferred:
    """An awaitable that starts ``fn(*args)`` only when awaited.

    The async driver calls a hook registered both ways twice, first as a sync hook
    (ignoring what it returns) and then as an async one (awaiting it): the first gets
    one of these, which does nothing and warns of nothing when dropped.
    """

    __slots__ = ("args", "fn")

    def __init__(self, fn: Callable[..., Awaitable[None]], *args: Any) -> None:
        self.fn = fn
        self.args = args

    def __await__(self) -> Generator[Any, None, None]:
        return self.fn(*self.args).__await__()


@final
class HookAdapter(
    BaseDoRemoteExecute,
    BasePreGraphExecute,
    BasePreGraphExecuteAsync,
    BasePostGraphExecute,
    BasePostGraphExecuteAsync,
):
    """Runs orchestra ``TaskHooks`` around every node of a Hamilton driver.

    Pass it to ``driver.Builder().with_adapters(HookAdapter(MyHooks()))`` (or to the
    async driver's builder). Each node is a task whose id is the node's name and whose
    ``metadata`` are its tags; the hooks' decisions are carried out: ``Retry`` runs the
    node again after its delay, ``Skip`` gives it the value None downstream, ``Fail``
    raises, ``Replace`` changes the node's inputs or output (or recovers a failure).

    Args:
        *hooks: ``TaskHooks`` objects, called in this order at each moment.
        name: the run's name in hook contexts and traces (``RunContext.dag``).
        hook_timeout: seconds an ``async`` hook call may take unless the hook object sets
            its own ``timeout`` (None = no limit).
        max_attempts: hard cap on the attempts of one node, whatever hooks answer.

    Attributes:
        chain: the compiled ``orchestra.HookChain``.
        hook_errors: the hook errors recorded by the last run, in order.
        last_result: the ``orchestra.RunResult`` of the last run that ended (states,
            attempts, errors, reasons and hook errors of every node it planned; outputs
            only when ``after_run`` hooks want them), or None when the adapter has no
            hooks (it then records nothing).
    """

    def __init__(
        self,
        *hooks: object,
        name: str = "hamilton",
        hook_timeout: float | None = 60.0,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
    ) -> None:
        if not isinstance(max_attempts, int) or max_attempts < 1:
            raise ValueError(f"max_attempts must be an int >= 1, got {max_attempts!r}")
        self.chain = HookChain(hooks, trait=TaskHooks, timeout=hook_timeout)
        self.name = name
        self.max_attempts = max_attempts
        self.hook_errors: list[HookError] = []
        self.last_result: orchestra.RunResult | None = None
        self._async = frozenset(m for m in _NODE_MOMENTS + _RUN_MOMENTS if self.chain.awaits(m))
        self._has = {m: self.chain.has(m) for m in _NODE_MOMENTS + _RUN_MOMENTS}
        self._node_hooks = any(self._has[m] for m in _NODE_MOMENTS)
        self._track = self._node_hooks or any(self._has[m] for m in _RUN_MOMENTS)
        self._runs: dict[str, Run] = {}
        self._tasks: dict[str, orchestra.Task] = {}  # node name -> its task, across runs

    def __repr__(self) -> str:
        return f"HookAdapter({self.chain!r})"

    # -- the run ----------------------------------------------------------------------------

    def pre_graph_execute(
        self,
        *,
        run_id: str,
        graph: FunctionGraph,
        final_vars: list[str],
        inputs: dict[str, Any] | None,
        overrides: dict[str, Any] | None,
    ) -> Any:
        """Start a run: its records, its span, and the ``before_run`` hooks."""
        is_async = any(isinstance(a, AsyncGraphAdapter) for a in graph.adapter.adapters)
        if is_async:
            if run_id in self._runs:  # the second, awaited call of the async driver
                return _Deferred(self._begin_async, self._runs[run_id])
            self._start(run_id, graph, final_vars, inputs, overrides, is_async=True)
            return _Deferred(_nothing)
        run = self._start(run_id, graph, final_vars, inputs, overrides, is_async=False)
        run_now(self._begin_async(run), needs_loop="before_run" in self._async)
        return None

    def post_graph_execute(
        self,
        *,
        run_id: str,
        graph: FunctionGraph,
        success: bool,
        error: Exception | None,
        results: dict[str, Any] | None,
    ) -> Any:
        """End a run: nodes never reached, the run span, the ``after_run`` hooks."""
        run = self._runs.get(run_id)
        if run is None:
            return _Deferred(_nothing) if self._is_async_graph(graph) else None
        if run.async_driver:
            if not run.ending:  # the first, synchronous call of the async driver
                run.ending = True
                return _Deferred(_nothing)
            del self._runs[run_id]
            return _Deferred(self._end_async, run, error)
        del self._runs[run_id]
        run_now(self._end_async(run, error), needs_loop=bool(self._async))
        return None

    @staticmethod
    def _is_async_graph(graph: FunctionGraph) -> bool:
        return any(isinstance(a, AsyncGraphAdapter) for a in graph.adapter.adapters)

    def _start(
        self,
        run_id: str,
        graph: FunctionGraph | None,
        final_vars: list[str],
        inputs: dict[str, Any] | None,
        overrides: dict[str, Any] | None,
        *,
        is_async: bool,
    ) -> Run:
        run = Run(run_id, self.name, async_driver=is_async, keep_outputs=self._has["after_run"])
        self.hook_errors = run.hook_errors
        run.record = self._recorder(run)
        if graph is not None and self._track:
            run.request = (graph, final_vars, inputs or {}, overrides or {})
        tracer = ot.get_tracer()
        if tracer is not None:
            run.trace = Trace(tracer, self.name, run_id, len(final_vars))
            run.tracer = tracer
        self._runs[run_id] = run
        return run

    async def _begin_async(self, run: Run) -> None:
        if not self._has["before_run"]:
            return
        ctx = RunContext(
            dag=run.dag,
            run_id=run.run_id,
            task_ids=tuple(n.name for n in self._planned(run)),
            started_at=run.started_at,
        )
        decision, by = await self.chain.call(
            "before_run", ctx, subject=run.dag, on_error=run.record
        )
        if isinstance(decision, Fail):
            self._runs.pop(run.run_id, None)
            if run.trace is not None:
                run.trace.finish(False, 0, None)
            raise TaskFailed(run.dag, f"run refused by {by}" + _reason(decision))

    async def _end_async(self, run: Run, error: BaseException | None) -> None:
        if error is not None and run.request is not None:
            # Hamilton stopped at a failure: which planned nodes did it never reach?
            run.plan.update((n.name, n) for n in self._planned(run))
        for name, state in run.unfinished():
            if self._has["on_end"]:
                node: Any = run.plan[name]
                task = self._task(node, name)
                ctx = run.context(task, 0, [], 0.0, {})
                await self._call(run, "on_end", ctx, state, sync=False, subject=name)
        if run.trace is not None:
            run.trace.finish(not run.failed(), run.failed(), error)
        if self._track:
            self.last_result = run.result()
        if self._has["after_run"]:
            assert self.last_result is not None
            run_ctx = RunContext(
                dag=run.dag,
                run_id=run.run_id,
                task_ids=tuple(n.name for n in self._planned(run)),
                started_at=run.started_at,
            )
            await self.chain.call(
                "after_run",
                run_ctx,
                self.last_result,
                subject=run.dag,
                on_error=run.record,
            )

    # -- one node, all its attempts --------------------------------------------------------

    def do_remote_execute(
        self,
        *,
        node: hamilton_node.Node,
        execute_lifecycle_for_node: Callable[..., Any],
        **kwargs: Any,
    ) -> Any:
        """Run one node through the hooks (Hamilton calls this for every node)."""
        keywords = getattr(execute_lifecycle_for_node, "keywords", None) or {}
        run = self._runs.get(keywords.get("__run_id", ""))
        if run is None:  # a run Hamilton started without pre_graph_execute
            if not self._node_hooks:
                return execute_lifecycle_for_node(**kwargs)
            run = self._start(str(keywords.get("__run_id")), None, [], None, None, is_async=False)
            del self._runs[run.run_id]
        elif run.trace is None and not self._node_hooks:
            return execute_lifecycle_for_node(**kwargs)
        if run.async_driver:
            return asyncio.ensure_future(
                self._node(run, node, execute_lifecycle_for_node, kwargs, sync=False)
            )
        return run_now(
            self._node(run, node, execute_lifecycle_for_node, kwargs, sync=True), needs_loop=False
        )

    async def _node(
        self,
        run: Run,
        node: hamilton_node.Node,
        body: Callable[..., Any],
        kwargs: dict[str, Any],
        *,
        sync: bool,
    ) -> Any:
        """Every attempt of one node (see the module docstring for ``sync``)."""
        if not sync:  # upstream nodes are asyncio tasks under the async driver
            kwargs = {k: (await v) if isinstance(v, Awaitable) else v for k, v in kwargs.items()}
        name = node.name
        task = self._task(node, name) if self._node_hooks else None
        upstream = run.upstream_states(task) if task is not None else None
        started = started_at = time.monotonic()
        errors: list[BaseException] = []
        span: Span | None = None
        attempt = 0
        while True:
            attempt += 1
            run.attempts[name] = attempt
            previous, span = span, None
            if run.trace is not None:
                span = run.trace.attempt(name, attempt, previous)
            ctx = None  # this attempt's context, shared by its moments while it holds
            try:
                if self._has["before_execute"]:
                    assert task is not None
                    ctx = run.context(task, attempt, errors, started_at, kwargs, upstream)
                    call = self.chain.call(
                        "before_execute", ctx, subject=name, on_error=run.record, tracer=run.tracer
                    )
                    if sync and "before_execute" in self._async:
                        decision, by = run_now(call, needs_loop=True)
                    else:  # def hooks only never suspend: the sync driver's loop holds
                        decision, by = await call
                    if decision is not None and type(decision) is Replace:
                        kwargs = self._replaced_inputs(run, name, decision, by)
                        ctx = None
                    elif decision is not None:
                        _decided(span, decision, by, attempt)
                        return await self._refused(run, task, attempt, decision, by, started, sync)
                try:
                    result = body(**kwargs)
                    if not sync and isinstance(result, Awaitable):
                        result = await result
                except Exception as exc:
                    errors.append(exc)
                    if span is not None:
                        record_error(span, exc)
                    decision, by = None, None
                    if self._has["on_failure"]:
                        assert task is not None
                        ctx = run.context(task, attempt, errors, started_at, kwargs, upstream)
                        decision, by = await self._call(run, "on_failure", ctx, exc, sync=sync)
                    if isinstance(decision, Retry) and attempt < self.max_attempts:
                        _decided(span, decision, by, attempt)
                        if span is not None:
                            span.set_attribute(ot.ATTR_TASK_STATE, ot.STATE_RETRYING)
                        if decision.delay:
                            if sync:  # the sync driver's loop never suspends: block
                                time.sleep(decision.delay)  # noqa: ASYNC251
                            else:
                                await asyncio.sleep(decision.delay)
                        continue
                    if isinstance(decision, Retry):
                        _decided(span, decision, by, attempt)
                        decision, by = (
                            Fail(f"attempt cap of {self.max_attempts} reached"),
                            "orchestra",
                        )
                    if decision is not None:
                        _decided(span, decision, by, attempt)
                    if decision is not None and type(decision) is Replace:
                        result = decision.value
                        run.errors[name] = exc
                    elif isinstance(decision, Skip):
                        run.errors[name] = exc
                        await self._end(run, task, name, TaskState.SKIPPED, started, sync)
                        run.reasons[name] = f"skipped by {by}" + _reason(decision)
                        return None
                    else:
                        run.errors[name] = exc
                        if decision is not None:
                            run.reasons[name] = f"failed by {by}" + _reason(decision)
                            exc.add_note(f"orchestra: {run.reasons[name]}")
                        await self._end(run, task, name, TaskState.FAILED, started, sync)
                        raise
                else:
                    if self._has["after_execute"]:
                        assert task is not None
                        if ctx is None:
                            ctx = run.context(task, attempt, errors, started_at, kwargs, upstream)
                        call = self.chain.call(
                            "after_execute",
                            ctx,
                            result,
                            subject=name,
                            on_error=run.record,
                            tracer=run.tracer,
                        )
                        if sync and "after_execute" in self._async:
                            decision, by = run_now(call, needs_loop=True)
                        else:
                            decision, by = await call
                        if decision is not None and type(decision) is Replace:
                            result = decision.value
                        elif decision is not None:  # a fail-closed hook error
                            _decided(span, decision, by, attempt)
                            return await self._refused(
                                run, task, attempt, decision, by, started, sync
                            )
                if run.keep_outputs:
                    run.outputs[name] = result
                await self._end(run, task, name, TaskState.SUCCEEDED, started, sync)
                return result
            finally:
                if span is not None:
                    if span.is_recording() and name in run.states:
                        span.set_attribute(ot.ATTR_TASK_STATE, run.states[name].value)
                    span.end()

    async def _refused(
        self,
        run: Run,
        task: orchestra.Task,
        attempt: int,
        decision: object,
        by: str | None,
        started: float,
        sync: bool,
    ) -> None:
        """A node given up before (or right after) its body: Skip -> None, Fail -> raise."""
        name = task.id
        if isinstance(decision, Skip):
            run.reasons[name] = f"skipped by {by}" + _reason(decision)
            await self._end(run, task, name, TaskState.SKIPPED, started, sync)
            return None
        run.reasons[name] = f"failed by {by}" + _reason(decision)
        error = run.errors[name] = TaskFailed(name, getattr(decision, "reason", None))
        await self._end(run, task, name, TaskState.FAILED, started, sync)
        raise error

    def _replaced_inputs(
        self, run: Run, name: str, decision: Any, by: str | None
    ) -> dict[str, Any]:
        value = decision.value
        if not isinstance(value, Mapping):
            error = HookError(
                f"hook {by} for {name!r} answered Replace({value!r}) in before_execute: "
                "the node's inputs must be a mapping of keyword arguments",
                hook=(by or "?").split(".")[0],
                moment="before_execute",
                subject=name,
            )
            run.hook_errors.append(error)
            raise error
        return dict(value)

    async def _end(
        self,
        run: Run,
        task: orchestra.Task | None,
        name: str,
        state: TaskState,
        started: float,
        sync: bool,
    ) -> None:
        run.settle(name, state, started)
        if self._has["on_end"]:
            assert task is not None
            ctx = run.context(task, run.attempts.get(name, 0), [], 0.0, {})
            await self._call(run, "on_end", ctx, state, sync=sync, subject=name)

    # -- helpers ----------------------------------------------------------------------------

    def _task(self, node: Any, name: str) -> orchestra.Task:
        """The ``orchestra.Task`` standing for a node, made once per node and adapter."""
        task = self._tasks.get(name)
        if task is None or task.fn is not node.callable:  # new, or another driver's node
            task = self._tasks[name] = orchestra.Task(
                id=name,
                fn=node.callable,
                deps=[d.name for d in node.dependencies],
                metadata=MappingProxyType(dict(node.tags)),
            )
        return task

    @staticmethod
    def _planned(run: Run) -> list[Any]:
        """The nodes ``driver.execute`` plans to run, in a topological order."""
        if run.request is None:
            return []
        graph, final_vars, inputs, overrides = run.request
        nodes, _ = graph.get_upstream_nodes(final_vars, inputs, overrides)
        return [
            n
            for n in topologically_sort_nodes(list(nodes))
            if not n.user_defined and n.name not in overrides
        ]

    async def _call(
        self, run: Run, moment: str, *args: Any, sync: bool, subject: str | None = None
    ) -> tuple[Any, str | None]:
        call = self.chain.call(
            moment,
            *args,
            subject=subject if subject is not None else args[0].task.id,
            on_error=run.record,
            tracer=run.tracer,
        )
        if sync and moment in self._async:  # the sync driver: async hooks get a loop
            return run_now(call, needs_loop=True)
        return await call  # def hooks only: never suspends, so the sync driver's loop holds

    @staticmethod
    def _recorder(run: Run) -> Callable[[HookError], None]:
        def record(error: HookError) -> None:
            if "Delegate(" in str(error):
                error = HookError(
                    f"{error} ({_ENGINE} runs no agents: Delegate is for subagent dispatches)",
                    hook=error.hook,
                    moment=error.moment,
                    subject=error.subject,
                )
            run.hook_errors.append(error)

        return record


async def _nothing() -> None:
    return None


def _reason(decision: object) -> str:
    reason = getattr(decision, "reason", None)
    return f": {reason}" if reason else ""


def _decided(span: Span | None, decision: object, by: str | None, attempt: int) -> None:
    if span is not None:
        record_decision(span, decision, by, attempt)
