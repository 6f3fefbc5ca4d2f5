"""``with_hooks``: a ``StateGraph`` whose nodes, tools and runs go through orchestra's hooks.

``with_hooks(builder, hooks, registry)`` copies the builder (the original is left as it
is) with every node's runnable wrapped in the node moments (``_node``), every prebuilt
``ToolNode`` given the tool events (``_tools``) and every compiled subgraph added as a
node rebuilt the same way (its nodes' ids are ``parent/child``). The copy is a
``HookedStateGraph``: ``compile()`` gives a ``HookedGraph``, LangGraph's own compiled graph
whose ``stream``/``astream`` (what ``invoke``/``ainvoke`` call) wrap the run in
``before_run``/``after_run``. Nothing is wrapped that no hook would look at.
"""

from __future__ import annotations

import asyncio
import contextvars
import copy
import dataclasses
from collections.abc import AsyncIterator, Iterable, Iterator
from typing import TYPE_CHECKING, Any, final

from langgraph.graph import StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode
from opentelemetry import context as otel_context
from opentelemetry import trace

import orchestra.tracing as ot
from orchestra import Fail, HookChain, TaskFailed, TaskHooks
from orchestra.bridge import (
    DEFAULT_MAX_ATTEMPTS,
    AttemptDriver,
    Policy,
    budgets_of,
    enter_budgets,
    resolve_policy,
    set_policy,
)
from orchestra.skills import StepEvents
from orchestra_langgraph._node import HookedNode, node_runnable, reason
from orchestra_langgraph._run import Run, current
from orchestra_langgraph._steps import configured
from orchestra_langgraph._sync import blocking
from orchestra_langgraph._tools import ToolEvents, guarded_tool_node

if TYPE_CHECKING:
    from orchestra import Budget
    from orchestra.skills import HookRegistry

__all__ = ["HookedGraph", "HookedStateGraph", "with_hooks"]

_MOMENTS = ("before_run", "before_execute", "after_execute", "on_failure", "on_end", "after_run")


@final
class _Bridge:
    """What a hooked graph and its subgraphs share: the chain, the tool events."""

    __slots__ = (
        "budgets",
        "chain",
        "has_after_run",
        "has_before_run",
        "moments",
        "policy",
        "steps",
        "tools",
    )

    @property
    def active(self) -> bool:
        """Whether a run needs the bridge: hooks, tool events or a tracer."""
        return (
            self.moments.hooked
            or self.has_before_run
            or self.has_after_run
            or self.tools is not None
            or self.run_steps() is not None
            or ot.get_tracer() is not None
        )

    def run_steps(self) -> StepEvents | None:
        """The model calls a run starting here watches: step hooks, or budgets to charge."""
        return self.steps if self.budgets or self.steps.watching else None

    def __init__(
        self,
        chain: HookChain,
        tools: ToolEvents | None,
        steps: StepEvents,
        max_attempts: int,
        policy: Policy,
        budgets: tuple[Budget, ...] = (),
    ) -> None:
        self.policy = policy  # the ambient policy of what the graph's nodes start
        self.chain = chain
        self.budgets = budgets  # each run's own: its model and tool calls are charged
        self.moments = AttemptDriver(chain, max_attempts=max_attempts)
        self.tools = tools if tools is not None and (tools.watching or budgets) else None
        self.steps = steps
        self.has_before_run = chain.has("before_run")
        self.has_after_run = chain.has("after_run")

    def hook(self, builder: StateGraph[Any, Any, Any, Any], prefix: str) -> HookedStateGraph:
        """A copy of ``builder`` with its nodes wrapped."""
        hooked: HookedStateGraph = copy.copy(builder)  # type: ignore[assignment]
        hooked.__class__ = HookedStateGraph  # LangGraph's own class, plus run hooks
        hooked.bridge = self
        hooked.prefix = prefix
        hooked.nodes = {
            name: self._spec(prefix + name, spec) for name, spec in builder.nodes.items()
        }
        hooked.edges = set(builder.edges)
        hooked.waiting_edges = set(builder.waiting_edges)
        return hooked

    def _spec(self, name: str, spec: Any) -> Any:
        runnable = spec.runnable
        if isinstance(runnable, CompiledStateGraph):  # a subgraph: hook its own nodes
            return dataclasses.replace(spec, runnable=self._subgraph(name, runnable))
        if isinstance(runnable, ToolNode) and self.tools is not None:
            runnable = guarded_tool_node(runnable, self.tools)
        if self.moments.hooked:
            node = HookedNode(name, runnable, self.moments, spec.metadata)
            runnable = node_runnable(node, name.rpartition("/")[2])
        return dataclasses.replace(spec, runnable=runnable)

    def _subgraph(self, name: str, graph: CompiledStateGraph[Any, Any, Any, Any]) -> Any:
        return self.hook(graph.builder, name + "/").compile(
            checkpointer=graph.checkpointer,
            store=graph.store,
            cache=graph.cache,
            interrupt_before=graph.interrupt_before_nodes,
            interrupt_after=graph.interrupt_after_nodes,
            debug=graph.debug,
            name=graph.name,
        )


class HookedStateGraph(StateGraph):  # type: ignore[type-arg]  # generic like StateGraph
    """A ``StateGraph`` made by ``with_hooks``: ``compile()`` gives a ``HookedGraph``.

    Build on it as on any ``StateGraph``: nodes added after ``with_hooks`` are not hooked
    (call ``with_hooks`` on the finished builder).
    """

    bridge: _Bridge
    prefix: str

    def compile(self, *args: Any, **kwargs: Any) -> HookedGraph:
        """``StateGraph.compile``, giving a graph whose runs call the run hooks."""
        graph = super().compile(*args, **kwargs)
        graph.__class__ = HookedGraph  # LangGraph builds its own class: add the run hooks
        return graph  # type: ignore[return-value]


class HookedGraph(CompiledStateGraph):  # type: ignore[type-arg]  # generic like its base
    """A compiled hooked graph: each ``invoke``/``ainvoke``/``stream``/``astream`` is a run.

    ``before_run`` runs before the first node and ``after_run`` once at the end, however
    the run ends (a failure, an interrupt, a stream closed early).
    """

    def stream(self, *args: Any, **kwargs: Any) -> Iterator[Any]:
        """``CompiledStateGraph.stream``, as one hooked run."""
        if current.get() is not None or not self._bridge().active:  # part of a run / idle
            yield from super().stream(*args, **kwargs)
            return
        run, context = self._start()
        steps = self._bridge().run_steps()
        if steps is not None:  # the run's config gets a handler of the model calls
            args, kwargs = configured(steps, run, args, kwargs)
        error: BaseException | None = None
        try:
            self._before_run_sync(run, context)
            chunks = context.run(super().stream, *args, **kwargs)
            while True:
                try:
                    chunk = context.run(next, chunks)
                except StopIteration:
                    break
                yield chunk
        except BaseException as exc:
            error = exc
            raise
        finally:
            self._after_run_sync(run, context, error)

    async def astream(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        """``CompiledStateGraph.astream``, as one hooked run."""
        if current.get() is not None or not self._bridge().active:
            async for chunk in super().astream(*args, **kwargs):
                yield chunk
            return
        run, context = self._start()
        steps = self._bridge().run_steps()
        if steps is not None:  # the run's config gets a handler of the model calls
            args, kwargs = configured(steps, run, args, kwargs)
        error: BaseException | None = None
        try:
            await asyncio.create_task(self._before_run(run), context=context)
            chunks = context.run(super().astream, *args, **kwargs)
            while True:
                try:
                    chunk = await asyncio.create_task(_next(chunks), context=context)
                except StopAsyncIteration:
                    break
                yield chunk
        except BaseException as exc:
            error = exc
            raise
        finally:
            if self._bridge().has_after_run:
                ending = asyncio.create_task(self._after_run(run, error), context=context)
                await asyncio.shield(ending)
            else:
                run.finish(error)

    # -- the run moments ----------------------------------------------------------------

    def _bridge(self) -> _Bridge:
        return self.builder.bridge  # type: ignore[attr-defined, no-any-return]

    def _start(self) -> tuple[Run, contextvars.Context]:
        run = Run(self.name, tuple(self.builder.nodes))
        context = contextvars.copy_context()
        context.run(current.set, run)
        policy = self._bridge().policy
        context.run(set_policy, policy.registry, policy.hooks)
        context.run(enter_budgets, self._bridge().budgets)  # the run's model and tool calls
        if run.span is not None:
            context.run(otel_context.attach, trace.set_span_in_context(run.span))
        return run, context

    def _before_run_sync(self, run: Run, context: contextvars.Context) -> None:
        if self._bridge().has_before_run:
            context.run(blocking, lambda: self._before_run(run))

    def _after_run_sync(
        self, run: Run, context: contextvars.Context, error: BaseException | None
    ) -> None:
        if self._bridge().has_after_run:
            context.run(blocking, lambda: self._after_run(run, error))
        else:
            run.finish(error)

    async def _before_run(self, run: Run) -> None:
        bridge = self._bridge()
        if not bridge.has_before_run:
            return
        decision, by = await bridge.chain.call(
            "before_run", run.run_context(), subject=run.graph, on_error=run.record
        )
        if isinstance(decision, Fail):
            raise TaskFailed(run.graph, f"run refused by {by}" + reason(decision))

    async def _after_run(self, run: Run, error: BaseException | None) -> None:
        bridge = self._bridge()
        try:
            if bridge.has_after_run:
                await bridge.chain.call(
                    "after_run",
                    run.run_context(),
                    run.result(error),
                    subject=run.graph,
                    on_error=run.record,
                )
        finally:
            run.finish(error)


async def _next(chunks: AsyncIterator[Any]) -> Any:
    return await anext(chunks)


_NOT_A_BUILDER = (
    "with_hooks takes a StateGraph builder (hook it before compile(): for a compiled graph, "
    "pass its .builder), got a {kind}; an @entrypoint's Pregel cannot be hooked yet: guard "
    "its tools with guard_tools, and a create_agent agent with OrchestraMiddleware"
)


def with_hooks(
    builder: StateGraph[Any, Any, Any, Any],
    hooks: Iterable[object] = (),
    registry: HookRegistry | None = None,
    *,
    hook_timeout: float | None = 60.0,
    max_attempts: int = DEFAULT_MAX_ATTEMPTS,
) -> HookedStateGraph:
    """A copy of ``builder`` whose nodes, tool calls and runs go through orchestra's hooks.

    Args:
        builder: the ``StateGraph`` to hook, with its nodes and edges added; it is not
            changed.
        hooks: ``TaskHooks`` objects: the node moments run around every node run, the
            run moments around every ``invoke``/``ainvoke``/``stream``/``astream``.
        registry: YAML hooks (``orchestra.skills.load(...)``); None: the ambient policy's
            (``orchestra.bridge.resolve_policy``: a graph built inside guarded work, a
            ``ToolNode`` call or another hooked graph's node, follows that policy, and so
            do ``hooks`` when none are given). Every tool call of a
            prebuilt ``ToolNode`` fires ``PreToolUse``/``PostToolUse``/
            ``PostToolUseFailure``; every chat-model call of a run fires ``StepStart``/
            ``StepEnd`` (see the module ``_steps``); its task events (``registry.as_task_hooks()``:
            ``TaskCreated``, ``TaskCompleted``, ...) fire around nodes as around DAG tasks.
        hook_timeout: seconds a hook call may take unless the hook sets ``timeout``.
        max_attempts: the most attempts of one node run, whatever the hooks answer.

    Returns:
        A ``HookedStateGraph``: compile it as the original.

    Raises:
        TypeError: ``builder`` is not a ``StateGraph`` (a compiled graph, an
            ``@entrypoint``'s Pregel), or a hook object is refused (see
            ``orchestra.HookChain``).
        ValueError: ``max_attempts`` is below 1, or a ``ToolNode`` already has an
            interceptor (``wrap_tool_call``).
    """
    if not isinstance(builder, StateGraph):
        raise TypeError(_NOT_A_BUILDER.format(kind=type(builder).__name__))
    if max_attempts < 1:
        raise ValueError(f"max_attempts must be at least 1, got {max_attempts!r}")
    own = list(hooks)
    budgets = budgets_of([*own, registry])  # its own: inherited ones count where they are
    # inside guarded work: its policy, unless given one
    policy = resolve_policy(registry, own, kinds=(TaskHooks,))
    registry = policy.registry
    objects = list(policy.hooks)
    tools = ToolEvents(registry) if budgets else None  # a ToolNode's calls are charged
    steps = StepEvents(registry, charge=False)  # the budgets: a handler of their own
    if registry is not None:
        tools = ToolEvents(registry)
        task_hooks = registry.as_task_hooks()  # TaskCreated, TaskCompleted, ...: node events
        if any(getattr(type(task_hooks), m) is not getattr(TaskHooks, m) for m in _MOMENTS):
            objects.append(task_hooks)
    chain = HookChain(objects, trait=TaskHooks, timeout=hook_timeout)
    bridge = _Bridge(chain, tools, steps, max_attempts, Policy(registry, objects), budgets)
    return bridge.hook(builder, "")
