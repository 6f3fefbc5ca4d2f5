"""``OrchestraCapability``: a pydantic-ai capability carrying orchestra's hooks (internal).

pydantic-ai calls a capability around each agent run (``wrap_run``) and each tool call
(``wrap_tool_execute``). Each run gets its own copy of the capability (``for_run``) with
the run's state; the hook chains are compiled once, when the capability is made. The
agent run is a subagent dispatch:

- ``before_dispatch`` (and a YAML ``SubagentStart``) may ``Fail`` it: the run raises
  ``orchestra.DispatchError`` with the reason before the model is called;
- ``on_failure`` sees a failed model call and may ``Retry`` it: the model is asked again
  (pydantic-ai's ``RetryModelRequest``), nothing the run did is repeated;
- ``after_dispatch`` (and ``SubagentStop``) may ``Replace`` the run's output;
- the ``TaskHooks``' ``before_run`` may ``Fail`` it, and ``after_run`` sees its
  ``RunResult`` once, however it ended (a ``BudgetExceeded`` under the agent's name).

Tool calls go through ``_tools.ToolCalls``, and so do output functions
(``wrap_output_process``: ``output_type=[fn]``, ``ToolOutput(fn)``). With a tracer
configured for orchestra, a run is an ``invoke_agent {name}`` span and each tool call an
``execute_tool {name}`` span under it, with the hooks' spans inside.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import RetryModelRequest
from pydantic_ai.messages import ModelResponse, ToolCallPart
from pydantic_ai.tools import RunContext, ToolDefinition

import orchestra.tracing as ot
from orchestra import (
    Fail,
    HookChain,
    Replace,
    SubagentHooks,
    SubagentResult,
    TaskHooks,
)
from orchestra.bridge import (
    Again,
    RunBudgets,
    RunRecord,
    budgets_of,
    current_policy,
    open_budgets,
    policy_scope,
    resolve_policy,
)
from orchestra.dag import DEFAULT_MAX_ATTEMPTS
from orchestra.skills import StepEvents
from orchestra_pydantic_ai._answers import approval_of
from orchestra_pydantic_ai._chains import split_hooks
from orchestra_pydantic_ai._state import RunState, parent_agent
from orchestra_pydantic_ai._steps import around
from orchestra_pydantic_ai._tools import ToolCalls

if TYPE_CHECKING:
    from pydantic_ai.capabilities.abstract import (
        WrapModelRequestHandler,
        WrapOutputProcessHandler,
        WrapRunHandler,
        WrapToolExecuteHandler,
    )
    from pydantic_ai.models import ModelRequestContext
    from pydantic_ai.output import OutputContext
    from pydantic_ai.run import AgentRunResult

    from orchestra.skills import HookRegistry

__all__ = ["OrchestraCapability"]


@dataclass(init=False)
class OrchestraCapability(AbstractCapability[Any]):
    """orchestra's hooks and YAML tool guards inside a pydantic-ai agent.

    ``Agent(model, tools=[...], capabilities=[OrchestraCapability(hooks, registry)])``:
    every tool call goes through ``PreToolUse``/``PostToolUse``/``PostToolUseFailure``
    and the tool-call ``TaskHooks``; every run of the agent through the ``SubagentHooks``
    (``SubagentStart``/``SubagentStop`` with a registry).

    Args:
        hooks: ``TaskHooks`` (tool calls: the task id is the tool's name) and
            ``SubagentHooks`` (agent runs) objects, in calling order.
        registry: YAML hooks (``orchestra.skills.load(...)``) for the tool and agent events.
        hook_timeout: seconds a hook call may take unless the hook sets ``timeout``.
        max_attempts: the most attempts of one tool call or one run, whatever hooks answer.

    Attributes:
        hook_errors: every hook error of the capability's last run, in order.

    Raises:
        TypeError: a hook object is refused (see ``orchestra.HookChain``), or is neither
            a ``TaskHooks`` nor a ``SubagentHooks``.
        ValueError: ``max_attempts`` is below 1.
    """

    hooks: tuple[object, ...] = ()
    registry: HookRegistry | None = None

    def __init__(
        self,
        hooks: Iterable[object] = (),
        registry: HookRegistry | None = None,
        *,
        hook_timeout: float | None = 60.0,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
    ) -> None:
        if max_attempts < 1:
            raise ValueError(f"max_attempts must be at least 1, got {max_attempts!r}")
        self.hooks = tuple(hooks)
        self.registry = registry
        self.id = None
        self._options = (hook_timeout, max_attempts)
        self._inherits = registry is None and not self.hooks  # the ambient policy, per run
        self._budgets = budgets_of((*self.hooks, registry))  # its own: each run charges them
        objects = list(self.hooks)
        if registry is not None and (
            registry.has_hooks("SubagentStart") or registry.has_hooks("SubagentStop")
        ):
            objects.append(registry.as_subagent_hooks())
        tasks, agents = split_hooks(objects, hook_timeout)
        self._agents = agents
        self._tools = ToolCalls(registry, tasks, max_attempts)
        self._steps = StepEvents(registry)
        self._max_attempts = max_attempts
        self._state: RunState | None = None
        self._last: list[RunState] = []
        self._agent_moments = agents.has("before_dispatch") or agents.has("after_dispatch")
        run_moments = tasks.has("before_run") or tasks.has("after_run")
        self._run_hooks = tasks if run_moments else None  # each agent run is one run

    @property
    def hook_errors(self) -> tuple[Any, ...]:
        """Every hook error of the capability's last run, in order."""
        return tuple(self._last[-1].hook_errors) if self._last else ()

    async def for_run(self, ctx: RunContext[Any]) -> OrchestraCapability:
        """A copy of the capability holding this run's state.

        A capability given no hooks and no registry follows the ambient policy
        (``orchestra.bridge.current_policy``) of the guarded work the run starts in: an
        agent run inside a guarded tool or a hooked agent's tool is guarded alike.
        """
        run = copy.copy(self._ambient() if self._inherits else self)
        agent = getattr(ctx.agent, "name", None)
        run._state = RunState(agent, ctx.run_id)
        self._last[:] = [run._state]
        return run

    def _ambient(self) -> OrchestraCapability:
        if current_policy().empty:
            return self
        policy = resolve_policy(kinds=(TaskHooks, SubagentHooks))
        timeout, attempts = self._options
        built = OrchestraCapability(
            policy.hooks, policy.registry, hook_timeout=timeout, max_attempts=attempts
        )
        built._last = self._last  # hook_errors: this capability's last run
        built._budgets = ()  # inherited budgets go on counting where they were opened
        return built

    # -- the agent run ----------------------------------------------------------------------

    async def wrap_run(
        self, ctx: RunContext[Any], *, handler: WrapRunHandler
    ) -> AgentRunResult[Any]:
        """The run as a subagent dispatch: ``before_dispatch``, retries, ``after_dispatch``.

        The run's model and tool calls are charged to the ``Budget`` objects among the
        capability's hooks and its registry's ``budget:`` (``orchestra.Budget``).
        """
        with open_budgets(self._budgets) as budgets:
            state = self._state or RunState(getattr(ctx.agent, "name", None), ctx.run_id)
            if self._run_hooks is None:
                return await self._run(ctx, state, handler, budgets)
            return await self._hooked_run(self._run_hooks, ctx, state, handler, budgets)

    async def _hooked_run(
        self,
        chain: HookChain,
        ctx: RunContext[Any],
        state: RunState,
        handler: WrapRunHandler,
        budgets: RunBudgets,
    ) -> AgentRunResult[Any]:
        """The run between the ``before_run`` and ``after_run`` of the ``TaskHooks``.

        A ``Fail`` from ``before_run`` refuses the run (``DispatchError``) before the
        model is called. ``after_run`` is called once, whatever way the run ended, with a
        ``RunResult`` that holds the error that ended it (a ``BudgetExceeded``, say) under
        the agent's name, the run's hook errors and what its budgets spent.
        """
        name = state.agent or "agent"
        record = RunRecord(name, state.run_id)
        record.budgets, record.hook_errors = budgets, state.hook_errors
        record.record = state.hook_errors.append
        error: BaseException | None = None
        try:
            refusal, by = await record.before_run(chain)
            if refusal is not None:
                raise state.refused(name, refusal, by)
            return await self._run(ctx, state, handler, budgets)
        except BaseException as exc:
            error = exc
            raise
        finally:
            await record.after_run(chain, error)

    async def _run(
        self, ctx: RunContext[Any], state: RunState, handler: WrapRunHandler, budgets: RunBudgets
    ) -> AgentRunResult[Any]:
        tracer = ot.get_tracer()
        if not self._agent_moments and tracer is None:
            return await self._body(state, handler)
        name = state.agent or "agent"
        if tracer is None:
            return await self._dispatch(ctx, state, name, handler)
        attributes = {
            ot.names.GEN_AI_OPERATION_NAME: ot.names.OP_INVOKE_AGENT,
            ot.names.GEN_AI_AGENT_NAME: name,
            ot.names.ATTR_RUN_ID: state.run_id,  # a run of its own in ``orchestra trace show``
        }
        with tracer.start_as_current_span(
            ot.names.SPAN_INVOKE_AGENT.format(agent=name), attributes=attributes
        ) as span:
            try:
                return await self._dispatch(ctx, state, name, handler)
            finally:
                budgets.annotate(span)  # what the run spent, also when a budget ended it

    async def _body(self, state: RunState, handler: WrapRunHandler) -> AgentRunResult[Any]:
        token = parent_agent.set(state.agent)
        try:
            with policy_scope(self.registry, self.hooks):  # what its tools start: this policy
                return await handler()
        finally:
            parent_agent.reset(token)

    async def _dispatch(
        self, ctx: RunContext[Any], state: RunState, name: str, handler: WrapRunHandler
    ) -> AgentRunResult[Any]:
        agents, record = self._agents, state.hook_errors.append
        sctx = state.dispatch_context(name, parent_agent.get(), _prompt(ctx))
        if agents.has("before_dispatch"):
            decision, by = await agents.call(
                "before_dispatch", sctx, subject=name, on_error=record, tracer=ot.get_tracer()
            )
            if isinstance(decision, Fail):
                raise state.refused(name, decision, by)
        result = await self._body(state, handler)
        if agents.has("after_dispatch"):
            answer = SubagentResult(agent=name, output=result.output, attempts=state.attempt)
            sctx = state.dispatch_context(name, parent_agent.get(), _prompt(ctx))
            decision, by = await agents.call(
                "after_dispatch",
                sctx,
                answer,
                subject=name,
                on_error=record,
                tracer=ot.get_tracer(),
            )
            if type(decision) is Replace:
                result = dataclasses.replace(result, output=decision.value)
        return result

    async def wrap_model_request(
        self,
        ctx: RunContext[Any],
        *,
        request_context: ModelRequestContext,
        handler: WrapModelRequestHandler,
    ) -> ModelResponse:
        """One model request (a step): ``StepStart`` before it, ``StepEnd`` after it."""
        if not self._steps.watching:
            return await handler(request_context)
        state = self._state or RunState(getattr(ctx.agent, "name", None), ctx.run_id)
        return await around(self._steps, state, request_context, handler)

    async def on_model_request_error(
        self, ctx: RunContext[Any], *, request_context: ModelRequestContext, error: Exception
    ) -> ModelResponse:
        """A failed model call: ``on_failure`` may ``Retry`` it (the model is asked again)."""
        state = self._state
        if state is None or not self._agents.has("on_failure"):
            raise error
        name = state.agent or "agent"
        state.errors += (error,)
        sctx = state.dispatch_context(name, parent_agent.get(), _prompt(ctx))
        decision, _ = await self._agents.call(
            "on_failure",
            sctx,
            error,
            subject=name,
            on_error=state.hook_errors.append,
            tracer=ot.get_tracer(),
        )
        if isinstance(decision, Again) and state.attempt < self._max_attempts:
            state.attempt += 1
            await anyio.sleep(decision.delay)
            raise RetryModelRequest() from error
        raise error

    # -- tool calls -------------------------------------------------------------------------

    async def wrap_tool_execute(
        self,
        ctx: RunContext[Any],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: dict[str, Any],
        handler: WrapToolExecuteHandler,
    ) -> Any:
        """A tool call through the tool events and the tool-call ``TaskHooks``."""
        tools = self._tools
        if not tools.watching:
            return await handler(args)
        state = self._state or RunState(getattr(ctx.agent, "name", None), ctx.run_id)
        name, meta, toolset = call.tool_name, tool_def.metadata, tool_def.toolset_id
        approved = ctx.tool_call_approved and (approval_of(ctx.tool_call_metadata) or True)
        tracer = ot.get_tracer()
        if tracer is None:
            return await tools.call(
                state, approved, name, call.tool_call_id, args, handler, meta, toolset
            )
        attributes = {
            ot.names.GEN_AI_OPERATION_NAME: ot.names.OP_EXECUTE_TOOL,
            ot.names.GEN_AI_TOOL_NAME: name,
            ot.names.GEN_AI_TOOL_CALL_ID: call.tool_call_id,
        }
        with tracer.start_as_current_span(
            ot.names.SPAN_EXECUTE_TOOL.format(tool=name), attributes=attributes
        ):
            return await tools.call(
                state, approved, name, call.tool_call_id, args, handler, meta, toolset
            )

    # -- output functions --------------------------------------------------------------------

    async def wrap_output_process(
        self,
        ctx: RunContext[Any],
        *,
        output_context: OutputContext,
        output: Any,
        handler: WrapOutputProcessHandler,
    ) -> Any:
        """An output function (``output_type=[fn]``, ``ToolOutput(fn)``) as a tool call."""
        tools = self._tools
        if not output_context.has_function or ctx.partial_output or not tools.watching:
            return await handler(output)
        state = self._state or RunState(getattr(ctx.agent, "name", None), ctx.run_id)
        part = output_context.tool_call
        name = output_context.function_name or (part.tool_name if part else "output")
        return await tools.output(state, name, part, output, handler)


def _prompt(ctx: RunContext[Any]) -> str:
    """The run's prompt as text (what ``SubagentHookContext.task`` holds)."""
    return ctx.prompt if isinstance(ctx.prompt, str) else str(ctx.prompt or "")
