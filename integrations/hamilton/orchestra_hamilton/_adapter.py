"""``HookAdapter``: orchestra ``TaskHooks`` as a Hamilton lifecycle adapter.

One seam carries the node hooks: Hamilton's ``do_remote_execute`` method, which receives
each node with a function that runs the node's whole lifecycle (other adapters'
``pre_node_execute``/``post_node_execute`` hooks and ``do_node_execute`` method, e.g.
the cache). The adapter calls it once per attempt, so retries are real re-executions
that every other adapter sees, and the ``do_node_execute`` slot stays free for caching.
The run hooks ride ``pre_graph_execute``/``post_graph_execute``; each node's attempts
run in ``_node.Nodes.run``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Generator
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

import orchestra
from orchestra import (
    Fail,
    HookChain,
    HookError,
    TaskFailed,
    TaskHooks,
)
from orchestra.bridge import no_agents
from orchestra.dag import DEFAULT_MAX_ATTEMPTS
from orchestra_hamilton._node import Nodes, reason
from orchestra_hamilton._run import Run

__all__ = ["HookAdapter"]

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
        self._nodes = Nodes(self.chain, max_attempts)
        self._has = {m: self.chain.has(m) for m in _RUN_MOMENTS}
        self._async = frozenset(m for m in _RUN_MOMENTS if self.chain.awaits(m))
        self._track = self._nodes.hooked or any(self._has.values())
        self._runs: dict[str, Run] = {}
        # no node hooks and no traced run going on: a node is Hamilton's alone
        self._passthrough = not self._nodes.hooked

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
        HookChain.run_now(self._begin_async(run), needs_loop="before_run" in self._async)
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
            self._forget(run_id)
            return _Deferred(self._end_async, run, error)
        self._forget(run_id)
        needs_loop = bool(self._async) or "on_end" in self._nodes.awaiting
        HookChain.run_now(self._end_async(run, error), needs_loop=needs_loop)
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
        run.open_span(len(final_vars))
        self._runs[run_id] = run
        self._passthrough = self._passthrough and run.span is None
        return run

    def _forget(self, run_id: str) -> None:
        """A run is over (or never began): the adapter keeps no record of it."""
        self._runs.pop(run_id, None)
        self._passthrough = not self._nodes.hooked and all(
            r.span is None for r in self._runs.values()
        )

    async def _begin_async(self, run: Run) -> None:
        if not self._has["before_run"]:
            return
        ctx = run.run_context(tuple(n.name for n in self._planned(run)))
        decision, by = await self.chain.call(
            "before_run", ctx, subject=run.name, on_error=run.record
        )
        if isinstance(decision, Fail):
            # The run ends before any node, as orchestra's scheduler ends it: every
            # planned node CANCELLED through on_end, then after_run, once (Hamilton does
            # not call post_graph_execute when pre_graph_execute raised).
            error = TaskFailed(run.name, f"run refused by {by}" + reason(decision))
            self._forget(run.run_id)
            run.plan.update((n.name, n) for n in self._planned(run))
            for name in run.plan:
                run.reasons[name] = f"run failed by {by}" + reason(decision)
            await self._end_async(run, error)
            raise error

    async def _end_async(self, run: Run, error: BaseException | None) -> None:
        if error is not None and run.request is not None:
            # Hamilton stopped at a failure: which planned nodes did it never reach?
            run.plan.update((n.name, n) for n in self._planned(run))
        nodes = self._nodes
        for name, state in run.unfinished():
            if nodes.has_end:
                await nodes.ended(run, nodes.task(run.plan[name]), state)
        run.finish(error)
        if self._track:
            self.last_result = run.result()
        if self._has["after_run"]:
            assert self.last_result is not None
            run_ctx = run.run_context(tuple(n.name for n in self._planned(run)))
            await self.chain.call(
                "after_run",
                run_ctx,
                self.last_result,
                subject=run.name,
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
        if self._passthrough:
            return execute_lifecycle_for_node(**kwargs)
        keywords = getattr(execute_lifecycle_for_node, "keywords", None) or {}
        run = self._runs.get(keywords.get("__run_id", ""))
        nodes = self._nodes
        if run is None:  # a run Hamilton started without pre_graph_execute
            if not nodes.hooked:
                return execute_lifecycle_for_node(**kwargs)
            run = self._start(str(keywords.get("__run_id")), None, [], None, None, is_async=False)
            self._forget(run.run_id)
        elif run.span is None and not nodes.hooked:
            return execute_lifecycle_for_node(**kwargs)
        if run.async_driver:
            return asyncio.ensure_future(
                nodes.run_async(run, node, execute_lifecycle_for_node, kwargs)
            )
        return nodes.run_sync(run, node, execute_lifecycle_for_node, kwargs)

    # -- helpers ----------------------------------------------------------------------------

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

    @staticmethod
    def _recorder(run: Run) -> Callable[[HookError], None]:
        def record(error: HookError) -> None:
            run.hook_errors.append(no_agents(error, _ENGINE))

        return record


async def _nothing() -> None:
    return None
