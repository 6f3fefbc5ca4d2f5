"""The policy calls of one guarded crew or agent (internal).

This module only asks, on the event loop of ``_blocking``; ``_hooks`` carries out what it
hears in CrewAI's hooks. The tool events go through the public tool-call protocol
(``orchestra.bridge.ToolHooks``: ``PreToolUse``, ``PermissionDenied``, ``PostToolUse``,
``PostToolUseFailure``); this module adds the hook chains and the delegations around it:

==========================  =============================================================
``pre(payload)``            ``PreToolUse`` through ``orchestra.bridge.ToolHooks``, then
                            ``before_execute``; for a delegation (``Delegate work to
                            coworker``, ``Ask question to coworker``) ``SubagentStart`` and
                            ``before_dispatch`` too. A hook's new input is judged by the
                            guards again. Answers a ``Verdict``.
``attempts(payload, ...)``  the call's attempts from CrewAI's first on
                            (``orchestra.bridge.AttemptDriver``): ``PostToolUseFailure``
                            and ``on_failure`` after each failure (a ``Retry`` runs the
                            tool again), ``PostToolUse`` and ``after_execute`` after its
                            result, ``on_end`` once.
``post(payload, result)``   a delegation's ``PostToolUse``, ``SubagentStop`` and
                            ``after_dispatch``: the result the agent reads instead.
``failed(payload, error)``  a delegation's ``PostToolUseFailure``.
``end(payload, state)``     ``on_end`` of a call refused before it ran.
==========================  =============================================================
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any, Final, final

import anyio
import anyio.to_thread
import attrs

import orchestra
from orchestra import (
    ExecutionMode,
    Skip,
    SubagentHookContext,
    SubagentResult,
    TaskState,
)
from orchestra.bridge import (
    DISPATCH_AS_TOOL,
    TOOL_AS_TASK,
    Again,
    Ask,
    AttemptDriver,
    DoSleep,
    Ended,
    GiveOutput,
    Mock,
    Refuse,
    TaskAttempts,
    ToolCall,
    ToolChains,
    judge,
)
from orchestra.tracing import get_tracer

__all__ = ["DELEGATIONS", "MAX_ATTEMPTS", "Policy", "Verdict"]

DELEGATIONS: Final = frozenset({"delegate_work_to_coworker", "ask_question_to_coworker"})
"""CrewAI's delegation tools (as its hooks name them): each call is a subagent dispatch."""
MAX_ATTEMPTS: Final = 3
"""A tool call's attempts (CrewAI's own retries count as one), however often hooks ``Retry``."""
_TASK_ANSWERS: Final = {**TOOL_AS_TASK, "on_failure": (Again, Skip)}
"""A failed call runs again (``Retry``, any ``Again``) or is given up (``Skip``): CrewAI runs it."""


@final
@attrs.frozen
class Verdict:
    """What ``pre`` decided: a refusal (the agent reads it), or the input to run with."""

    refusal: str | None = None
    tool_input: Mapping[str, Any] | None = None
    given: GiveOutput | None = None
    """A ``before_execute`` hook's output (``Replace(GiveOutput(v))``): the tool does not run."""


@final
class Policy(ToolChains):
    """The registry and the Python hooks of one ``with_hooks`` call."""

    __slots__ = ("_driver", "_watching")

    task_answers = _TASK_ANSWERS
    agent_answers = DISPATCH_AS_TOOL
    engine = "the CrewAI bridge (CrewAI runs the tools and the delegations)"

    @property
    def watching(self) -> bool:
        """Whether anything looks at tool calls (else a call costs one check)."""
        watching: bool | None = getattr(self, "_watching", None)
        if watching is None:
            events = ("PreToolUse", "PostToolUse", "PostToolUseFailure", "SubagentStart")
            reg = self.registry
            listens = reg is not None and any(reg.has_hooks(e) for e in events)
            moments = ("before_execute", "after_execute", "on_failure", "on_end")
            watching = self._watching = (
                listens
                or bool(self.budgets)
                or any(self.tasks.has(m) for m in moments)
                or any(self.agents.has(m) for m in ("before_dispatch", "after_dispatch"))
            )
        return watching

    # -- before the tool -------------------------------------------------------------------

    async def pre(self, payload: Mapping[str, Any]) -> Verdict:
        """``PreToolUse`` (``ToolHooks.pre``) and the ``before_*`` moments of one call."""

        async def before(call: ToolCall) -> str | GiveOutput | Mapping[str, Any] | None:
            return await self._before({**payload, "tool_input": call.tool_input})

        # CrewAI cannot pause a call: an ask nobody answers is a refusal (can_pause)
        call = _call(payload)
        with self.budgets.charging():
            answer = await judge(self.tools, call, before, can_pause=False)
        if isinstance(answer, Refuse | Ask):
            return Verdict(refusal=answer.reason)
        if isinstance(answer, Mock):  # the agent reads it, the tool does not run
            given = await self.tools.post(call, answer.output, mocked=True)
            return Verdict(given=GiveOutput(given))
        if isinstance(answer, GiveOutput):
            return Verdict(given=answer)
        return Verdict(tool_input=answer.tool_input if answer.modified else None)

    async def _before(
        self, payload: Mapping[str, Any]
    ) -> str | GiveOutput | Mapping[str, Any] | None:
        """The ``before_*`` moment: a refusal, an output, a new input, or None (go on)."""
        name, tool_input = str(payload["tool_name"]), payload["tool_input"]
        if name in DELEGATIONS:
            return await self._dispatching(payload)
        if not self.tasks.has("before_execute"):
            return None
        answer, ended = await self.before_task(self._task_context(payload, 1), tool_input)
        if ended is not None:
            await self.end(payload, ended, 1)
        return answer

    async def _dispatching(self, payload: Mapping[str, Any]) -> str | Mapping[str, Any] | None:
        """A delegation as a dispatch: ``SubagentStart``, then ``before_dispatch``."""
        tool_input = payload["tool_input"]
        ctx = _dispatch_context(payload)
        start = {
            "agent_name": ctx.subagent_name,
            "agent_type": ctx.subagent_name,
            "parent_agent": ctx.parent_agent,
            "prompt": ctx.task,
        }
        outcome = await self.fire("SubagentStart", start)
        if outcome is not None and (outcome.blocked or outcome.decision == "deny"):
            return outcome.reason or f"denied by a SubagentStart hook ({outcome.decided_by})"
        if not self.agents.has("before_dispatch"):
            return None
        return await self.before_agent(ctx, tool_input, agent="coworker", text="task")

    # -- after the tool --------------------------------------------------------------------

    async def post(self, payload: Mapping[str, Any], result: Any) -> Any:
        """A delegation's result: ``PostToolUse``, ``SubagentStop`` and ``after_dispatch``.

        What the agent reads instead, or None.
        """
        seen = await self.tools.post(_call(payload), result)
        output = None if seen is result else seen
        ctx = _dispatch_context(payload)
        stop = {"agent_name": ctx.subagent_name, "agent_type": ctx.subagent_name}
        fields = {"stop_hook_active": False, "last_assistant_message": seen, "output": seen}
        await self.fire("SubagentStop", {**stop, **fields})
        done = SubagentResult(agent=ctx.subagent_name, output=seen, attempts=1)
        return await self.after(self.agents, str(payload["tool_name"]), ctx, done, output)

    async def attempts(
        self,
        payload: Mapping[str, Any],
        result: Any,
        error: str | None,
        rerun: Callable[[Mapping[str, Any]], Any],
    ) -> tuple[Ended, int]:
        """A tool call's outcome from CrewAI's first attempt on, driven by ``AttemptDriver``.

        ``result`` is what CrewAI's attempt gave (its own retries included), ``error``
        the failure it reported, or None; ``rerun(tool_input)`` runs the tool again (in a
        worker thread), raising on a failure. Each failure fires ``PostToolUseFailure``
        before ``on_failure`` decides; a result goes through ``PostToolUse``, then
        ``after_execute``. Returns how the call ended and its attempts.
        """
        call = _call(payload)
        attempts = self.driver.begin(
            orchestra.Task(id=call.tool_name, fn=rerun),
            call.tool_input,
            context=functools.partial(self._attempt_context, payload),
            on_error=self.errors.append,
            tracer=get_tracer(),
            attempt=1,  # CrewAI made the first
        )
        if error is None:
            return await attempts.asucceeded(await self.tools.post(call, result)), 1

        async def body(tool_input: Mapping[str, Any]) -> Any:
            try:
                again = await anyio.to_thread.run_sync(rerun, tool_input)
            except Exception as exc:
                raise await self._failed(call, str(exc)) from exc
            return await self.tools.post(call.with_input(tool_input), again)

        answer = await attempts.afailed(await self._failed(call, error))
        if isinstance(answer, DoSleep):
            await anyio.sleep(answer.delay)
            answer = await attempts.run_async(body)
        return answer, attempts.attempt

    async def failed(self, payload: Mapping[str, Any], error: str) -> None:
        """``PostToolUseFailure`` of a delegation that failed (no ``on_failure``: no task)."""
        await self._failed(_call(payload), error)

    async def _failed(self, call: ToolCall, error: str) -> RuntimeError:
        """``PostToolUseFailure`` for a failure CrewAI reported (a message): the error."""
        detail = {"error": error, "error_type": "ToolError"}
        await self.tools.failed(call, RuntimeError(error), detail=detail)
        return RuntimeError(error)

    @property
    def driver(self) -> AttemptDriver:
        """The attempt driver of the tool-call ``TaskHooks`` (made once)."""
        driver: AttemptDriver | None = getattr(self, "_driver", None)
        if driver is None:
            driver = self._driver = AttemptDriver(self.tasks, max_attempts=MAX_ATTEMPTS)
        return driver

    def _attempt_context(
        self, payload: Mapping[str, Any], attempts: TaskAttempts
    ) -> orchestra.TaskHookContext:
        return self._task_context({**payload, "tool_input": attempts.inputs}, attempts.attempt)

    async def end(self, payload: Mapping[str, Any], state: TaskState, attempt: int) -> None:
        """``on_end``, once per tool call."""
        if self.tasks.has("on_end") and payload["tool_name"] not in DELEGATIONS:
            await self.end_task(self._task_context(payload, attempt), state)

    def _task_context(self, payload: Mapping[str, Any], attempt: int) -> orchestra.TaskHookContext:
        """The hook context of one attempt of a tool call (the task id: the tool's name)."""
        fields = {k: payload[k] for k in ("tool_name", "tool_use_id", "agent_name") if k in payload}
        executor = payload.get("agent_name")
        return super().task_context(
            str(payload["tool_name"]),
            payload["tool_input"],
            fields=fields,
            attempt=attempt,
            executor=None if executor is None else str(executor),
        )


def _call(payload: Mapping[str, Any]) -> ToolCall:
    """The call as ``orchestra.bridge`` describes it."""
    extra = {
        k: v for k, v in payload.items() if k not in ("tool_name", "tool_input", "tool_use_id")
    }
    return ToolCall(
        str(payload["tool_name"]),
        payload["tool_input"],
        tool_use_id=str(payload["tool_use_id"]),
        fields=extra,
    )


def _dispatch_context(payload: Mapping[str, Any]) -> SubagentHookContext:
    """A delegation as a subagent dispatch from the agent that delegates."""
    tool_input = payload["tool_input"]
    return SubagentHookContext(
        parent_agent=payload.get("agent_name"),
        subagent_name=str(tool_input.get("coworker") or ""),
        execution_mode=ExecutionMode.SYNC,
        task=str(tool_input.get("task") or tool_input.get("question") or ""),
        attempt=1,
    )
