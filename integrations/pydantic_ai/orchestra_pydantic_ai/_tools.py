"""One tool call of a pydantic-ai agent through the tool events and ``TaskHooks`` (internal).

``OrchestraCapability.wrap_tool_execute`` hands each call here, with the validated
arguments and pydantic-ai's ``handler`` (the inner capabilities' tool hooks and the tool).
The tool events are ``orchestra.bridge.ToolHooks``'s (the one tool-call protocol); this
module maps its answers onto pydantic-ai's:

- ``PreToolUse`` (``tool_name``, ``tool_input``, ``tool_use_id``, ``agent_name``): a deny
  or block is pydantic-ai's ``ToolDenied`` (the model reads the reason; ``PermissionDenied``
  fires), an ``ask`` is pydantic-ai's ``ApprovalRequired`` (the run ends with
  ``DeferredToolRequests``, the pending request ``orchestra.bridge.Ask.request`` as its
  metadata; once a person approves, the call goes on; ``answer_deferred``'s answers run
  the pending input once, or judge an edit again), a
  ``modified_input`` is what the tool gets, a mock ``output`` answers without the tool
  (the first mock in config order; ``PostToolUse`` still fires, with ``mocked: true``);
- the tool-call ``TaskHooks`` around each attempt (task id: the tool's name):
  ``before_execute`` may ``Skip`` (the model reads "Tool call skipped: ..."), ``Fail`` (the
  model reads the reason) or ``Replace`` the arguments; ``on_failure`` sees the tool's own
  exception and may ``Retry`` it, ``Skip`` it, or ``Replace`` it with a result;
  ``after_execute`` may ``Replace`` the result; ``on_end`` gets the call's end state;
- ``PostToolUse`` (``tool_response``: an ``output`` rewrites what the model reads), or
  ``PostToolUseFailure`` (``error``, ``error_type``) before the exception goes on; a
  ``ToolDenied`` of a ``@registry.guard`` tool inside is a refusal the model reads.

pydantic-ai's own control flow (``ModelRetry``, ``ToolFailed``, deferrals, skips) passes
through untouched: it is not a failure of the tool.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, final

import anyio
from opentelemetry import trace
from pydantic_ai import ToolDenied
from pydantic_ai.exceptions import (
    ApprovalRequired,
    CallDeferred,
    ModelRetry,
    SkipToolExecution,
    ToolFailedError,
    ToolRetryError,
)
from pydantic_ai.messages import ToolCallPart

import orchestra.tracing as ot
from orchestra import Fail, HookChain, Replace, Retry, Skip, Task, TaskState
from orchestra.bridge import Approval, Ask, Mock, Refuse, ToolCall, ToolHooks
from orchestra_pydantic_ai._state import RunState

if TYPE_CHECKING:
    from orchestra.skills import HookRegistry

__all__ = ["ToolCalls"]

_Handler = Callable[[dict[str, Any]], Awaitable[Any]]
_Run = Callable[[Any], Awaitable[Any]]
_CONTROL: Final = (
    ApprovalRequired,
    CallDeferred,
    SkipToolExecution,
    ToolFailedError,
    ToolRetryError,
)
"""pydantic-ai's control flow: passes through the hooks untouched."""
_MOMENTS: Final = ("before_execute", "after_execute", "on_failure", "on_end")


@final
class ToolCalls:
    """The tool events and tool-call hooks every call of the capability's agents goes through."""

    __slots__ = ("has", "hooked", "max_attempts", "registry", "tasks", "tools")

    def __init__(self, registry: HookRegistry | None, tasks: HookChain, max_attempts: int) -> None:
        self.registry = registry
        self.tasks = tasks
        self.max_attempts = max_attempts
        self.tools = ToolHooks(registry)
        self.has = {m: tasks.has(m) for m in _MOMENTS}
        self.hooked = any(self.has.values())

    @property
    def watching(self) -> bool:
        """Whether anything looks at tool calls: hooks or a budget (else one check a call)."""
        return self.hooked or self.tools.watching

    async def call(
        self,
        state: RunState,
        approved: bool | Approval,
        name: str,
        call_id: str,
        args: dict[str, Any],
        handler: _Handler,
        metadata: Mapping[str, Any] | None = None,
    ) -> Any:
        """One tool call, its events and its hooks; what the model reads comes back.

        ``metadata`` (the tool's ``Tool(metadata=...)``) joins ``ctx.task.metadata`` of
        the tool-call ``TaskHooks``, beside the call's own fields.
        """
        fields = {"agent_name": state.agent} if state.agent is not None else {}
        call = ToolCall(name, args, tool_use_id=call_id, fields=fields, approved=approved is True)
        tools = self.tools
        if isinstance(approved, Approval):  # a person's checked answer (answer_deferred)
            answer = await tools.resume(call, approved, can_pause=True)
        else:
            answer = await tools.pre(call, can_pause=True)
        if isinstance(answer, Refuse):
            return ToolDenied(answer.reason)
        if isinstance(answer, Ask):  # the run ends with DeferredToolRequests
            raise ApprovalRequired(metadata=answer.request(call))
        if isinstance(answer, Mock):  # the tool is not called, PostToolUse fires
            return await tools.post(call, answer.output, mocked=True)
        call = call.with_input(answer.tool_input)
        result, returned = await self._attempts(state, call, handler, metadata or {})
        if returned:
            return await tools.post(call, result)
        return result

    async def output(
        self, state: RunState, name: str, part: ToolCallPart | None, output: Any, run: _Run
    ) -> Any:
        """An output function's call (``output_type=[fn]``, ``ToolOutput(fn)``) as a tool call.

        ``tool_input`` is the model's arguments; a refusal (and an ``ask``, which output
        processing cannot defer) is ``ModelRetry`` with the reason: the function is not
        called and the model reads why. A rewrite of a one-argument function's input
        cannot be carried out: it is refused the same way.
        """
        args = dict(output) if isinstance(output, Mapping) else _part_args(part, output)

        async def body(given: dict[str, Any]) -> Any:
            if isinstance(output, Mapping):
                return await run(given)
            if given != args:
                raise ModelRetry(f"a PreToolUse hook rewrote the input of {name!r}: refused")
            return await run(output)

        call_id = part.tool_call_id if part is not None else ""
        try:
            result = await self.call(state, False, name, call_id, args, body)
        except ApprovalRequired as pause:
            reason = (pause.metadata or {}).get("reason") or f"{name!r} needs approval"
            raise ModelRetry(str(reason)) from None
        if isinstance(result, ToolDenied):
            raise ModelRetry(result.message)
        return result

    async def _attempts(
        self, state: RunState, call: ToolCall, handler: _Handler, metadata: Mapping[str, Any]
    ) -> tuple[Any, bool]:
        """The tool's attempts, with the tool-call ``TaskHooks`` around each.

        Returns what the model reads, and whether the tool returned it (not a hook).
        """
        has = self.has
        name, tool_input = call.tool_name, dict(call.tool_input)
        if not any(has.values()):
            return await self._once(call, handler)
        task = Task(id=name, fn=handler, metadata={**metadata, **call.payload()})
        started, attempt = time.monotonic(), 1
        errors: tuple[BaseException, ...] = ()
        end, answer = TaskState.SUCCEEDED, None
        try:
            while True:
                ctx = state.task_context(task, attempt, errors, started, tool_input)
                if has["before_execute"]:
                    decision, by = await self._ask("before_execute", state, name, ctx)
                    if type(decision) is Replace and isinstance(decision.value, Mapping):
                        tool_input = dict(decision.value)
                    elif decision is not None:
                        end, answer = _given_up(decision, by)
                        return answer, False
                try:
                    result = await handler(tool_input)
                except _CONTROL:
                    raise
                except Exception as exc:
                    errors += (exc,)
                    failure = await self.tools.failed(call.with_input(tool_input), exc)
                    if isinstance(failure, Refuse):  # a guard inside the tool said no
                        return ToolDenied(failure.reason), False
                    decision, by = None, None
                    if has["on_failure"]:
                        ctx = state.task_context(task, attempt, errors, started, tool_input)
                        decision, by = await self._ask("on_failure", state, name, ctx, exc)
                    if isinstance(decision, Retry) and attempt < self.max_attempts:
                        await anyio.sleep(decision.delay)
                        attempt += 1
                        continue
                    if type(decision) is Replace:
                        return decision.value, False
                    if isinstance(decision, Skip):
                        end, answer = _given_up(decision, by)
                        return answer, False
                    end = TaskState.FAILED
                    raise
                state.tool_calls += 1
                if has["after_execute"]:
                    ctx = state.task_context(task, attempt, errors, started, tool_input)
                    decision, by = await self._ask("after_execute", state, name, ctx, result)
                    if type(decision) is Replace:
                        return decision.value, True
                    if decision is not None:
                        end, answer = _given_up(decision, by)
                        return answer, False
                return result, True
        finally:
            if has["on_end"]:
                ctx = state.task_context(task, attempt, errors, started, tool_input)
                await self._ask("on_end", state, name, ctx, end)

    async def _ask(
        self, moment: str, state: RunState, name: str, ctx: Any, *more: Any
    ) -> tuple[Any, str | None]:
        decision, by = await self.tasks.call(
            moment,
            ctx,
            *more,
            subject=name,
            on_error=state.hook_errors.append,
            tracer=ot.get_tracer(),
        )
        if decision is not None:
            _decided(decision, by)
        return decision, by

    async def _once(self, call: ToolCall, handler: _Handler) -> tuple[Any, bool]:
        try:
            return await handler(dict(call.tool_input)), True
        except _CONTROL:
            raise
        except Exception as exc:
            failure = await self.tools.failed(call, exc)
            if isinstance(failure, Refuse):  # a guard inside the tool said no
                return ToolDenied(failure.reason), False
            raise


def _part_args(part: ToolCallPart | None, output: Any) -> dict[str, Any]:
    """The model's arguments of an output call (a text output: ``{"output": text}``)."""
    if part is not None:
        return dict(part.args_as_dict())
    return {"output": output}


def _given_up(decision: object, by: str | None) -> tuple[TaskState, Any]:
    """A call given up by a decision: its end state and what the model reads."""
    why = getattr(decision, "reason", None)
    if isinstance(decision, Skip):
        return TaskState.SKIPPED, f"Tool call skipped: {why or f'skipped by {by}'}"
    assert isinstance(decision, Fail)
    return TaskState.FAILED, ToolDenied(why or f"failed by {by}")


def _decided(decision: object, by: str | None) -> None:
    span = trace.get_current_span()
    if not span.is_recording():
        return
    attributes: dict[str, Any] = {ot.names.ATTR_DECISION: type(decision).__name__.lower()}
    if by:
        attributes[ot.names.ATTR_DECISION_BY] = by
    why = getattr(decision, "reason", None)
    if why:
        attributes[ot.names.ATTR_DECISION_REASON] = str(why)[:256]
    span.add_event(ot.names.EVENT_DECISION, attributes)
