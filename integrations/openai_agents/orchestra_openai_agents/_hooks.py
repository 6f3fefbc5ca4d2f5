"""``OrchestraRunHooks``: the SDK's ``RunHooks`` mapped onto orchestra's hooks.

One SDK run is seen as a chain of subagent dispatches: the starting agent, then each
agent a handoff moves the conversation to. Each link fires orchestra's ``SubagentHooks``
(``before_dispatch`` when the agent starts, ``after_dispatch`` when it answers or hands
off, ``on_failure`` when the run raises, under ``OrchestraRunHooks.run``) and the YAML
events ``SubagentStart``/``SubagentStop``; tool calls fire ``PreToolUse``/``PostToolUse``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final, TypeVar

import anyio
from agents import Agent, RunContextWrapper, RunHooks, Runner, UserError
from opentelemetry import trace

from orchestra import (
    DispatchError,
    ExecutionMode,
    Fail,
    Retry,
    SubagentHookContext,
    SubagentHooks,
    SubagentResult,
    ToolDenied,
)
from orchestra._hooks import call_hooks, compile_hooks
from orchestra.dag import DEFAULT_MAX_ATTEMPTS
from orchestra.skills import RegistrySubagentHooks
from orchestra.tracing import (
    ATTR_AGENT_ATTEMPT,
    ATTR_AGENT_DELEGATED_FROM,
    ATTR_AGENT_MODE,
    ATTR_AGENT_PARENT,
    ATTR_ERROR_TYPE,
    GEN_AI_AGENT_NAME,
    GEN_AI_OPERATION_NAME,
    OP_INVOKE_AGENT,
    SPAN_INVOKE_AGENT,
    get_tracer,
)
from orchestra_openai_agents._state import Claim, RunState, claim_var, state_for
from orchestra_openai_agents._tools import (
    AskCallback,
    OnDeny,
    guard_agent,
    is_guarded,
    pre_tool_use,
)

if TYPE_CHECKING:
    from agents.result import RunResult
    from agents.tool import Tool

    from orchestra.skills import HookRegistry

__all__ = ["OrchestraRunHooks"]

logger: Final = logging.getLogger("orchestra")

_ANSWERS: Final[dict[str, tuple[type, ...]]] = {
    "before_dispatch": (Fail,),  # a run cannot be delegated from inside the SDK
    "after_dispatch": (),
    "on_failure": (Retry, Fail),
}

_TAgent = TypeVar("_TAgent", bound=Agent[Any])


def _input_text(items: Any) -> str:
    """The text of the last user message of a turn input."""
    if isinstance(items, str):
        return items
    for item in reversed(items or ()):
        if not isinstance(item, Mapping) or item.get("role") != "user":
            continue
        content = item.get("content")
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            parts = [p.get("text") for p in content if isinstance(p, Mapping)]
            return "\n".join(p for p in parts if isinstance(p, str))
    return ""


def _tool_input(context: Any) -> Any:
    raw = getattr(context, "tool_arguments", None)
    if not raw:
        return {}
    try:
        return json.loads(raw)
    except ValueError:
        return {"raw": raw}


def _unwrap(error: Exception) -> Exception:
    """The bridge's own error under the SDK's wrapper (it wraps tool errors in UserError)."""
    cause = error.__cause__
    if isinstance(error, UserError) and isinstance(cause, ToolDenied | DispatchError):
        return cause
    return error


class OrchestraRunHooks(RunHooks[Any]):
    """``RunHooks`` that fire orchestra's ``SubagentHooks`` and YAML skills hooks.

    Agents and handoffs:

    - When an agent starts (the first one, or the target of a handoff),
      ``before_dispatch(ctx)`` is called with a ``SubagentHookContext``: ``subagent_name``
      the agent, ``parent_agent`` the agent that handed off (or ``parent``),
      ``delegated_from`` the agents that handed off so far, ``task`` the last user
      message, ``execution_mode`` ``SYNC``, ``attempt`` the run's attempt. Then the
      ``SubagentStart`` event (``agent_name``, ``agent_type``, ``parent_agent``, ``task``,
      ...). A ``Fail`` or a deny stops the run with ``DispatchError``.
    - When it answers (``on_agent_end``) or hands off, ``after_dispatch(ctx, result)``
      with a ``SubagentResult`` (``output`` None for a handoff) and ``SubagentStop``
      (``state`` ``"succeeded"`` or ``"handoff"`` with ``handoff_to``; ``output``).
    - When the run raises, under ``run()``: ``on_failure(ctx, error)`` for the agent that
      was running and ``SubagentStop`` with ``state: "failed"``; a ``Retry`` runs the
      whole run again.

    Tools: function tools are guarded by ``guard_agent`` (``run()`` does it), which fires
    ``PreToolUse`` (deny or rewrite the call) and ``PostToolUse``. Other local tools fire
    ``PreToolUse`` here in ``on_tool_start``, where the SDK cannot skip the call: a deny,
    or a rewrite that cannot be applied, raises ``ToolDenied`` and ends the run.

    One object may serve concurrent runs: its state is kept per run. Spans follow
    orchestra's tracing: ``invoke_agent {name}`` per agent, ``execute_tool {name}`` per
    guarded tool call, when a tracer provider is configured.

    Args:
        hooks: ``SubagentHooks`` objects, called in order.
        registry: an ``orchestra.skills.HookRegistry`` for the YAML events, or None.
        parent: the ``parent_agent`` of the starting agent (e.g. the caller's name).
        ask: approves tool calls the hooks answer with ``ask`` (refused without it).
        on_deny: what a denied function tool call does: ``"reject"`` (the model is told)
            or ``"raise"`` (``ToolDenied``).
    """

    def __init__(
        self,
        hooks: Iterable[object] = (),
        *,
        registry: HookRegistry | None = None,
        parent: str | None = None,
        ask: AskCallback | None = None,
        on_deny: OnDeny = "reject",
    ) -> None:
        compiled = compile_hooks(hooks, SubagentHooks, _ANSWERS)
        self._before = compiled["before_dispatch"]
        self._after = compiled["after_dispatch"]
        self._failure = compiled["on_failure"]
        self.registry = registry
        self.parent = parent
        self.ask = ask
        self.on_deny: OnDeny = on_deny

    def __repr__(self) -> str:
        return f"OrchestraRunHooks(registry={self.registry!r}, parent={self.parent!r})"

    # -- running ---------------------------------------------------------------------------

    def guard(self, agent: _TAgent) -> _TAgent:
        """``agent`` with its (and its handoff agents') function tools guarded (``guard_agent``)."""
        if self.registry is None:
            return agent
        return guard_agent(agent, self.registry, ask=self.ask, on_deny=self.on_deny)

    async def run(
        self,
        agent: Agent[Any],
        input: Any,  # Runner.run's name
        *,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        **kwargs: Any,
    ) -> RunResult:
        """``Runner.run(self.guard(agent), input, hooks=self, **kwargs)``, with failure hooks.

        When the run raises, ``on_failure`` and ``SubagentStop`` fire for the agent that
        was running; a ``Retry`` (after its delay) runs the whole run again from
        ``input``, at most ``max_attempts`` times in all. Otherwise the SDK's exception
        propagates (``DispatchError`` when a hook stopped an agent from starting).
        """
        guarded = self.guard(agent)
        attempt = 1
        errors: tuple[BaseException, ...] = ()
        while True:
            claim = Claim(attempt, errors)
            token = claim_var.set(claim)
            try:
                return await Runner.run(guarded, input, hooks=self, **kwargs)
            except Exception as exc:
                error = _unwrap(exc)
                if not isinstance(error, DispatchError):  # a hook refused: nothing to retry
                    errors = (*errors, error)
                    decision = await self._failed(
                        claim.state, guarded, input, attempt, errors, error
                    )
                    if type(decision) is Retry and attempt < max_attempts:
                        if decision.delay:
                            await anyio.sleep(decision.delay)
                        attempt += 1
                        continue
                if error is exc:
                    raise
                raise error from exc
            finally:
                claim_var.reset(token)

    async def _failed(
        self,
        state: RunState | None,
        agent: Agent[Any],
        input: Any,
        attempt: int,
        errors: tuple[BaseException, ...],
        error: Exception,
    ) -> Retry | Fail | None:
        if state is not None and state.ctx is not None:
            ctx = state.ctx
        elif state is not None and state.handoff_from is not None:  # failed in a handoff
            ctx = SubagentHookContext(
                state.handoff_from,
                state.handoff_to or agent.name,
                ExecutionMode.SYNC,
                _input_text(input),
                attempt,
                (*state.handoffs, state.handoff_from),
            )
        else:  # it failed before an agent started
            ctx = SubagentHookContext(
                self.parent, agent.name, ExecutionMode.SYNC, _input_text(input), attempt
            )
        ctx = SubagentHookContext(
            ctx.parent_agent,
            ctx.subagent_name,
            ctx.execution_mode,
            ctx.task,
            ctx.attempt,
            ctx.delegated_from,
            errors,
            ctx.started_at,
        )
        decision = None
        if self._failure:
            record = state.hook_errors.append if state is not None else None
            decision, _ = await call_hooks(self._failure, (ctx, error), ctx.subagent_name, record)
        if self.registry is not None and self.registry.has_hooks("SubagentStop"):
            payload = {
                **RegistrySubagentHooks.payload(ctx),
                "state": "failed",
                "output": None,
                "error": str(error) or type(error).__name__,
                "error_type": type(error).__qualname__,
            }
            await self.registry.fire("SubagentStop", payload)
        if state is not None and state.span is not None:
            span, state.span = state.span, None
            span.record_exception(error, escaped=True)
            span.set_attribute(ATTR_ERROR_TYPE, type(error).__qualname__)
            span.set_status(trace.Status(trace.StatusCode.ERROR, type(error).__name__))
            span.end()
        return decision if isinstance(decision, Retry | Fail) else None

    # -- the SDK's callbacks ---------------------------------------------------------------

    async def on_agent_start(self, context: Any, agent: Any) -> None:
        """Fire ``before_dispatch`` and ``SubagentStart`` for the agent that starts."""
        state = state_for(context)
        assert state is not None
        if state.handoff_from is not None:
            parent: str | None = state.handoff_from
            state.handoffs.append(state.handoff_from)
            state.handoff_from = state.handoff_to = None
        else:
            parent = self.parent
        name = str(agent.name)
        ctx = SubagentHookContext(
            parent,
            name,
            ExecutionMode.SYNC,
            _input_text(getattr(context, "turn_input", None)),
            state.attempt,
            tuple(state.handoffs),
            state.errors,
            state.started_at,
        )
        state.agent, state.ctx = name, ctx
        tracer = get_tracer()
        if tracer is not None:
            attributes: dict[str, Any] = {
                GEN_AI_OPERATION_NAME: OP_INVOKE_AGENT,
                GEN_AI_AGENT_NAME: name,
                ATTR_AGENT_MODE: ExecutionMode.SYNC.value,
                ATTR_AGENT_ATTEMPT: state.attempt,
            }
            if parent is not None:
                attributes[ATTR_AGENT_PARENT] = parent
            if ctx.delegated_from:
                attributes[ATTR_AGENT_DELEGATED_FROM] = list(ctx.delegated_from)
            state.span = tracer.start_span(
                SPAN_INVOKE_AGENT.format(agent=name), attributes=attributes
            )
        reason: str | None = None
        refused = False
        if self._before:
            decision, impl = await call_hooks(self._before, (ctx,), name, state.hook_errors.append)
            if isinstance(decision, Fail):
                refused = True
                who = f"{impl.name}.{impl.moment}" if impl is not None else "a hook"
                reason = decision.reason or f"failed by {who}"
        registry = self.registry
        if not refused and registry is not None and registry.has_hooks("SubagentStart"):
            outcome = await registry.fire("SubagentStart", RegistrySubagentHooks.payload(ctx))
            if outcome.blocked:
                refused = True
                reason = (
                    outcome.reason or f"blocked by a SubagentStart hook at {outcome.decided_by}"
                )
        if refused:
            error = DispatchError(
                f"agent {name!r} was stopped before it started: {reason}",
                agent=name,
                delegated_from=ctx.delegated_from,
                attempts=0,
                reason=reason,
                hook_errors=tuple(state.hook_errors),
            )
            if state.span is not None:
                span, state.span = state.span, None
                span.set_attribute(ATTR_ERROR_TYPE, "DispatchError")
                span.set_status(trace.Status(trace.StatusCode.ERROR, reason))
                span.end()
            raise error

    async def on_agent_end(self, context: Any, agent: Any, output: Any) -> None:
        """Fire ``after_dispatch`` and ``SubagentStop`` with the final output."""
        await self._finish(context, output, None)

    async def on_handoff(
        self, context: RunContextWrapper[Any], from_agent: Any, to_agent: Any
    ) -> None:
        """End the handing-off agent's dispatch; the next ``on_agent_start`` links to it."""
        await self._finish(context, None, str(to_agent.name))
        state = state_for(context)
        assert state is not None
        state.handoff_from = str(from_agent.name)
        state.handoff_to = str(to_agent.name)

    async def _finish(self, context: Any, output: Any, handoff_to: str | None) -> None:
        state = state_for(context)
        assert state is not None
        ctx = state.ctx
        if ctx is None:
            return
        state.ctx = None
        if self._after:
            result = SubagentResult(
                ctx.subagent_name, output, ctx.attempt, ctx.delegated_from, tuple(state.hook_errors)
            )
            await call_hooks(
                self._after, (ctx, result), ctx.subagent_name, state.hook_errors.append
            )
        registry = self.registry
        if registry is not None and registry.has_hooks("SubagentStop"):
            payload = {
                **RegistrySubagentHooks.payload(ctx),
                "state": "succeeded" if handoff_to is None else "handoff",
                "output": output,
                "error": None,
                "error_type": None,
            }
            if handoff_to is not None:
                payload["handoff_to"] = handoff_to
            await registry.fire("SubagentStop", payload)
        if state.span is not None:
            span, state.span = state.span, None
            span.end()

    async def on_tool_start(self, context: RunContextWrapper[Any], agent: Any, tool: Tool) -> None:
        """Fire ``PreToolUse`` for a tool that is not a guarded function tool."""
        registry = self.registry
        if registry is None or is_guarded(tool) or not registry.has_hooks("PreToolUse"):
            return
        name = str(getattr(tool, "name", type(tool).__name__))
        payload: dict[str, Any] = {
            "tool_name": name,
            "tool_input": _tool_input(context),
            "agent_name": str(agent.name),
        }
        call_id = getattr(context, "tool_call_id", None)
        if call_id:
            payload["tool_use_id"] = str(call_id)
        refusal, modified = await pre_tool_use(registry, payload, self.ask)
        if refusal is None and modified is not None:
            refusal = (
                "a PreToolUse hook rewrote the input of a tool the bridge cannot rewrite "
                f"({type(tool).__name__}); only guarded function tools take rewritten input"
            )
        if refusal is not None:
            raise ToolDenied(name, refusal)

    async def on_tool_end(
        self, context: RunContextWrapper[Any], agent: Any, tool: Tool, result: object
    ) -> None:
        """Fire ``PostToolUse`` for a tool that is not a guarded function tool."""
        registry = self.registry
        if registry is None or is_guarded(tool) or not registry.has_hooks("PostToolUse"):
            return
        payload: dict[str, Any] = {
            "tool_name": str(getattr(tool, "name", type(tool).__name__)),
            "tool_input": _tool_input(context),
            "tool_response": result,
            "agent_name": str(agent.name),
        }
        await registry.fire("PostToolUse", payload)
