"""Guarded function tools: ``PreToolUse``/``PostToolUse`` around ``FunctionTool.on_invoke_tool``.

The SDK's tool input guardrails can reject a call but cannot change its arguments, so
the guard wraps the tool's own invoker (on a copy of the tool): ``PreToolUse`` sees the
arguments the model sent and may deny the call or rewrite them; the tool gets the
rewritten JSON; ``PostToolUse`` (or ``PostToolUseFailure``) follows.
"""

from __future__ import annotations

import copy
import inspect
import json
import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias, TypeVar, final

from agents import Agent, FunctionTool
from opentelemetry import trace

from orchestra import ToolDenied
from orchestra.tracing import (
    ATTR_ERROR_TYPE,
    ATTR_TOOL_DECISION,
    GEN_AI_OPERATION_NAME,
    GEN_AI_TOOL_NAME,
    OP_EXECUTE_TOOL,
    SPAN_EXECUTE_TOOL,
    get_tracer,
)
from orchestra_openai_agents._state import state_for

if TYPE_CHECKING:
    from agents.tool_context import ToolContext
    from opentelemetry.trace import Span

    from orchestra.skills import HookOutcome, HookRegistry

__all__ = ["AskCallback", "OnDeny", "guard_agent", "guard_tool", "is_guarded", "pre_tool_use"]

logger: Final = logging.getLogger("orchestra")

AskCallback: TypeAlias = Callable[[str, Mapping[str, Any], "str | None"], "bool | Awaitable[bool]"]
"""Answers a hook's ``ask``: ``(tool_name, tool_input, reason) -> approve?``."""

OnDeny: TypeAlias = Literal["reject", "raise"]
"""What a denied call does: ``"reject"`` tells the model (the run goes on), ``"raise"``
raises ``ToolDenied`` out of the run."""

_TAgent = TypeVar("_TAgent", bound=Agent[Any])


def _refusal(outcome: HookOutcome) -> str:
    return outcome.reason or f"denied by a PreToolUse hook at {outcome.decided_by}"


async def pre_tool_use(
    registry: HookRegistry,
    payload: dict[str, Any],
    ask: AskCallback | None,
) -> tuple[str | None, dict[str, Any] | None]:
    """Fire ``PreToolUse``: (the refusal or None, the modified input or None)."""
    outcome = await registry.fire("PreToolUse", payload)
    if outcome.blocked:
        return _refusal(outcome), None
    if outcome.decision == "ask":
        approved = False
        if ask is not None:
            answer = ask(payload["tool_name"], payload["tool_input"], outcome.reason)
            approved = bool(await answer if inspect.isawaitable(answer) else answer)
        if not approved:
            return outcome.reason or f"needs approval ({outcome.decided_by})", None
    modified = outcome.modified_input
    return None, (dict(modified) if modified is not None else None)


def _error_fields(error: BaseException) -> dict[str, Any]:
    return {"error": str(error) or type(error).__name__, "error_type": type(error).__qualname__}


@final
class _GuardedInvoker:
    """The replacement ``on_invoke_tool`` of a guarded ``FunctionTool``."""

    __slots__ = ("ask", "inner", "on_deny", "registry")

    def __init__(
        self,
        inner: Callable[[ToolContext[Any], str], Awaitable[Any]],
        registry: HookRegistry,
        ask: AskCallback | None,
        on_deny: OnDeny,
    ) -> None:
        self.inner = inner
        self.registry = registry
        self.ask = ask
        self.on_deny = on_deny

    def __agents_bind_function_tool__(self, function_tool: FunctionTool) -> _GuardedInvoker:
        # The SDK rebinds invokers when it copies a tool: keep the guard on the copy.
        bind = getattr(self.inner, "__agents_bind_function_tool__", None)
        if not callable(bind):
            return self
        inner = bind(function_tool)
        if inner is self.inner:
            return self
        return _GuardedInvoker(inner, self.registry, self.ask, self.on_deny)

    async def __call__(self, ctx: ToolContext[Any], input: str) -> Any:  # the SDK's name
        name = str(getattr(ctx, "tool_name", "") or "tool")
        tracer = get_tracer()
        if tracer is None:
            return await self.invoke(ctx, name, input, None)
        state = state_for(ctx, create=False)
        parent = (
            trace.set_span_in_context(state.span)
            if state is not None and state.span is not None
            else None
        )
        span = tracer.start_span(
            SPAN_EXECUTE_TOOL.format(tool=name),
            context=parent,
            kind=trace.SpanKind.INTERNAL,
            attributes={GEN_AI_OPERATION_NAME: OP_EXECUTE_TOOL, GEN_AI_TOOL_NAME: name},
        )
        with trace.use_span(span, end_on_exit=True, record_exception=False):
            try:
                return await self.invoke(ctx, name, input, span)
            except BaseException as exc:
                span.record_exception(exc, escaped=True)
                span.set_attribute(ATTR_ERROR_TYPE, type(exc).__qualname__)
                span.set_status(trace.Status(trace.StatusCode.ERROR, f"{type(exc).__name__}"))
                raise

    async def invoke(self, ctx: ToolContext[Any], name: str, input: str, span: Span | None) -> Any:
        registry = self.registry
        pre = registry.has_hooks("PreToolUse")
        post = registry.has_hooks("PostToolUse")
        failure = registry.has_hooks("PostToolUseFailure")
        if not (pre or post or failure):
            return await self.inner(ctx, input)
        try:
            tool_input: Any = json.loads(input) if input else {}
        except ValueError:  # the tool reports bad JSON itself
            tool_input = {"raw": input}
        fields: dict[str, Any] = {
            "tool_name": name,
            "tool_use_id": str(getattr(ctx, "tool_call_id", "") or f"call_{uuid.uuid4().hex}"),
        }
        agent = getattr(ctx, "agent", None)
        if agent is not None:
            fields["agent_name"] = agent.name
        if pre:
            refusal, modified = await pre_tool_use(
                registry, {**fields, "tool_input": tool_input}, self.ask
            )
            if span is not None:
                span.set_attribute(ATTR_TOOL_DECISION, "deny" if refusal else "allow")
            if refusal is not None:
                logger.info("tool %r denied: %s", name, refusal)
                if self.on_deny == "raise":
                    raise ToolDenied(name, refusal)
                return f"Tool call denied: {refusal}"
            if modified is not None:
                tool_input = modified
                input = json.dumps(modified)
                # Arguments the SDK prepared for an approval check match the old input.
                if getattr(ctx, "_function_tool_arguments", None) is not None:
                    ctx._function_tool_arguments = None
        try:
            result = await self.inner(ctx, input)
        except Exception as exc:
            if failure:
                payload = {**fields, "tool_input": tool_input, **_error_fields(exc)}
                await registry.fire("PostToolUseFailure", payload)
            raise
        if post:
            payload = {**fields, "tool_input": tool_input, "tool_response": result}
            await registry.fire("PostToolUse", payload)
        return result


def is_guarded(tool: object) -> bool:
    """Whether ``tool`` is a ``FunctionTool`` guarded by ``guard_tool``."""
    return isinstance(tool, FunctionTool) and isinstance(tool.on_invoke_tool, _GuardedInvoker)


def guard_tool(
    tool: FunctionTool,
    registry: HookRegistry,
    *,
    ask: AskCallback | None = None,
    on_deny: OnDeny = "reject",
) -> FunctionTool:
    """A copy of ``tool`` whose calls fire the registry's tool events.

    ``PreToolUse`` (payload ``tool_name``, ``tool_input``: the arguments the model sent,
    ``tool_use_id``, ``agent_name``) runs before the tool: a deny stops the call (the
    model is told why, or ``ToolDenied`` is raised with ``on_deny="raise"``); an ``ask``
    goes to ``ask(tool_name, tool_input, reason)`` (refused without it); a
    ``modified_input`` is what the tool receives. Then ``PostToolUse`` with
    ``tool_response``, or ``PostToolUseFailure`` with ``error`` and ``error_type`` when
    the tool raises. The original tool is left unchanged.

    Args:
        tool: the SDK ``FunctionTool`` (what ``@function_tool`` returns).
        registry: the ``orchestra.skills.HookRegistry`` whose hooks fire.
        ask: approves or refuses calls the hooks answer with ``ask``.
        on_deny: ``"reject"`` (the model gets ``"Tool call denied: {reason}"`` and the run
            goes on) or ``"raise"`` (``ToolDenied`` ends the run).
    """
    if not isinstance(tool, FunctionTool):
        raise TypeError(f"guard_tool takes a FunctionTool, got {tool!r}")
    if on_deny not in ("reject", "raise"):
        raise ValueError(f"on_deny must be 'reject' or 'raise', got {on_deny!r}")
    guarded = copy.copy(tool)
    inner = guarded.on_invoke_tool
    if isinstance(inner, _GuardedInvoker):  # already guarded: re-guard its own invoker
        inner = inner.inner
    guarded.on_invoke_tool = _GuardedInvoker(inner, registry, ask, on_deny)
    return guarded


def guard_agent(
    agent: _TAgent,
    registry: HookRegistry,
    *,
    ask: AskCallback | None = None,
    on_deny: OnDeny = "reject",
) -> _TAgent:
    """A clone of ``agent`` (and of the agents it hands off to) with guarded function tools.

    Every ``FunctionTool`` of the agent, and of each agent reachable through its
    ``handoffs`` (plain ``Agent`` entries, and ``Handoff`` objects' agents are left as
    they are), is replaced by ``guard_tool(tool, registry, ...)``; handoff cycles are
    followed once. Other tools (hosted, shell, computer...) fire ``PreToolUse`` from
    ``OrchestraRunHooks.on_tool_start`` instead. The agents passed in are not changed.
    """
    clones: dict[int, Agent[Any]] = {}

    def clone(original: Agent[Any]) -> Agent[Any]:
        done = clones.get(id(original))
        if done is not None:
            return done
        tools = [
            guard_tool(t, registry, ask=ask, on_deny=on_deny) if isinstance(t, FunctionTool) else t
            for t in original.tools
        ]
        copy_ = original.clone(tools=tools)
        clones[id(original)] = copy_
        copy_.handoffs = [clone(h) if isinstance(h, Agent) else h for h in original.handoffs]
        return copy_

    return clone(agent)  # type: ignore[return-value]
