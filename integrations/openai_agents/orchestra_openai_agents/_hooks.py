"""``OrchestraRunHooks``: the SDK's ``RunHooks`` mapped onto orchestra's hooks.

One SDK run is seen as a chain of subagent dispatches: the starting agent, then each
agent a handoff moves the conversation to. Each link fires orchestra's ``SubagentHooks``
(``before_dispatch`` when the agent starts, ``after_dispatch`` when it answers, hands off
or pauses for approval, ``on_failure`` when the run or a model call fails) and the YAML
events ``SubagentStart``/``SubagentStop``; model calls get ``chat`` spans; tool calls go
through the guard (``_invoker``, ``_graph``). The entry points (``run``, ``run_sync``,
``run_streamed``, in ``_run``) add what the SDK has no callback for: the run's span, its
failure, its pause, and the ``SessionStart``/``UserPromptSubmit``/``Stop``/``StopFailure``/
``SessionEnd`` events.
"""

from __future__ import annotations

import functools
import logging
import weakref
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final, TypeVar

from agents import Agent, RunContextWrapper, RunHooks

from orchestra import (
    DispatchError,
    SubagentHookContext,
    SubagentHooks,
    SubagentResult,
    TaskHooks,
    ToolDenied,
)
from orchestra.bridge import Mock, Proceed, Refuse, budgets_of, resolve_policy
from orchestra.dag import DEFAULT_MAX_ATTEMPTS
from orchestra.skills import RegistrySubagentHooks, StepEvents
from orchestra.tracing import get_tracer
from orchestra_openai_agents import _dispatch, _run, _spans
from orchestra_openai_agents._chain import split_hooks
from orchestra_openai_agents._graph import guard_graph
from orchestra_openai_agents._guard import (
    AskCallback,
    HostedTools,
    OnDeny,
    ToolGuard,
    tool_call,
)
from orchestra_openai_agents._invoker import is_guarded
from orchestra_openai_agents._spans import current
from orchestra_openai_agents._state import RunState, end_span, state_for
from orchestra_openai_agents._steps import begin, finish

if TYPE_CHECKING:
    from agents.items import ModelResponse
    from agents.result import RunResult, RunResultStreaming
    from agents.tool import Tool

    from orchestra.skills import HookRegistry

__all__ = ["OrchestraRunHooks"]

logger: Final = logging.getLogger("orchestra")

_TAgent = TypeVar("_TAgent", bound=Agent[Any])


class OrchestraRunHooks(RunHooks[Any]):
    """``RunHooks`` that fire orchestra's ``SubagentHooks``, ``TaskHooks`` and YAML hooks.

    Agents (``SubagentHooks`` in ``hooks``, YAML ``SubagentStart``/``SubagentStop``):

    - When an agent starts (the first one, or the target of a handoff),
      ``before_dispatch(ctx)`` with a ``SubagentHookContext``: ``subagent_name`` the
      agent, ``parent_agent`` the agent that handed off (or ``parent``),
      ``delegated_from`` the agents that handed off so far, ``task`` the last user
      message, ``execution_mode`` ``SYNC``, ``attempt`` the run's attempt. Then
      ``SubagentStart``. A ``Fail`` or a deny stops the run with ``DispatchError``.
    - When it answers, hands off, or the run pauses for approval: ``after_dispatch(ctx,
      result)`` (``output`` None unless it answered) and ``SubagentStop`` (``state``
      ``"succeeded"``, ``"handoff"`` with ``handoff_to``, or ``"interrupted"``).
    - When a model call fails, ``on_failure(ctx, error)`` (``ctx.attempt`` the call's
      attempt): ``Retry`` calls the model again, through the SDK's own model retry, so
      nothing else is replayed. When the run fails otherwise, ``on_failure`` once more;
      a ``Retry`` reruns the run only when nothing happened that a rerun would repeat
      (see ``run``).

    Tools (``TaskHooks`` in ``hooks``, YAML ``PreToolUse``/``PostToolUse``/
    ``PostToolUseFailure``): every tool of a guarded agent (``guard``) goes through the
    guard; see ``guard_tool``. A local tool the guard cannot wrap fires ``PreToolUse``
    from ``on_tool_start``, where the SDK cannot skip a call: a deny ends the run with
    ``ToolDenied``.

    Runs (``TaskHooks`` in ``hooks``): through the entry points, ``before_run`` may
    ``Fail`` a run before it starts (``DispatchError``), and ``after_run`` sees its
    ``RunResult`` once, however it ended (the error that ended it, a ``BudgetExceeded``
    say, under the workflow's name, and what its budgets spent).

    Use the entry points (``run``, ``run_sync``, ``run_streamed``): they guard the agent,
    open the run's span and handle what the SDK has no callback for. The object also
    works as plain ``hooks=`` of ``Runner.run`` (then without failure handling). One
    object may serve concurrent runs: its state is kept per run.

    Args:
        hooks: ``SubagentHooks`` (agents) and ``TaskHooks`` (tool calls) objects, called
            in order; an object that is both joins both.
        registry: an ``orchestra.skills.HookRegistry`` for the YAML events; None: the
            ambient policy's (``orchestra.bridge.resolve_policy``: a bridge made inside a
            guarded tool or run follows its policy, and so do ``hooks`` when none are
            given). While a guarded tool runs, this bridge's policy is the ambient one.
        parent: the ``parent_agent`` of the starting agent (e.g. the caller's name).
        ask: settles tool calls the hooks answer ``ask`` about: True approves, False
            refuses, None (or no callback) pauses the run for approval.
        on_deny: what a denied tool call does: ``"reject"`` (the model is told) or
            ``"raise"`` (``ToolDenied``).
        hosted_tools: ``"refuse"`` (default) a hosted tool that ``PreToolUse`` hooks match,
            or ``"allow"`` it to run unguarded.
        max_attempts: attempts at most for a tool call, a model call and a run.
        hook_timeout: seconds a Python hook call may take, unless the hook object has a
            ``timeout`` of its own (None = no limit); past it, it counts as a hook error.

    Raises:
        TypeError: a hook object is neither a ``TaskHooks`` nor a ``SubagentHooks``, or
            implements a moment wrongly.
        ValueError: an unknown ``on_deny`` or ``hosted_tools``.
    """

    def __init__(
        self,
        hooks: Iterable[object] = (),
        *,
        registry: HookRegistry | None = None,
        parent: str | None = None,
        ask: AskCallback | None = None,
        on_deny: OnDeny = "reject",
        hosted_tools: HostedTools = "refuse",
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        hook_timeout: float | None = 60.0,
    ) -> None:
        own = tuple(hooks)  # inside guarded work (a tool, a DAG task): its policy, unless given
        self.own_budgets = budgets_of((*own, registry))  # each run charges them, not inherited
        policy = resolve_policy(registry, own, kinds=(TaskHooks, SubagentHooks))
        registry = policy.registry
        self._tasks, self._agents = split_hooks(policy.hooks, hook_timeout)
        self.tool_guard = ToolGuard(
            registry,
            self._tasks,
            hooks=policy.hooks,
            ask=ask,
            on_deny=on_deny,
            hosted_tools=hosted_tools,
            max_attempts=max_attempts,
        )
        self.registry = registry
        self.steps = StepEvents(registry)
        self.parent = parent
        self.max_attempts = max_attempts
        if self._agents.has("before_dispatch") or (
            registry is not None and registry.has_hooks("SubagentStart")
        ):  # a handoff's target is asked before the handoff: a refusal tells the model
            self.tool_guard.dispatch_gate = functools.partial(_dispatch.handoff_gate, self)
        self._guarded: dict[int, tuple[weakref.ReferenceType[Any], tuple[int, ...], Any]] = {}

    def __repr__(self) -> str:
        return f"OrchestraRunHooks(registry={self.registry!r}, parent={self.parent!r})"

    # -- entry points ----------------------------------------------------------------------

    def guard(self, agent: _TAgent) -> _TAgent:
        """``agent`` cloned with every tool it can reach guarded (see ``guard_agent``).

        The clone is kept: guarding the same (unchanged) agent again returns it, so a run
        paused for approval resumes on the same agents.
        """
        snapshot = (*map(id, agent.tools), -1, *map(id, agent.handoffs))
        kept = self._guarded.get(id(agent))
        if kept is not None and kept[0]() is agent and kept[1] == snapshot:
            clone: _TAgent = kept[2]
            return clone
        clone = guard_graph(agent, self.tool_guard)
        key = id(agent)
        self._guarded[key] = (weakref.ref(agent), snapshot, clone)
        weakref.finalize(agent, self._guarded.pop, key, None)
        return clone

    async def run(self, agent: Agent[Any], input: Any, **kwargs: Any) -> RunResult:
        """``Runner.run(self.guard(agent), input, hooks=self, **kwargs)``, with the run's lifecycle.

        Before the run, ``SessionStart`` and (for a new input) ``UserPromptSubmit``: a
        block refuses the run (``DispatchError``), their context messages go to the model
        as developer messages. After it, ``Stop`` (a block continues the run with its
        reason as a new user message), or for a run paused for approval
        (``result.interruptions``) the paused agent's ``after_dispatch`` and
        ``SubagentStop`` (``state: "interrupted"``); resume with ``run(agent, state)``.
        Then ``SessionEnd``.

        When the run raises: ``on_failure`` for the agent that was running (unless it
        already answered for that model error), ``SubagentStop`` (``"failed"``) and
        ``StopFailure``. A ``Retry`` reruns the whole run only when the failed attempt
        ran no tool call to its end, did not resume a paused run and used no
        server-side conversation; items it added to a ``session`` are removed first.
        Otherwise the error propagates: the original exception of a tool (not the SDK's
        ``UserError`` wrapper), ``DispatchError`` or ``ToolDenied`` from the hooks.

        ``hooks=`` (your own ``RunHooks``) is called after the bridge's at each moment.
        """
        return await _run.run(self, agent, input, kwargs)

    def run_sync(self, agent: Agent[Any], input: Any, **kwargs: Any) -> RunResult:
        """``run`` for synchronous code (as ``Runner.run_sync``; no running event loop)."""
        return _run.run_sync(self, agent, input, kwargs)

    async def run_streamed(
        self, agent: Agent[Any], input: Any, **kwargs: Any
    ) -> RunResultStreaming:
        """``Runner.run_streamed`` with the run's lifecycle, as ``run``.

        Awaitable (unlike the SDK's), since ``SessionStart`` and ``UserPromptSubmit``
        fire before the run starts. The run's end (``Stop``, a pause, or a failure with
        ``on_failure``, ``SubagentStop`` and ``StopFailure``) is handled as
        ``result.stream_events()`` ends: consume it. Events already streamed cannot be
        taken back, so a ``Retry`` of the whole run and a ``Stop`` block are not carried
        out (recorded as hook errors); model-call and tool-call retries work as in ``run``.
        """
        return await _run.run_streamed(self, agent, input, kwargs)

    # -- the SDK's callbacks ---------------------------------------------------------------

    async def on_agent_start(self, context: Any, agent: Any) -> None:
        """Fire ``before_dispatch`` and ``SubagentStart`` for the agent that starts."""
        state = state_for(context)
        assert state is not None
        if state.denied_handoff:  # the guard refused a handoff: the same dispatch goes on
            state.denied_handoff = False
            return
        if state.handoff_from is not None:
            parent: str | None = state.handoff_from
            state.handoffs.append(state.handoff_from)
            state.handoff_from = state.handoff_to = None
        else:
            parent = self.parent
        name = str(agent.name)
        ctx = state.dispatch_context(parent, name, context, tuple(state.handoffs))
        if state.run_span is None:  # a plain Runner.run: the first agent opens the run's span
            state.run_span = _spans.run_span(name, state.run_id)
            state.owns_run_span = state.run_span is not None
        state.agent = state.last_agent = agent
        state.ctx = ctx
        state.span = _spans.agent_span(ctx, state.run_span)
        if state.cleared == name:  # its hooks said yes before the handoff
            state.cleared = None
            return
        reason = await _dispatch.refusal(self, state, ctx)
        if reason is None:
            return
        span, state.span, state.ctx = state.span, None, None
        end_span(span, "DispatchError")
        raise DispatchError(
            f"agent {name!r} was stopped before it started: {reason}",
            agent=name,
            delegated_from=ctx.delegated_from,
            attempts=0,
            reason=reason,
            hook_errors=tuple(state.hook_errors),
        )

    async def on_agent_end(self, context: Any, agent: Any, output: Any) -> None:
        """Fire ``after_dispatch`` and ``SubagentStop`` with the final output."""
        state = state_for(context)
        assert state is not None
        await self.end_dispatch(state, output, "succeeded")
        if state.owns_run_span:  # a plain Runner.run: its final output ends it
            span, state.run_span, state.owns_run_span = state.run_span, None, False
            end_span(span)

    async def on_handoff(
        self, context: RunContextWrapper[Any], from_agent: Any, to_agent: Any
    ) -> None:
        """End the handing-off agent's dispatch; the next ``on_agent_start`` links to it."""
        state = state_for(context)
        assert state is not None
        if state.denied_handoff:  # refused by the guard: no handoff happened
            return
        await self.end_dispatch(state, None, "handoff", {"handoff_to": str(to_agent.name)})
        state.handoff_from = str(from_agent.name)
        state.handoff_to = str(to_agent.name)

    async def end_dispatch(
        self,
        state: RunState,
        output: Any,
        stop_state: str,
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        """``after_dispatch`` and ``SubagentStop`` for the open dispatch; end its span."""
        ctx = state.ctx
        if ctx is None:
            return
        state.ctx = None
        with current(state.span):
            if self._agents.has("after_dispatch"):
                result = SubagentResult(
                    agent=ctx.subagent_name,
                    output=output,
                    attempts=ctx.attempt,
                    delegated_from=ctx.delegated_from,
                    hook_errors=tuple(state.hook_errors),
                )
                await self._agents.call(
                    "after_dispatch",
                    ctx,
                    result,
                    subject=ctx.subagent_name,
                    on_error=state.hook_errors.append,
                    tracer=get_tracer(),
                )
            await self.subagent_stop(ctx, stop_state, output, None, extra)
        span, state.span = state.span, None
        end_span(span)

    async def subagent_stop(
        self,
        ctx: SubagentHookContext,
        stop_state: str,
        output: Any,
        error: BaseException | None,
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        """Fire ``SubagentStop`` for a dispatch that ended in ``stop_state``."""
        registry = self.registry
        if registry is None or not registry.has_hooks("SubagentStop"):
            return
        payload: dict[str, Any] = {
            **RegistrySubagentHooks.payload(ctx),
            **RegistrySubagentHooks.stop_fields(output),
            "state": stop_state,
            "error": None if error is None else (str(error) or type(error).__name__),
            "error_type": None if error is None else type(error).__qualname__,
            **(extra or {}),
        }
        await registry.fire("SubagentStop", payload)

    async def on_llm_start(
        self, context: RunContextWrapper[Any], agent: Any, system_prompt: Any, input_items: Any
    ) -> None:
        """Fire ``StepStart`` and open the model call's ``chat`` span."""
        state = state_for(context)
        if state is None:
            return
        if self.steps.watching:
            await begin(self.steps, state, agent, input_items)
        end_span(state.llm_span, "superseded")
        state.llm_span = _spans.llm_span(agent, state.span or state.run_span)

    async def on_llm_end(
        self, context: RunContextWrapper[Any], agent: Any, response: ModelResponse
    ) -> None:
        """Fire ``StepEnd``, then end the model call's span with its token usage."""
        state = state_for(context, create=False)
        if state is not None and self.steps.watching:
            await finish(self.steps, state, response, None)
        if state is None or state.llm_span is None:
            return
        span, state.llm_span = state.llm_span, None
        _spans.llm_span_end(span, response)

    async def on_tool_start(self, context: RunContextWrapper[Any], agent: Any, tool: Tool) -> None:
        """Fire ``PreToolUse`` for a local tool the guard could not wrap (fail-closed)."""
        guard = self.tool_guard
        if not guard.pre() or is_guarded(tool):
            return
        name = str(getattr(tool, "name", type(tool).__name__))
        arguments = getattr(context, "tool_arguments", None)
        call_id = getattr(context, "tool_call_id", None)
        call = tool_call(name, arguments, call_id, agent_name=str(agent.name))
        answer = await guard.tools.pre(call)
        rewrote = isinstance(answer, Proceed) and answer.modified
        if rewrote or isinstance(answer, Mock):  # neither can be carried out here
            what = "rewrote the input of" if rewrote else "answered"
            answer = await guard.tools.refuse(
                call,
                f"a PreToolUse hook {what} a tool the bridge cannot rewrite "
                f"({type(tool).__name__}); only guarded function tools take rewritten input",
            )
        if isinstance(answer, Refuse):
            raise ToolDenied(name, answer.reason, retry=answer.retry)

    async def on_tool_end(
        self, context: RunContextWrapper[Any], agent: Any, tool: Tool, result: object
    ) -> None:
        """Fire ``PostToolUse`` for a local tool the guard could not wrap."""
        tools = self.tool_guard.tools
        if not tools.has_post or is_guarded(tool):
            return
        name = str(getattr(tool, "name", type(tool).__name__))
        arguments = getattr(context, "tool_arguments", None)
        call_id = getattr(context, "tool_call_id", None)
        await tools.post(tool_call(name, arguments, call_id, agent_name=str(agent.name)), result)
