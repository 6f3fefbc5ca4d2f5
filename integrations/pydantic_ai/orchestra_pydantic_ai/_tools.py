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

import functools
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, final

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
from orchestra import HookChain, Task, TaskHookContext
from orchestra.bridge import (
    Approval,
    Ask,
    AttemptDriver,
    DoGive,
    DoSkip,
    Mock,
    Refuse,
    TaskAttempts,
    ToolCall,
    ToolHooks,
)
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


@final
class ToolCalls:
    """The tool events and tool-call hooks every call of the capability's agents goes through."""

    __slots__ = ("driver", "registry", "tools")

    def __init__(self, registry: HookRegistry | None, tasks: HookChain, max_attempts: int) -> None:
        self.registry = registry
        self.tools = ToolHooks(registry)
        self.driver = AttemptDriver(tasks, max_attempts=max_attempts)

    @property
    def watching(self) -> bool:
        """Whether anything looks at tool calls: hooks or a budget (else one check a call)."""
        return self.driver.hooked or self.tools.watching

    async def call(
        self,
        state: RunState,
        approved: bool | Approval,
        name: str,
        call_id: str,
        args: dict[str, Any],
        handler: _Handler,
        metadata: Mapping[str, Any] | None = None,
        identifier: str | None = None,
    ) -> Any:
        """One tool call, its events and its hooks; what the model reads comes back.

        ``metadata`` (the tool's ``Tool(metadata=...)``) joins ``ctx.task.metadata`` of
        the tool-call ``TaskHooks``, beside the call's own fields; ``identifier`` (its
        toolset's ``id``, an MCP server's included) names it ``identifier/name`` too.
        """
        fields = {"agent_name": state.agent} if state.agent is not None else {}
        call = ToolCall(
            name,
            args,
            tool_use_id=call_id,
            fields=fields,
            approved=approved is True,
            identifier=identifier,
        )
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
        """The tool's attempts, driven by ``orchestra.bridge.AttemptDriver``.

        Returns what the model reads, and whether the tool returned it (not a hook).
        """
        if not self.driver.hooked:
            return await self._once(call, handler)
        refused: list[ToolDenied] = []

        async def body(tool_input: Mapping[str, Any]) -> Any:
            try:
                result = await handler(dict(tool_input))
            except _CONTROL:
                raise
            except Exception as exc:
                failure = await self.tools.failed(call.with_input(tool_input), exc)
                if isinstance(failure, Refuse):  # a guard inside the tool said no
                    refused.append(ToolDenied(failure.reason))
                    return refused[-1]
                raise
            state.tool_calls += 1
            return result

        task = Task(id=call.tool_name, fn=handler, metadata={**metadata, **call.payload()})
        attempts = self.driver.begin(
            task,
            dict(call.tool_input),
            context=functools.partial(_context, state),
            on_error=state.hook_errors.append,
            tracer=ot.get_tracer(),
        )
        end = await attempts.run_async(body, passthrough=_CONTROL)
        if type(end) is DoGive:  # the tool's result (maybe replaced), or a hook's output
            mine = end.reason is None and not (refused and end.output is refused[-1])
            return end.output, mine
        why = getattr(end.decision, "reason", None) or end.reason
        if type(end) is DoSkip:
            return f"Tool call skipped: {why}", False
        if end.error in attempts.errors:  # the tool's own error: it goes on
            raise end.error
        return ToolDenied(why or "failed by a hook"), False

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


def _context(state: RunState, attempts: TaskAttempts) -> TaskHookContext:
    """The hook context of the current attempt of a tool call."""
    return state.task_context(
        attempts.task, attempts.attempt, attempts.errors, attempts.started_at, attempts.inputs
    )
