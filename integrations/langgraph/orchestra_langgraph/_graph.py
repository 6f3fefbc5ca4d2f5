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

import copy
import dataclasses
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, final, overload

from langgraph.graph import StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode
from langgraph.pregel import Pregel

import orchestra.tracing as ot
from orchestra import HookChain, TaskHooks
from orchestra.bridge import (
    DEFAULT_MAX_ATTEMPTS,
    AttemptDriver,
    Policy,
    budgets_of,
    resolve_policy,
)
from orchestra.skills import StepEvents
from orchestra_langgraph._node import HookedNode, node_runnable
from orchestra_langgraph._runs import HookedRuns
from orchestra_langgraph._tools import ToolEvents, guarded_tool_node
from orchestra_langgraph._tree import TreeGuard

if TYPE_CHECKING:
    from orchestra import Budget
    from orchestra.skills import HookRegistry

__all__ = ["HookedEntrypoint", "HookedGraph", "HookedStateGraph", "with_hooks"]

_MOMENTS = ("before_run", "before_execute", "after_execute", "on_failure", "on_end", "after_run")

_COMPILED_WITH = {
    "checkpointer": "checkpointer",
    "store": "store",
    "cache": "cache",
    "interrupt_before": "interrupt_before_nodes",
    "interrupt_after": "interrupt_after_nodes",
    "debug": "debug",
    "name": "name",
}
"""How a compiled subgraph was compiled: each ``compile()`` option, and the compiled graph's
attribute that keeps it (its hooked copy is compiled the same way)."""


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
        "tree",
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
        # the tools its nodes call outside its ToolNodes: judged through the run's callbacks
        self.tree = None if self.tools is None else TreeGuard(self.tools.registry)
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

    def hook_entrypoint(self, pregel: Pregel[Any, Any, Any, Any]) -> HookedEntrypoint:
        """A copy of an ``@entrypoint``'s Pregel with its node (the body) wrapped."""
        nodes = {name: self._entry_node(name, node) for name, node in pregel.nodes.items()}
        hooked: HookedEntrypoint = pregel.copy({"nodes": nodes})  # type: ignore[assignment]
        hooked.__class__ = HookedEntrypoint  # LangGraph's own class, plus run hooks
        hooked.bridge = self
        return hooked

    def _entry_node(self, name: str, node: Any) -> Any:
        if not self.moments.hooked:
            return node
        hooked = HookedNode(name, node.bound, self.moments, node.metadata)
        return node.copy({"bound": node_runnable(hooked, name)})

    def _spec(self, name: str, spec: Any) -> Any:
        runnable = spec.runnable
        if isinstance(runnable, HookedGraph):  # a subgraph given hooks of its own: as it is
            return spec
        if isinstance(runnable, CompiledStateGraph):  # a subgraph: hook its own nodes
            return dataclasses.replace(spec, runnable=self._subgraph(name, runnable))
        if isinstance(runnable, ToolNode) and self.tools is not None:
            runnable = guarded_tool_node(runnable, self.tools)
        if self.moments.hooked:
            node = HookedNode(name, runnable, self.moments, spec.metadata)
            runnable = node_runnable(node, name.rpartition("/")[2])
        return dataclasses.replace(spec, runnable=runnable)

    def _subgraph(self, name: str, graph: CompiledStateGraph[Any, Any, Any, Any]) -> Any:
        options = {option: getattr(graph, attr) for option, attr in _COMPILED_WITH.items()}
        return self.hook(graph.builder, name + "/").compile(**options)


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


class HookedGraph(HookedRuns, CompiledStateGraph):  # type: ignore[type-arg]  # generic like its base
    """A compiled hooked graph: each ``invoke``/``ainvoke``/``stream``/``astream`` is a run.

    ``before_run`` runs before the first node and ``after_run`` once at the end, however
    the run ends (a failure, an interrupt, a stream closed early).
    """

    def _bridge(self) -> _Bridge:
        return self.builder.bridge  # type: ignore[attr-defined, no-any-return]

    def _hooked_by_parent(self) -> bool:
        return bool(self.builder.prefix)  # type: ignore[attr-defined]  # a subgraph's copy

    def _node_names(self) -> tuple[str, ...]:
        return tuple(self.builder.nodes)


_NOT_A_BUILDER = (
    "with_hooks takes a StateGraph builder (hook it before compile(): for a compiled graph, "
    "pass its .builder) or an @entrypoint's Pregel, got a {kind}; for a create_agent "
    "agent use OrchestraMiddleware"
)


class HookedEntrypoint(HookedRuns, Pregel):  # type: ignore[type-arg]  # generic like its base
    """An ``@entrypoint`` hooked by ``with_hooks``: each run is a hooked run.

    Its body is one node: the node moments run around it (a task named after the
    entrypoint), and the tools it and its ``@task`` functions call are judged by the
    run's policy (``_tree``; ``@registry.guard`` tools by the ambient policy).
    """

    bridge: _Bridge

    def _bridge(self) -> _Bridge:
        return self.bridge

    def _node_names(self) -> tuple[str, ...]:
        return tuple(self.nodes)


@overload
def with_hooks(
    builder: StateGraph[Any, Any, Any, Any],
    hooks: Iterable[object] = (),
    registry: HookRegistry | None = None,
    *,
    hook_timeout: float | None = 60.0,
    max_attempts: int = DEFAULT_MAX_ATTEMPTS,
) -> HookedStateGraph: ...


@overload
def with_hooks(
    builder: Pregel[Any, Any, Any, Any],
    hooks: Iterable[object] = (),
    registry: HookRegistry | None = None,
    *,
    hook_timeout: float | None = 60.0,
    max_attempts: int = DEFAULT_MAX_ATTEMPTS,
) -> HookedEntrypoint: ...


def with_hooks(
    builder: StateGraph[Any, Any, Any, Any] | Pregel[Any, Any, Any, Any],
    hooks: Iterable[object] = (),
    registry: HookRegistry | None = None,
    *,
    hook_timeout: float | None = 60.0,
    max_attempts: int = DEFAULT_MAX_ATTEMPTS,
) -> HookedStateGraph | HookedEntrypoint:
    """A copy of ``builder`` whose nodes, tool calls and runs go through orchestra's hooks.

    Args:
        builder: the ``StateGraph`` to hook, with its nodes and edges added, or an
            ``@entrypoint``'s Pregel (its body is one node: a task named after it);
            neither is changed.
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
        A ``HookedStateGraph`` (compile it as the original), or for an entrypoint a
        ``HookedEntrypoint``, ready to run.

    With a registry, a tool started anywhere in a run's tree (a plain ``ToolNode`` or a
    compiled graph a node function calls, a tool an entrypoint's ``@task`` invokes) is
    judged too, through the run's callbacks: a deny refuses it before its body (a
    ``ToolNode`` answers the model the reason; see the module ``_tree``).

    Raises:
        TypeError: ``builder`` is neither a ``StateGraph`` nor an ``@entrypoint``'s
            Pregel (a compiled graph: hook its ``.builder``), or a hook object is refused
            (see ``orchestra.HookChain``).
        ValueError: ``max_attempts`` is below 1, or a ``ToolNode`` already has an
            interceptor (``wrap_tool_call``).
    """
    entry = isinstance(builder, Pregel) and not isinstance(builder, CompiledStateGraph)
    if not isinstance(builder, StateGraph) and not entry:
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
    if isinstance(builder, StateGraph):
        return bridge.hook(builder, "")
    return bridge.hook_entrypoint(builder)
