"""Guarding an agent graph: every agent a run can reach, cloned with guarded tools (internal).

``guard_agent`` clones the agent graph (agents reached by handoffs, ``handoff()`` objects,
agents used as tools) and guards each ``FunctionTool`` (``_invoker``). Handoffs are tool
calls too: each becomes a ``Handoff`` copy whose ``transfer_to_*`` call fires
``PreToolUse`` (and, through the bridge, the target's ``before_dispatch`` and
``SubagentStart``) before the SDK hands off; a refusal is the call's output the model
reads, and the run goes on with the agent that asked.
"""

from __future__ import annotations

import copy
import types
import weakref
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Final, TypeVar, cast, final

from agents import (
    Agent,
    ComputerTool,
    FunctionTool,
    Handoff,
    handoff,
)

from orchestra import TaskHooks
from orchestra.bridge import open_budgets, resolve_policy
from orchestra.dag import DEFAULT_MAX_ATTEMPTS
from orchestra_openai_agents._chain import split_hooks

if TYPE_CHECKING:
    from agents.run_context import RunContextWrapper
    from agents.tool_context import ToolContext

    from orchestra.skills import HookRegistry
from orchestra_openai_agents._computer import guard_computer_tool
from orchestra_openai_agents._guard import AskCallback, HostedTools, OnDeny, ToolGuard
from orchestra_openai_agents._invoker import guarded_function_tool, is_guarded, remember
from orchestra_openai_agents._local import guard_local_tool
from orchestra_openai_agents._nested import nested_budgets, nested_hooks
from orchestra_openai_agents._runner import install as install_runner
from orchestra_openai_agents._state import state_for

__all__ = ["guard_agent", "guard_graph", "guard_tool"]

_TAgent = TypeVar("_TAgent", bound=Agent[Any])

refused_var: Final[ContextVar[str | None]] = ContextVar(
    "orchestra_openai_agents_refused_handoff", default=None
)
"""The refusal of the handoff the SDK is carrying out now (read by its transfer message)."""


def _rebind_agent_tool(
    tool: FunctionTool, nested: Agent[Any]
) -> Callable[[ToolContext[Any], str], Awaitable[Any]] | None:
    """The body of an ``Agent.as_tool`` tool, running ``nested`` instead of its agent.

    ``as_tool`` builds a closure over the agent; its copy here closes over the guarded
    clone instead, and over ``hooks`` that charge the run's model calls to the budgets
    (``_nested``), every other setting (``max_turns``, ``run_config``, ``session``,
    extractors...) unchanged. None when the body is not shaped as expected.
    """
    impl = getattr(tool.on_invoke_tool, "_invoke_tool_impl", None)
    code = getattr(impl, "__code__", None)
    closure = getattr(impl, "__closure__", None)
    if not isinstance(impl, types.FunctionType) or code is None or closure is None:
        return None
    names = code.co_freevars
    if "self" not in names or "hooks" not in names:
        return None
    if closure[names.index("self")].cell_contents is not getattr(tool, "_agent_instance", None):
        return None
    given = closure[names.index("hooks")].cell_contents
    new = {"self": nested, "hooks": nested_hooks(given)}
    pairs = zip(names, closure, strict=True)
    cells = tuple(types.CellType(new[name]) if name in new else cell for name, cell in pairs)
    body = types.FunctionType(code, impl.__globals__, impl.__name__, impl.__defaults__, cells)
    body.__kwdefaults__ = impl.__kwdefaults__
    own = nested_budgets(given)
    if not own:
        return cast("Callable[[ToolContext[Any], str], Awaitable[Any]]", body)

    async def run_with_budgets(context: ToolContext[Any], input: str) -> Any:
        with open_budgets(own):  # the bridge given as hooks: its own budgets, as its run's
            return await body(context, input)

    return run_with_budgets


@final
class _GraphGuard:
    """Clones one agent graph with guarded tools; each agent is cloned once (cycles)."""

    __slots__ = ("clones", "guard")

    def __init__(self, guard: ToolGuard) -> None:
        self.guard = guard
        self.clones: dict[int, Agent[Any]] = {}

    def agent(self, original: Agent[Any]) -> Agent[Any]:
        if is_guarded(original):
            return original
        done = self.clones.get(id(original))
        if done is not None:
            return done
        tools = [self.tool(original, t) for t in original.tools]
        clone = original.clone(tools=tools)
        self.clones[id(original)] = clone
        remember(clone)
        if clone.mcp_servers:
            self.mcp(clone)
        if self.guard.guards_handoffs:  # every handoff is a guarded transfer_to_* call
            clone.handoffs = [
                self.handoff(h if isinstance(h, Handoff) else handoff(h), clone)
                for h in original.handoffs
            ]
        else:
            clone.handoffs = [
                self.agent(h) if isinstance(h, Agent) else self.handoff(h, None)
                for h in original.handoffs
            ]
        return clone

    def tool(self, agent: Agent[Any], tool: Any) -> Any:
        if not isinstance(tool, FunctionTool):
            if isinstance(tool, ComputerTool):  # each action judged
                return guard_computer_tool(tool, self.guard)
            local = guard_local_tool(tool, self.guard)  # shell, local shell, apply-patch
            if local is not None:
                return local
            self.guard.check_hosted(agent, tool)
            return tool
        nested = getattr(tool, "_agent_instance", None)
        if not getattr(tool, "_is_agent_tool", False) or not isinstance(nested, Agent):
            return guarded_function_tool(tool, self.guard)
        if is_guarded(nested):
            return guarded_function_tool(tool, self.guard)
        clone = self.agent(nested)
        body = _rebind_agent_tool(tool, clone)
        if body is None:
            raise TypeError(
                f"cannot guard the tool {tool.name!r} of agent {agent.name!r}: it runs agent "
                f"{nested.name!r}, whose tools would run unguarded. Build it from the "
                "guarded agent instead: bridge.guard(agent).as_tool(...)"
            )
        guarded = guarded_function_tool(tool, self.guard, body)
        guarded._agent_instance = clone
        return guarded

    def mcp(self, clone: Agent[Any]) -> None:
        """Guard the tools of the clone's MCP servers, which the SDK lists at each turn.

        ``Agent.get_all_tools`` asks ``get_mcp_tools`` for them, as ``FunctionTool``
        objects built afresh each time; the clone's own ``get_mcp_tools`` guards each.
        """
        fetch = clone.get_mcp_tools
        guard = self.guard

        async def get_mcp_tools(run_context: RunContextWrapper[Any]) -> list[Any]:
            return [
                guarded_function_tool(tool, guard) if isinstance(tool, FunctionTool) else tool
                for tool in await fetch(run_context)
            ]

        clone.get_mcp_tools = get_mcp_tools  # type: ignore[method-assign]

    def handoff(self, original: Handoff[Any, Any], source: Agent[Any] | None) -> Handoff[Any, Any]:
        """A copy of a ``Handoff`` whose target is the guarded clone.

        With ``source`` (the guarded agent the handoff belongs to), the ``transfer_to_*``
        call goes through the guard first: a refusal keeps the conversation with
        ``source`` (the SDK hands off to it again) and is the call's output the model reads.
        """
        invoke = original.on_invoke_handoff
        graph, guard = self, self.guard

        async def on_invoke_handoff(context: RunContextWrapper[Any], input_json: str) -> Any:
            if source is not None:
                refusal, input_json = await guard.handoff_verdict(
                    context, original.tool_name, source.name, original.agent_name, input_json
                )
                if refusal is not None:
                    state = state_for(context)
                    if state is not None:
                        state.denied_handoff = True
                    refused_var.set(refusal)
                    return source
            target = await invoke(context, input_json)
            return graph.agent(target) if isinstance(target, Agent) else target

        guarded = copy.copy(original)
        guarded.on_invoke_handoff = on_invoke_handoff
        if source is not None:
            guarded.get_transfer_message = _TransferMessage(original)  # type: ignore[method-assign]
        ref = getattr(original, "_agent_ref", None)
        target = ref() if callable(ref) else None
        if isinstance(target, Agent):
            guarded._agent_ref = weakref.ref(self.agent(target))
        return guarded


@final
class _TransferMessage:
    """A guarded handoff's ``get_transfer_message``: the refusal, when the guard refused.

    The SDK asks for the message right after ``on_invoke_handoff`` returned, in the same
    task: the refusal it set in ``refused_var`` is read (and cleared) here.
    """

    __slots__ = ("original",)

    def __init__(self, original: Handoff[Any, Any]) -> None:
        self.original = original

    def __call__(self, agent: Any) -> str:
        refusal = refused_var.get()
        if refusal is None:
            return self.original.get_transfer_message(agent)
        refused_var.set(None)
        return refusal


def guard_agent(
    agent: _TAgent,
    registry: HookRegistry | None = None,
    *,
    hooks: Any = (),
    ask: AskCallback | None = None,
    on_deny: OnDeny = "reject",
    hosted_tools: HostedTools = "refuse",
    max_attempts: int = DEFAULT_MAX_ATTEMPTS,
) -> _TAgent:
    """A clone of ``agent`` and of every agent it can reach, with guarded tools.

    Every ``FunctionTool`` becomes ``guard_tool(tool, registry, ...)``, in the agent and
    in each agent reachable through its ``handoffs`` (plain agents and ``handoff()``
    objects alike; cycles are followed once) and through agents used as tools
    (``other.as_tool()``: the tool then runs the guarded clone of ``other``). A hosted
    tool that ``PreToolUse`` hooks match is refused (see ``hosted_tools``). The agents and
    tools passed in are not changed.

    Raises:
        ValueError: for a hosted tool the hooks match, under ``hosted_tools="refuse"``.
        TypeError: for an agent tool whose agent cannot be swapped for its guarded clone.
    """
    guard = _guard(
        registry,
        hooks,
        ask=ask,
        on_deny=on_deny,
        hosted_tools=hosted_tools,
        max_attempts=max_attempts,
    )
    return cast(_TAgent, _GraphGuard(guard).agent(agent))


def _guard(registry: HookRegistry | None, hooks: Any, **options: Any) -> ToolGuard:
    """The ``ToolGuard`` of the given policy, else (given none) of the ambient one."""
    install_runner()  # a plain Runner.run inside its tools follows their policy
    policy = resolve_policy(registry, hooks, kinds=(TaskHooks,))
    tasks, _ = split_hooks(policy.hooks)
    return ToolGuard(policy.registry, tasks, hooks=policy.hooks, **options)


def guard_graph(agent: _TAgent, guard: ToolGuard) -> _TAgent:
    """``guard_agent`` with a ready ``ToolGuard`` (the bridge's own)."""
    install_runner()  # a plain Runner.run inside its tools follows their policy
    return cast(_TAgent, _GraphGuard(guard).agent(agent))


def guard_tool(
    tool: FunctionTool,
    registry: HookRegistry | None = None,
    *,
    hooks: Any = (),
    ask: AskCallback | None = None,
    on_deny: OnDeny = "reject",
    max_attempts: int = DEFAULT_MAX_ATTEMPTS,
) -> FunctionTool:
    """A copy of ``tool`` whose calls go through the hooks; the original is left unchanged.

    ``PreToolUse`` (payload ``tool_name``, ``tool_input``: the arguments the model sent,
    ``tool_use_id``, ``agent_name``) runs before the tool: a deny stops the call (the
    model is told why, or ``ToolDenied`` is raised with ``on_deny="raise"``); an ``ask``
    goes to ``ask(tool_name, tool_input, reason)``, and pauses the run for approval (an
    SDK interruption) when there is no callback or it answers None; a
    ``modified_input`` is what the tool receives. Then the tool-call ``TaskHooks`` in
    ``hooks`` run around each attempt (``before_execute``; ``on_failure`` with the tool's
    own exception: ``Retry`` calls it again, ``Skip`` tells the model it was skipped),
    ``PostToolUse`` with ``tool_response`` or ``PostToolUseFailure`` with ``error``; a
    failure no hook recovers follows the tool's own ``failure_error_function``.

    Args:
        tool: the SDK ``FunctionTool`` (what ``@function_tool`` returns).
        registry: the ``orchestra.skills.HookRegistry`` whose hooks fire; None: the
            ambient policy's (``orchestra.bridge.resolve_policy``), as for ``hooks``.
        hooks: ``TaskHooks`` for the tool's calls.
        ask: approves (True), refuses (False) or pauses (None) calls hooks ``ask`` about.
        on_deny: ``"reject"`` (the model gets ``"Tool call denied: {reason}"`` and the run
            goes on) or ``"raise"`` (``ToolDenied`` ends the run).
        max_attempts: attempts per call at most, retries included.

    Raises:
        TypeError: ``tool`` is not a ``FunctionTool``, or a hook is not a ``TaskHooks``.
        ValueError: for an unknown ``on_deny``.
    """
    if not isinstance(tool, FunctionTool):
        raise TypeError(f"guard_tool takes a FunctionTool, got {tool!r}")
    guard = _guard(registry, hooks, ask=ask, on_deny=on_deny, max_attempts=max_attempts)
    return guarded_function_tool(tool, guard)
