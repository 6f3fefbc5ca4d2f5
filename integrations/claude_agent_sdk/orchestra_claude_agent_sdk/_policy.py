"""The policy calls of one session: what the registry and the Python hooks decide (internal).

This module only asks; ``_answers`` turns what it hears into the SDK's hook output. The
tool events go through the public tool-call protocol (``orchestra.bridge.ToolHooks``:
``pre`` -> proceed | mock | refuse | ask, ``post``, ``failed``); this module adds the hook
chains around it:

==========================  =============================================================
``pre(payload)``            ``PreToolUse`` (transforms, then guards on the final input),
                            then ``before_execute`` (tool calls) or ``before_dispatch``
                            (the ``Agent``/``Task`` tool); a hook's new input is judged by
                            the guards again. Answers a ``Verdict``.
``post(payload)``           ``PostToolUse``, then ``after_execute``/``after_dispatch``
                            and ``on_end``: the output the model reads instead, or None.
``failed(payload)``         ``PostToolUseFailure``, ``on_failure`` (observed: the CLI ran
                            the tool, it cannot be run again from here) and ``on_end``.
``event(name, payload)``    any other event, through the registry as it is.
==========================  =============================================================
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Final, final

import attrs

import orchestra
from orchestra import (
    ExecutionMode,
    SubagentHookContext,
    SubagentResult,
    TaskState,
)
from orchestra.bridge import (
    DISPATCH_AS_TOOL,
    TOOL_AS_TASK,
    Ask,
    GiveOutput,
    Mock,
    Refuse,
    ToolCall,
    ToolChains,
    judge,
)

if TYPE_CHECKING:
    from orchestra.skills import HookOutcome

__all__ = ["AGENT_TOOLS", "Policy", "Verdict", "hear"]

AGENT_TOOLS: Final = frozenset({"Agent", "Task"})
"""The tools that start a subagent (``Task`` is their name before Claude Code 2.1)."""


@final
@attrs.frozen
class Verdict:
    """What ``pre`` decided about one tool call.

    Attributes:
        refusal: the reason the call is refused (None: it may run).
        ask: the reason a person should be asked (Claude Code's ``ask``).
        tool_input: the input the tool gets instead (None: unchanged).
        messages: context for the model (``additionalContext``).
        system_message: a message for the user.
        allowed: a hook allowed the call outright (``permissionDecision: "allow"``).
    """

    refusal: str | None = None
    ask: str | None = None
    tool_input: Mapping[str, Any] | None = None
    messages: tuple[str, ...] = ()
    system_message: str | None = None
    allowed: bool = False


@final
class Policy(ToolChains):
    """The registry and the Python hooks of a ``with_hooks`` session."""

    __slots__ = ()

    task_answers = TOOL_AS_TASK  # the CLI ran the tool: nothing here can run it again
    agent_answers = DISPATCH_AS_TOOL
    engine = "the Claude Agent SDK bridge (the Claude Code CLI runs the tools)"

    def has(self, event: str) -> bool:
        """Whether anything listens to ``event`` (else the SDK is not asked to call us)."""
        if self.registry is not None and self.registry.has_hooks(event):
            return True
        if event == "PreToolUse":
            return (
                bool(self.budgets)
                or self.tasks.has("before_execute")
                or self.agents.has("before_dispatch")
            )
        if event in ("PostToolUse", "PostToolUseFailure"):
            ends = self.tasks.has("on_end") or self.tasks.has("after_execute")
            return ends or self.agents.has("after_dispatch") or self._failures(event)
        return False

    def _failures(self, event: str) -> bool:
        return event == "PostToolUseFailure" and (
            self.tasks.has("on_failure") or self.agents.has("on_failure")
        )

    # -- tool calls ------------------------------------------------------------------------

    async def pre(self, payload: Mapping[str, Any]) -> Verdict:
        """``PreToolUse`` (``ToolHooks.pre``) and the ``before_*`` moments of one call."""
        with _Heard() as heard, self.budgets.charging():

            async def before(call: ToolCall) -> str | GiveOutput | Mapping[str, Any] | None:
                return await self._before(payload, call.tool_input)

            answer = await judge(self.tools, _call(payload), before, can_pause=True)
            if isinstance(answer, Refuse):
                return heard.verdict(refusal=answer.reason)
            if isinstance(answer, Ask):  # Claude Code asks
                return heard.verdict(ask=answer.reason)
            if isinstance(answer, Mock):  # Claude Code has no tool answer here
                return heard.verdict(refusal=f"answered by a PreToolUse hook: {answer.output}")
            if isinstance(answer, GiveOutput):  # a before_execute hook's: the same
                return heard.verdict(refusal=f"answered by a before_execute hook: {answer.value}")
            return heard.verdict(tool_input=answer.tool_input if answer.modified else None)

    async def _before(
        self, payload: Mapping[str, Any], tool_input: Mapping[str, Any]
    ) -> str | GiveOutput | Mapping[str, Any] | None:
        """The ``before_*`` moment: a refusal, a new input, or None (go on)."""
        name = str(payload.get("tool_name", ""))
        if name in AGENT_TOOLS and self.agents.has("before_dispatch"):
            ctx = _dispatch_context(payload, tool_input)
            return await self.before_agent(ctx, tool_input, agent="subagent_type", text="prompt")
        if not self.tasks.has("before_execute"):
            return None
        tctx = self._task_context(payload, tool_input)
        answer, ended = await self.before_task(tctx, tool_input)
        if ended is not None:
            await self.end_task(tctx, ended)
        return answer

    async def post(self, payload: Mapping[str, Any]) -> tuple[HookOutcome | None, Any]:
        """``PostToolUse`` and the ``after_*`` moments: (the outcome, a new output or None)."""
        given = payload.get("tool_response")
        with _Heard() as heard:
            seen = await self.tools.post(_call(payload), given)
        outcome = heard.last("PostToolUse")
        output = None if seen is given else seen
        name = str(payload.get("tool_name", ""))
        tool_input = payload.get("tool_input") or {}
        response = payload.get("tool_response") if output is None else output
        if name in AGENT_TOOLS and self.agents.has("after_dispatch"):
            ctx = _dispatch_context(payload, tool_input)
            agent = str(tool_input.get("subagent_type") or name)
            result = SubagentResult(agent=agent, output=response, attempts=1)
            return outcome, await self.after(self.agents, name, ctx, result, output)
        if self.tasks.has("after_execute") or self._ends(name):
            tctx = self._task_context(payload, tool_input)
            output = await self.after(self.tasks, name, tctx, response, output)
            if self._ends(name):
                await self.end_task(tctx, TaskState.SUCCEEDED)
        return outcome, output

    async def failed(self, payload: Mapping[str, Any]) -> HookOutcome | None:
        """``PostToolUseFailure``, ``on_failure`` (observed only) and ``on_end``."""
        name = str(payload.get("tool_name", ""))
        tool_input = payload.get("tool_input") or {}
        error = RuntimeError(str(payload.get("error") or "the tool failed"))
        detail = {"error": str(error), "error_type": "ToolError"}  # the CLI reports a message
        with _Heard() as heard:
            await self.tools.failed(_call(payload), error, detail=detail)
        outcome = heard.last("PostToolUseFailure")
        if name in AGENT_TOOLS and self.agents.has("on_failure"):
            ctx = _dispatch_context(payload, tool_input)
            await self.call(self.agents, "on_failure", name, ctx, error)
        elif self.tasks.has("on_failure") or self._ends(name):
            tctx = self._task_context(payload, tool_input)
            if self.tasks.has("on_failure"):
                await self.call(self.tasks, "on_failure", name, tctx, error)
            if self._ends(name):
                await self.end_task(tctx, TaskState.FAILED)
        return outcome

    def _ends(self, name: str) -> bool:
        """Whether a call of tool ``name`` has ``on_end`` hooks (a subagent's has none)."""
        return name not in AGENT_TOOLS and self.tasks.has("on_end")

    def _task_context(
        self, payload: Mapping[str, Any], tool_input: Mapping[str, Any]
    ) -> orchestra.TaskHookContext:
        name = str(payload.get("tool_name", ""))
        fields = {k: payload[k] for k in ("tool_name", "tool_use_id", "agent_type") if k in payload}
        executor = payload.get("agent_type")
        return self.task_context(
            name,
            tool_input,
            fields=fields,
            executor=None if executor is None else str(executor),
            run_id=str(payload.get("session_id") or self.run_id),
        )


def _call(payload: Mapping[str, Any]) -> ToolCall:
    """The CLI's payload as ``orchestra.bridge`` describes a call (the rest as fields)."""
    own = ("tool_name", "tool_input", "tool_use_id", "tool_response", "error")
    extra = {k: v for k, v in payload.items() if k not in own}
    name = str(payload.get("tool_name", ""))
    return ToolCall(
        name,
        payload.get("tool_input") or {},
        tool_use_id=str(payload.get("tool_use_id") or uuid.uuid4().hex),
        fields=extra,
        identifier=_server_of(name),
    )


def _server_of(tool_name: str) -> str | None:
    """The MCP server of a tool named ``mcp__<server>__<tool>``, as the CLI names them."""
    server, sep, api_name = tool_name.removeprefix("mcp__").partition("__")
    if not tool_name.startswith("mcp__") or not (sep and server and api_name):
        return None
    return server


_heard: ContextVar[list[tuple[str, HookOutcome]] | None] = ContextVar(
    "orchestra_claude_agent_sdk_heard", default=None
)


@final
class _Heard:
    """The outcomes ``ToolHooks`` fired for one callback (its ``on_outcome``).

    The protocol answers what to do; Claude Code's output also carries what the hooks
    said beside it (``additionalContext``, ``systemMessage``, an explicit ``allow``).
    """

    __slots__ = ("outcomes", "token")

    def __enter__(self) -> _Heard:
        self.outcomes: list[tuple[str, HookOutcome]] = []
        self.token = _heard.set(self.outcomes)
        return self

    def __exit__(self, *exc: object) -> None:
        _heard.reset(self.token)

    @staticmethod
    def hear(event: str, outcome: HookOutcome) -> None:
        """``ToolHooks``' ``on_outcome``: keep it for the callback being answered."""
        outcomes = _heard.get()
        if outcomes is not None:
            outcomes.append((event, outcome))

    def last(self, event: str) -> HookOutcome | None:
        """The last outcome of ``event``."""
        found = [o for e, o in self.outcomes if e == event]
        return found[-1] if found else None

    def verdict(self, **answer: Any) -> Verdict:
        """The verdict, with the ``PreToolUse`` hooks' messages and their ``allow``."""
        pre = [o for e, o in self.outcomes if e == "PreToolUse"]
        messages = tuple(m for o in pre for m in o.messages)
        system = next((o.system_message for o in reversed(pre) if o.system_message), None)
        allowed = bool(pre) and pre[-1].decision == "allow"
        return Verdict(messages=messages, system_message=system, allowed=allowed, **answer)


def _dispatch_context(
    payload: Mapping[str, Any], tool_input: Mapping[str, Any]
) -> SubagentHookContext:
    """A call of the ``Agent`` tool as a subagent dispatch."""
    return SubagentHookContext(
        parent_agent=payload.get("agent_type"),
        subagent_name=str(tool_input.get("subagent_type") or "general-purpose"),
        execution_mode=ExecutionMode.SYNC,
        task=str(tool_input.get("prompt") or ""),
        attempt=1,
    )


hear: Final = _Heard.hear
"""The ``on_outcome`` of a session's ``ToolHooks``: what ``_Heard`` collects."""
