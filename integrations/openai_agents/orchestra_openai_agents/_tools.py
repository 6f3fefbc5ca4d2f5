"""The tool guard: every tool call of a guarded agent goes through ``PreToolUse`` (internal).

The SDK's tool guardrails can reject a call but cannot rewrite its arguments, and its
failure handling turns a tool's exception into a string before any hook sees it. So the
guard works on copies: ``guard_agent`` clones the agent graph (agents reached by handoffs,
``handoff()`` objects, agents used as tools) and gives each ``FunctionTool`` a guarded
invoker that fires ``PreToolUse``, runs the tool-call ``TaskHooks`` around each attempt
(``on_failure`` sees the tool's own exception; ``Retry`` calls the tool again), fires
``PostToolUse``/``PostToolUseFailure`` and only then applies the tool's own failure policy.
A hook's ``ask`` becomes the SDK's approval interruption (``needs_approval``).
"""

from __future__ import annotations

import contextlib
import copy
import inspect
import json
import logging
import time
import types
import uuid
import weakref
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias, TypeVar, cast, final

import anyio
import attrs
from agents import (
    Agent,
    CodeInterpreterTool,
    FileSearchTool,
    FunctionTool,
    Handoff,
    HostedMCPTool,
    ImageGenerationTool,
    ShellTool,
    ToolSearchTool,
    WebSearchTool,
)
from agents.tool import maybe_invoke_function_tool_failure_error_function
from opentelemetry import trace

from orchestra import Fail, Retry, Skip, Task, TaskHookContext, ToolDenied
from orchestra.dag import DEFAULT_MAX_ATTEMPTS
from orchestra.tracing import get_tracer
from orchestra.tracing.names import (
    ATTR_DECISION,
    ATTR_DECISION_BY,
    ATTR_DECISION_DELAY,
    ATTR_TOOL_DECISION,
    EVENT_DECISION,
    GEN_AI_OPERATION_NAME,
    GEN_AI_TOOL_NAME,
    OP_EXECUTE_TOOL,
    SPAN_EXECUTE_TOOL,
)
from orchestra_openai_agents._chain import Chain, split_hooks
from orchestra_openai_agents._state import RunState, end_span, state_for, tool_parent_var

if TYPE_CHECKING:
    from agents.run_context import RunContextWrapper
    from agents.tool_context import ToolContext
    from opentelemetry.trace import Span

    from orchestra.skills import HookOutcome, HookRegistry

__all__ = [
    "AskCallback",
    "HostedTools",
    "OnDeny",
    "ToolGuard",
    "Verdict",
    "guard_agent",
    "guard_tool",
    "is_guarded",
    "tool_payload_input",
]

logger: Final = logging.getLogger("orchestra")

AskCallback: TypeAlias = Callable[
    [str, Mapping[str, Any], "str | None"], "bool | Awaitable[bool | None] | None"
]
"""Answers a hook's ``ask``: ``(tool_name, tool_input, reason)`` -> approve (True),
refuse (False) or pause the run for a person to decide (None, an SDK interruption)."""

OnDeny: TypeAlias = Literal["reject", "raise"]
"""What a denied call does: ``"reject"`` tells the model (the run goes on), ``"raise"``
raises ``ToolDenied`` out of the run."""

HostedTools: TypeAlias = Literal["refuse", "allow"]
"""What ``guard_agent`` does with a hosted tool (run on OpenAI's servers, where no hook
can stop a call) that ``PreToolUse`` hooks match: ``"refuse"`` raises ``ValueError``,
``"allow"`` lets it run unguarded."""

_TAgent = TypeVar("_TAgent", bound=Agent[Any])

# Tools the model's provider runs: the SDK sees their calls only after they happened.
_HOSTED: Final = (
    FileSearchTool,
    WebSearchTool,
    HostedMCPTool,
    CodeInterpreterTool,
    ImageGenerationTool,
    ToolSearchTool,
)


def tool_payload_input(raw: str | None) -> Any:
    """The ``tool_input`` of a payload: the model's JSON arguments, parsed."""
    if not raw:
        return {}
    try:
        return json.loads(raw)
    except ValueError:  # the tool reports bad JSON itself
        return {"raw": raw}


def _refusal(outcome: HookOutcome) -> str:
    return outcome.reason or f"denied by a PreToolUse hook at {outcome.decided_by}"


@final
@attrs.frozen
class Verdict:
    """What ``PreToolUse`` (and the ``ask`` callback) said about one call."""

    refusal: str | None = None  # the call is denied, with this reason
    modified: dict[str, Any] | None = None  # the input the tool gets instead
    pending: str | None = None  # the call waits for a person's approval, with this reason
    output: Any = None  # a hook's mock output: the tool is not called


_ALLOW: Final = Verdict()


@final
class ToolGuard:
    """The policy the guarded tools follow: the registry, the tool-call hooks, ``ask``."""

    __slots__ = ("ask", "hosted_tools", "max_attempts", "on_deny", "registry", "tasks", "watching")

    def __init__(
        self,
        registry: HookRegistry | None,
        tasks: Chain,
        *,
        ask: AskCallback | None = None,
        on_deny: OnDeny = "reject",
        hosted_tools: HostedTools = "refuse",
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
    ) -> None:
        if on_deny not in ("reject", "raise"):
            raise ValueError(f"on_deny must be 'reject' or 'raise', got {on_deny!r}")
        if hosted_tools not in ("refuse", "allow"):
            raise ValueError(f"hosted_tools must be 'refuse' or 'allow', got {hosted_tools!r}")
        if max_attempts < 1:
            raise ValueError(f"max_attempts must be at least 1, got {max_attempts!r}")
        self.registry = registry
        self.tasks = tasks
        self.ask = ask
        self.on_deny: OnDeny = on_deny
        self.hosted_tools: HostedTools = hosted_tools
        self.max_attempts = max_attempts
        events = ("PreToolUse", "PostToolUse", "PostToolUseFailure")
        moments = ("before_execute", "after_execute", "on_failure")
        self.watching = any(tasks.has(moment) for moment in moments) or (
            registry is not None and any(registry.has_hooks(event) for event in events)
        )
        """Whether any hook looks at tool calls (else a call costs one check)."""

    def pre(self) -> bool:
        """Whether ``PreToolUse`` hooks are registered."""
        return self.registry is not None and self.registry.has_hooks("PreToolUse")

    async def pre_tool_use(
        self, payload: dict[str, Any], *, approved: bool, interruptible: bool
    ) -> Verdict:
        """Fire ``PreToolUse`` and settle an ``ask``.

        An ``ask`` is settled by a person's earlier approval of this call (``approved``),
        else by the ``ask`` callback; when neither decides, the call waits for approval
        (``pending``) where the SDK can pause the run (``interruptible``), else it is
        refused.
        """
        assert self.registry is not None
        outcome = await self.registry.fire("PreToolUse", payload)
        if outcome.blocked:
            return Verdict(refusal=_refusal(outcome))
        modified = dict(outcome.modified_input) if outcome.modified_input is not None else None
        if outcome.decision == "ask" and not approved:
            reason = outcome.reason or f"needs approval ({outcome.decided_by})"
            answer: bool | None = None
            if self.ask is not None:
                tool_input = modified if modified is not None else payload["tool_input"]
                given = self.ask(payload["tool_name"], tool_input, outcome.reason)
                answer = await given if inspect.isawaitable(given) else given
            if answer is None and interruptible:
                return Verdict(modified=modified, pending=reason)
            if not answer:
                return Verdict(refusal=reason)
        if modified is None and outcome.output is None:
            return _ALLOW
        return Verdict(modified=modified, output=outcome.output)

    def deny(self, tool: str, refusal: str, *, retry: bool = False) -> str:
        """What a denied call returns to the model (or ``ToolDenied`` with ``raise``)."""
        logger.info("tool %r denied: %s", tool, refusal)
        if self.on_deny == "raise":
            raise ToolDenied(tool, refusal, retry=retry)
        again = " (you may try the call again)" if retry else ""
        return f"Tool call denied: {refusal}{again}"

    async def permission_denied(self, payload: dict[str, Any], refusal: str) -> bool:
        """Fire ``PermissionDenied`` for a call ``PreToolUse`` denied: may it be retried?"""
        registry = self.registry
        if registry is None or not registry.has_hooks("PermissionDenied"):
            return False
        outcome = await registry.fire("PermissionDenied", {**payload, "reason": refusal})
        return outcome.retry

    def check_hosted(self, agent: Agent[Any], tool: object) -> None:
        """Refuse a hosted tool that ``PreToolUse`` hooks match, unless allowed."""
        if self.hosted_tools == "allow" or self.registry is None:
            return
        if isinstance(tool, ShellTool):
            environment: Mapping[str, Any] = tool.environment or {}
            if environment.get("type", "local") == "local":
                return
        elif not isinstance(tool, _HOSTED):
            return
        name = str(getattr(tool, "name", type(tool).__name__))
        matching = self.registry.hooks_for("PreToolUse", {"tool_name": name})
        if not matching:
            return
        raise ValueError(
            f"agent {agent.name!r} has the hosted tool {name!r} ({type(tool).__name__}): "
            "the model's provider runs it, where no hook can stop a call, and PreToolUse "
            f"hooks match it ({matching[0].source}). Remove the tool, narrow the hooks' "
            "matcher, or pass hosted_tools='allow' to run it unguarded"
        )


# --- the guarded invoker ------------------------------------------------------------------


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
            attributes["gen_ai.tool.call.id"] = str(call_id)
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
            return await self._once(ctx, name, input, state)
        registry = guard.registry
        tool_input: Any = tool_payload_input(input)
        call_id = str(getattr(ctx, "tool_call_id", "") or f"call_{uuid.uuid4().hex}")
        agent = getattr(ctx, "agent", None)
        fields: dict[str, Any] = {"tool_name": name, "tool_use_id": call_id}
        if agent is not None:
            fields["agent_name"] = agent.name
        if guard.pre():
            verdict = state.verdicts.pop(call_id, None) if state is not None else None
            if verdict is None:
                approved = _approved(ctx, name, call_id)
                payload = {**fields, "tool_input": tool_input}
                verdict = await guard.pre_tool_use(payload, approved=approved, interruptible=False)
            refusal = verdict.refusal
            if span is not None:
                span.set_attribute(ATTR_TOOL_DECISION, "deny" if refusal else "allow")
            if refusal is not None:
                payload = {**fields, "tool_input": tool_input}
                retry = await guard.permission_denied(payload, refusal)
                return guard.deny(name, refusal, retry=retry)
            if verdict.output is not None:  # a mock: the tool is not called
                return verdict.output
            if verdict.modified is not None:
                tool_input = verdict.modified
                input = json.dumps(verdict.modified)
                # Arguments the SDK prepared for an approval check match the old input.
                if getattr(ctx, "_function_tool_arguments", None) is not None:
                    ctx._function_tool_arguments = None
        result = await self._attempts(ctx, name, input, tool_input, fields, state, span)
        if registry is not None and registry.has_hooks("PostToolUse"):
            payload = {**fields, "tool_input": tool_input, "tool_response": result}
            post = await registry.fire("PostToolUse", payload)
            if post.output is not None:  # a rewrite of what the model gets
                return post.output
        return result

    async def _attempts(
        self,
        ctx: ToolContext[Any],
        name: str,
        input: str,
        tool_input: Any,
        fields: dict[str, Any],
        state: RunState | None,
        span: Span | None,
    ) -> Any:
        """Call the tool, with the tool-call ``TaskHooks`` around each attempt."""
        guard, tasks = self.guard, self.guard.tasks
        moments = ("before_execute", "on_failure", "after_execute")
        if not any(tasks.has(moment) for moment in moments):
            return await self._once(ctx, name, input, state, fields, tool_input)
        task = Task(id=name, fn=self, metadata={**fields, "tool_input": tool_input})
        executor = fields.get("agent_name")
        run_id = state.run_id if state is not None else ""
        record = state.hook_errors.append if state is not None else None
        started = time.monotonic()
        errors: tuple[BaseException, ...] = ()
        attempt = 1
        while True:
            tctx = TaskHookContext(
                task=task,
                attempt=attempt,
                executor=executor,
                run_id=run_id,
                errors=errors,
                started_at=started,
            )
            if tasks.has("before_execute"):
                decision, by = await tasks.call("before_execute", tctx, subject=name, record=record)
                if isinstance(decision, Skip):
                    return f"Tool call skipped: {decision.reason or f'skipped by {by}'}"
                if isinstance(decision, Fail):
                    return guard.deny(name, decision.reason or f"failed by {by}")
            try:
                result = await self.inner(ctx, input)
            except ToolDenied as exc:
                return guard.deny(name, exc.reason or str(exc), retry=exc.retry)
            except Exception as exc:
                errors = (*errors, exc)
                await self._report_failure(fields, tool_input, exc)
                tctx = TaskHookContext(
                    task=task,
                    attempt=attempt,
                    executor=executor,
                    run_id=run_id,
                    errors=errors,
                    started_at=started,
                )
                decision, by = None, None
                if tasks.has("on_failure"):
                    decision, by = await tasks.call(
                        "on_failure", tctx, exc, subject=name, record=record
                    )
                if decision is not None and span is not None:
                    _record_decision(span, decision, by)
                if isinstance(decision, Retry) and attempt < guard.max_attempts:
                    if decision.delay:
                        await anyio.sleep(decision.delay)
                    attempt += 1
                    continue
                if isinstance(decision, Skip):
                    return f"Tool call skipped: {decision.reason or f'skipped by {by}'}"
                return await self._failed(ctx, exc)
            if state is not None:
                state.tool_calls += 1
            if tasks.has("after_execute"):
                await tasks.call("after_execute", tctx, result, subject=name, record=record)
            return result

    async def _once(
        self,
        ctx: ToolContext[Any],
        name: str,
        input: str,
        state: RunState | None,
        fields: dict[str, Any] | None = None,
        tool_input: Any = None,
    ) -> Any:
        """One call with no tool-call hooks: the result, or the tool's failure policy's."""
        try:
            result = await self.inner(ctx, input)
        except ToolDenied as exc:  # a @registry.guard inside the tool said no
            return self.guard.deny(name, exc.reason or str(exc), retry=exc.retry)
        except Exception as exc:
            if fields is not None:
                await self._report_failure(fields, tool_input, exc)
            return await self._failed(ctx, exc)
        if state is not None:
            state.tool_calls += 1
        return result

    async def _report_failure(
        self, fields: dict[str, Any], tool_input: Any, error: BaseException
    ) -> None:
        registry = self.guard.registry
        if registry is None or not registry.has_hooks("PostToolUseFailure"):
            return
        payload = {
            **fields,
            "tool_input": tool_input,
            "error": str(error) or type(error).__name__,
            "error_type": type(error).__qualname__,
        }
        await registry.fire("PostToolUseFailure", payload)

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


def _approved(ctx: Any, name: str, call_id: str) -> bool:
    """Whether a person approved this call through the SDK (``RunState.approve``)."""
    check = getattr(ctx, "is_tool_approved", None)
    return bool(callable(check) and check(name, call_id) is True)


def _record_decision(span: Span, decision: object, by: str | None) -> None:
    attributes: dict[str, Any] = {ATTR_DECISION: type(decision).__name__.lower()}
    if by is not None:
        attributes[ATTR_DECISION_BY] = by
    if isinstance(decision, Retry):
        attributes[ATTR_DECISION_DELAY] = decision.delay
    span.add_event(EVENT_DECISION, attributes)


@final
class _ApprovalPolicy:
    """The ``needs_approval`` of a guarded tool: the tool's own, then ``PreToolUse``'s ``ask``.

    ``PreToolUse`` fires here, before the SDK runs the call, so an ``ask`` the ``ask``
    callback does not settle pauses the run (``result.interruptions``); the verdict on any
    other call is kept for the invoker, which then does not fire the hooks again.
    """

    __slots__ = ("guard", "name", "original")

    def __init__(self, original: Any, guard: ToolGuard, name: str) -> None:
        self.original = original
        self.guard = guard
        self.name = name

    async def __call__(
        self, context: RunContextWrapper[Any], params: dict[str, Any], call_id: str
    ) -> bool:
        original = self.original
        if original is True:
            return True
        if callable(original):
            answer = original(context, params, call_id)
            if await answer if inspect.isawaitable(answer) else answer:
                return True
        if not self.guard.pre():
            return False
        state = state_for(context)
        payload: dict[str, Any] = {
            "tool_name": self.name,
            "tool_use_id": call_id,
            "tool_input": params,
        }
        if state is not None and state.agent is not None:
            payload["agent_name"] = state.agent.name
        parent = (state.span or state.run_span) if state is not None else None
        with trace.use_span(parent, end_on_exit=False) if parent else contextlib.nullcontext():
            verdict = await self.guard.pre_tool_use(payload, approved=False, interruptible=True)
        if verdict.pending is not None:
            return True
        if state is not None:
            state.verdicts[call_id] = verdict
        return False


def is_guarded(tool_or_agent: object) -> bool:
    """Whether a ``FunctionTool`` (or an ``Agent``) was guarded by this bridge."""
    if isinstance(tool_or_agent, FunctionTool):
        return isinstance(tool_or_agent.on_invoke_tool, _GuardedInvoker)
    ref = _GUARDED_AGENTS.get(id(tool_or_agent))
    return ref is not None and ref() is tool_or_agent


def _guard_function_tool(
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
    if isinstance(original, _ApprovalPolicy):
        original = original.original
    # Only with PreToolUse hooks: the SDK asks a person about any call whose arguments a
    # needs_approval callable cannot read, so the tool's own setting stays otherwise.
    guarded.needs_approval = (
        _ApprovalPolicy(original, guard, tool.name) if guard.pre() else original
    )
    return guarded


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
        registry: the ``orchestra.skills.HookRegistry`` whose hooks fire, or None.
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
    tasks, _ = split_hooks(hooks)
    guard = ToolGuard(registry, tasks, ask=ask, on_deny=on_deny, max_attempts=max_attempts)
    return _guard_function_tool(tool, guard)


# --- agent graphs -------------------------------------------------------------------------

_GUARDED_AGENTS: Final[dict[int, weakref.ReferenceType[Agent[Any]]]] = {}


def _remember(agent: Agent[Any]) -> None:
    key = id(agent)
    _GUARDED_AGENTS[key] = weakref.ref(agent)
    weakref.finalize(agent, _GUARDED_AGENTS.pop, key, None)


def _rebind_agent_tool(
    tool: FunctionTool, nested: Agent[Any]
) -> Callable[[ToolContext[Any], str], Awaitable[Any]] | None:
    """The body of an ``Agent.as_tool`` tool, running ``nested`` instead of its agent.

    ``as_tool`` builds a closure over the agent; its copy here closes over the guarded
    clone instead, every other setting (``max_turns``, ``run_config``, ``session``,
    ``hooks``, extractors...) unchanged. None when the body is not shaped as expected.
    """
    impl = getattr(tool.on_invoke_tool, "_invoke_tool_impl", None)
    code = getattr(impl, "__code__", None)
    closure = getattr(impl, "__closure__", None)
    if not isinstance(impl, types.FunctionType) or code is None or closure is None:
        return None
    if "self" not in code.co_freevars:
        return None
    index = code.co_freevars.index("self")
    if closure[index].cell_contents is not getattr(tool, "_agent_instance", None):
        return None
    cells = tuple(types.CellType(nested) if i == index else cell for i, cell in enumerate(closure))
    body = types.FunctionType(code, impl.__globals__, impl.__name__, impl.__defaults__, cells)
    body.__kwdefaults__ = impl.__kwdefaults__
    return cast("Callable[[ToolContext[Any], str], Awaitable[Any]]", body)


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
        _remember(clone)
        if clone.mcp_servers:
            self.mcp(clone)
        clone.handoffs = [
            self.agent(h) if isinstance(h, Agent) else self.handoff(h) for h in original.handoffs
        ]
        return clone

    def tool(self, agent: Agent[Any], tool: Any) -> Any:
        if not isinstance(tool, FunctionTool):
            self.guard.check_hosted(agent, tool)
            return tool
        nested = getattr(tool, "_agent_instance", None)
        if not getattr(tool, "_is_agent_tool", False) or not isinstance(nested, Agent):
            return _guard_function_tool(tool, self.guard)
        if is_guarded(nested):
            return _guard_function_tool(tool, self.guard)
        clone = self.agent(nested)
        body = _rebind_agent_tool(tool, clone)
        if body is None:
            raise TypeError(
                f"cannot guard the tool {tool.name!r} of agent {agent.name!r}: it runs agent "
                f"{nested.name!r}, whose tools would run unguarded. Build it from the "
                "guarded agent instead: bridge.guard(agent).as_tool(...)"
            )
        guarded = _guard_function_tool(tool, self.guard, body)
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
                _guard_function_tool(tool, guard) if isinstance(tool, FunctionTool) else tool
                for tool in await fetch(run_context)
            ]

        clone.get_mcp_tools = get_mcp_tools  # type: ignore[method-assign]

    def handoff(self, original: Handoff[Any, Any]) -> Handoff[Any, Any]:
        """A copy of a ``Handoff`` object whose target agent is the guarded clone."""
        invoke = original.on_invoke_handoff
        graph = self

        async def on_invoke_handoff(context: RunContextWrapper[Any], input_json: str) -> Any:
            target = await invoke(context, input_json)
            return graph.agent(target) if isinstance(target, Agent) else target

        guarded = copy.copy(original)
        guarded.on_invoke_handoff = on_invoke_handoff
        ref = getattr(original, "_agent_ref", None)
        target = ref() if callable(ref) else None
        if isinstance(target, Agent):
            guarded._agent_ref = weakref.ref(self.agent(target))
        return guarded


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
    tasks, _ = split_hooks(hooks)
    guard = ToolGuard(
        registry,
        tasks,
        ask=ask,
        on_deny=on_deny,
        hosted_tools=hosted_tools,
        max_attempts=max_attempts,
    )
    return cast(_TAgent, _GraphGuard(guard).agent(agent))


def guard_graph(agent: _TAgent, guard: ToolGuard) -> _TAgent:
    """``guard_agent`` with a ready ``ToolGuard`` (the bridge's own)."""
    return cast(_TAgent, _GraphGuard(guard).agent(agent))
