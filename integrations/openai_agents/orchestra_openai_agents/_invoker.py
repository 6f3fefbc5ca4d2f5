"""The guarded invoker: a ``FunctionTool``'s calls through ``PreToolUse`` and the hooks (internal).

The SDK's tool guardrails can reject a call but cannot rewrite its arguments, and its
failure handling turns a tool's exception into a string before any hook sees it. So
each guarded ``FunctionTool`` (a copy) gets an invoker that fires ``PreToolUse``, runs the
tool-call ``TaskHooks`` around each attempt (``on_failure`` sees the tool's own exception;
``Retry`` calls the tool again), fires ``PostToolUse``/``PostToolUseFailure`` and only then
applies the tool's own failure policy. A hook's ``ask`` becomes the SDK's approval
interruption (``needs_approval``). The tool events are ``orchestra.bridge.ToolHooks``'s
(the one tool-call protocol); while the tool runs, the guard's policy is the ambient one.
"""

from __future__ import annotations

import copy
import functools
import json
import uuid
import weakref
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final, final

import attrs
from agents import Agent, FunctionTool
from agents.tool import maybe_invoke_function_tool_failure_error_function
from opentelemetry import trace

from orchestra import Task, TaskHookContext, ToolDenied
from orchestra.bridge import (
    DoGive,
    DoSkip,
    Mock,
    Proceed,
    Refuse,
    TaskAttempts,
    ToolCall,
    mark_decision,
    policy_scope,
)
from orchestra.tracing import get_tracer
from orchestra.tracing.names import (
    GEN_AI_OPERATION_NAME,
    GEN_AI_TOOL_CALL_ID,
    GEN_AI_TOOL_NAME,
    OP_EXECUTE_TOOL,
    SPAN_EXECUTE_TOOL,
)
from orchestra_openai_agents._computer import is_guarded_computer
from orchestra_openai_agents._guard import ApprovalPolicy, ToolGuard, server_name, tool_call
from orchestra_openai_agents._local import is_guarded_local
from orchestra_openai_agents._state import RunState, end_span, state_for, tool_parent_var

if TYPE_CHECKING:
    from agents.tool_context import ToolContext
    from opentelemetry.trace import Span


__all__ = ["guarded_function_tool", "is_guarded", "remember"]

_GUARDED_AGENTS: Final[dict[int, weakref.ReferenceType[Agent[Any]]]] = {}


def remember(agent: Agent[Any]) -> None:
    """Mark ``agent`` as a guarded clone (``is_guarded``)."""
    key = id(agent)
    _GUARDED_AGENTS[key] = weakref.ref(agent)
    weakref.finalize(agent, _GUARDED_AGENTS.pop, key, None)


def _raw_invoker(tool: FunctionTool) -> Callable[[ToolContext[Any], str], Awaitable[Any]]:
    """The tool's body without the SDK's failure handling, which hides its exceptions.

    ``@function_tool`` and ``Agent.as_tool`` wrap their body in an invoker that turns an
    exception into a string for the model; the guard calls the body itself so the hooks
    see the exception, then applies the same failure policy. Other invokers raise as is.
    """
    impl = getattr(tool.on_invoke_tool, "_invoke_tool_impl", None)
    return impl if callable(impl) else tool.on_invoke_tool


@final
class _GuardedInvoker:
    """The ``on_invoke_tool`` of a guarded ``FunctionTool``."""

    __slots__ = ("guard", "inner", "tool")

    def __init__(
        self,
        inner: Callable[[ToolContext[Any], str], Awaitable[Any]],
        guard: ToolGuard,
        tool: FunctionTool | None = None,
    ) -> None:
        self.inner = inner
        self.guard = guard
        self.tool = tool

    def __agents_bind_function_tool__(self, function_tool: FunctionTool) -> _GuardedInvoker:
        # The SDK rebinds invokers when it copies a tool: the copy's failure policy is its own.
        if function_tool is self.tool:
            return self
        return _GuardedInvoker(self.inner, self.guard, function_tool)

    async def __call__(self, ctx: ToolContext[Any], input: str) -> Any:  # the SDK's name
        name = str(getattr(ctx, "tool_name", "") or (self.tool.name if self.tool else "tool"))
        state = state_for(ctx)
        policy = self.guard.policy
        with policy_scope(policy.registry, policy.hooks):  # what the tool starts: this policy
            return await self._traced(ctx, name, input, state)

    async def _traced(
        self, ctx: ToolContext[Any], name: str, input: str, state: RunState | None
    ) -> Any:
        tracer = get_tracer()
        if tracer is None:
            return await self._invoke(ctx, name, input, state, None)
        parent = tool_parent_var.get()
        if parent is None and state is not None:
            parent = state.span or state.run_span
        attributes: dict[str, Any] = {
            GEN_AI_OPERATION_NAME: OP_EXECUTE_TOOL,
            GEN_AI_TOOL_NAME: name,
        }
        call_id = getattr(ctx, "tool_call_id", None)
        if call_id:
            attributes[GEN_AI_TOOL_CALL_ID] = str(call_id)
        span = tracer.start_span(
            SPAN_EXECUTE_TOOL.format(tool=name),
            context=trace.set_span_in_context(parent) if parent is not None else None,
            attributes=attributes,
        )
        token = tool_parent_var.set(span)  # an agent used as a tool runs under this span
        try:
            with trace.use_span(span, end_on_exit=False, record_exception=False):
                result = await self._invoke(ctx, name, input, state, span)
        except BaseException as exc:
            end_span(span, exc)
            raise
        finally:
            tool_parent_var.reset(token)
        span.end()
        return result

    async def _invoke(
        self,
        ctx: ToolContext[Any],
        name: str,
        input: str,
        state: RunState | None,
        span: Span | None,
    ) -> Any:
        guard = self.guard
        if not guard.watching:
            return await self._once(ctx, name, input, state, None)
        if not guard.hooked and guard.tools.charges_only:  # budgets alone: only the charge
            return await self._charged(ctx, name, input, state)
        agent = getattr(ctx, "agent", None)
        call_id = getattr(ctx, "tool_call_id", "") or f"call_{uuid.uuid4().hex}"
        call = tool_call(
            name,
            input,
            call_id,
            identifier=server_name(self.tool),
            agent_name=getattr(agent, "name", None),
        )
        mocked = False
        if guard.tools.watching:  # PreToolUse hooks, or a budget to charge the call to
            answer = state.verdicts.pop(call.tool_use_id, None) if state is not None else None
            approval = guard.answers.pop(call.tool_use_id, None)
            if approval is not None:  # a person answered the pause (answer_approval)
                answer = await guard.tools.resume(call, approval)
            elif answer is None:
                # a person approved it through the SDK: a PreToolUse hook's ask lets it go on
                if guard.pre() and _approved(ctx, name, call.tool_use_id):
                    call = attrs.evolve(call, approved=True)
                answer = await guard.tools.pre(call)
            else:  # taken by the approval check, before this span existed
                mark_decision(answer, span)
            if isinstance(answer, Refuse):
                return guard.deny(name, answer)
            if isinstance(answer, Mock):  # the tool is not called, PostToolUse fires
                result, mocked = answer.output, True
            elif isinstance(answer, Proceed) and answer.modified:
                call = call.with_input(answer.tool_input)
                input = json.dumps(dict(answer.tool_input))
                # Arguments the SDK prepared for an approval check match the old input.
                if getattr(ctx, "_function_tool_arguments", None) is not None:
                    ctx._function_tool_arguments = None
        if not mocked:
            result = await self._attempts(ctx, name, input, call, state)
        return await guard.tools.post(call, result, mocked=mocked)

    async def _charged(
        self, ctx: ToolContext[Any], name: str, input: str, state: RunState | None
    ) -> Any:
        """One call that nothing but budgets judges: charged, refused past a limit."""
        tools = self.guard.tools
        refusal = tools.charge(name)
        if refusal is not None:
            refused = Refuse(refusal)
            mark_decision(refused)  # on the call's span, as ``pre`` puts it
            return self.guard.deny(name, refused)
        try:
            return await self._once(ctx, name, input, state, None)
        finally:
            tools.ran()

    async def _attempts(
        self,
        ctx: ToolContext[Any],
        name: str,
        input: str,
        tool: ToolCall,
        state: RunState | None,
    ) -> Any:
        """Call the tool, its attempts driven by ``orchestra.bridge.AttemptDriver``."""
        guard = self.guard
        if not guard.driver.hooked:
            return await self._once(ctx, name, input, state, tool)

        async def body(_: Any) -> Any:
            try:
                result = await self.inner(ctx, input)
            except Exception as exc:
                failure = await guard.tools.failed(tool, exc)
                if isinstance(failure, Refuse):  # a @registry.guard inside the tool said no
                    return guard.deny(name, failure)  # with on_deny="raise": ToolDenied
                raise
            if state is not None:
                state.tool_calls += 1
            return result

        agent = tool.fields.get("agent_name")
        attempts = guard.driver.begin(
            Task(id=name, fn=self, metadata=tool.payload()),
            tool.tool_input,
            context=functools.partial(_context, agent, state.run_id if state else ""),
            on_error=state.hook_errors.append if state is not None else None,
            tracer=get_tracer(),
        )
        end = await attempts.run_async(body, passthrough=(ToolDenied,))
        if type(end) is DoGive:
            return end.output
        why = getattr(end.decision, "reason", None) or end.reason
        if type(end) is DoSkip:
            return f"Tool call skipped: {why}"
        if end.error in attempts.errors:  # the tool's own error: its failure policy
            return await self._failed(ctx, end.error)  # type: ignore[arg-type]
        return guard.deny(name, Refuse(why or "failed by a hook"))

    async def _once(
        self,
        ctx: ToolContext[Any],
        name: str,
        input: str,
        state: RunState | None,
        call: ToolCall | None,
    ) -> Any:
        """One call with no tool-call hooks: the result, or the tool's failure policy's."""
        try:
            result = await self.inner(ctx, input)
        except Exception as exc:
            if call is None:  # no tool events: a guard inside still refuses alike
                call = tool_call(name, input, getattr(ctx, "tool_call_id", None))
            failure = await self.guard.tools.failed(call, exc)
            if isinstance(failure, Refuse):  # a @registry.guard inside the tool said no
                return self.guard.deny(name, failure)
            return await self._failed(ctx, exc)
        if state is not None:
            state.tool_calls += 1
        return result

    async def _failed(self, ctx: ToolContext[Any], error: Exception) -> Any:
        """The tool's own failure policy: its ``failure_error_function``'s message, or raise."""
        if self.tool is None:
            raise error
        message = await maybe_invoke_function_tool_failure_error_function(
            function_tool=self.tool, context=ctx, error=error
        )
        if message is None:
            raise error
        return message


def _context(executor: str | None, run_id: str, attempts: TaskAttempts) -> TaskHookContext:
    """The hook context of the current attempt of a tool call."""
    return TaskHookContext(
        task=attempts.task,
        attempt=attempts.attempt,
        executor=executor,
        run_id=run_id,
        errors=attempts.errors,
        started_at=attempts.started_at,
    )


def _approved(ctx: Any, name: str, call_id: str) -> bool:
    """Whether a person approved this call through the SDK (``RunState.approve``)."""
    check = getattr(ctx, "is_tool_approved", None)
    return bool(callable(check) and check(name, call_id) is True)


def is_guarded(tool_or_agent: object) -> bool:
    """Whether a tool (function, shell, local shell, apply-patch, computer) or agent was guarded."""
    if isinstance(tool_or_agent, FunctionTool):
        return isinstance(tool_or_agent.on_invoke_tool, _GuardedInvoker)
    if is_guarded_local(tool_or_agent) or is_guarded_computer(tool_or_agent):
        return True  # a shell, local shell, apply-patch or computer tool
    ref = _GUARDED_AGENTS.get(id(tool_or_agent))
    return ref is not None and ref() is tool_or_agent


def guarded_function_tool(
    tool: FunctionTool,
    guard: ToolGuard,
    inner: Callable[[ToolContext[Any], str], Awaitable[Any]] | None = None,
) -> FunctionTool:
    guarded = copy.copy(tool)
    if inner is None:
        current = guarded.on_invoke_tool
        inner = current.inner if isinstance(current, _GuardedInvoker) else _raw_invoker(guarded)
    guarded.on_invoke_tool = _GuardedInvoker(inner, guard, guarded)
    original = tool.needs_approval
    if isinstance(original, ApprovalPolicy):
        original = original.original
    # Only with PreToolUse hooks: the SDK asks a person about any call whose arguments a
    # needs_approval callable cannot read, so the tool's own setting stays otherwise.
    guarded.needs_approval = (
        ApprovalPolicy(original, guard, tool.name, server_name(tool)) if guard.pre() else original
    )
    return guarded
