"""The tool guard's policy: ``PreToolUse`` verdicts, denials, hosted tools (internal).

``ToolGuard`` holds what every guarded tool of a bridge follows (the registry, the
tool-call ``TaskHooks``, the ``ask`` callback, ``on_deny``, ``hosted_tools``) and fires
``PreToolUse``, settling an ``ask``. The guarded invoker (``_invoker``) and the agent-graph
cloning (``_graph``) use it.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias, final

import attrs
from agents import (
    Agent,
    CodeInterpreterTool,
    FileSearchTool,
    HostedMCPTool,
    ImageGenerationTool,
    ShellTool,
    ToolSearchTool,
    WebSearchTool,
)
from opentelemetry import trace

from orchestra import HookChain, ToolDenied
from orchestra.dag import DEFAULT_MAX_ATTEMPTS
from orchestra_openai_agents._state import state_for

if TYPE_CHECKING:
    from agents.run_context import RunContextWrapper

    from orchestra.skills import HookOutcome, HookRegistry

__all__ = [
    "ApprovalPolicy",
    "AskCallback",
    "DispatchGate",
    "HostedTools",
    "OnDeny",
    "ToolGuard",
    "Verdict",
    "tool_payload_input",
]

logger: Final = logging.getLogger("orchestra")

AskCallback: TypeAlias = Callable[
    [str, Mapping[str, Any], "str | None"], "bool | Awaitable[bool | None] | None"
]
"""Answers a hook's ``ask``: ``(tool_name, tool_input, reason)`` -> approve (True),
refuse (False) or pause the run for a person to decide (None, an SDK interruption)."""

DispatchGate: TypeAlias = Callable[[Any, str, str], Awaitable["str | None"]]
"""``(context, source agent, target agent)`` -> why the target may not start, or None."""

OnDeny: TypeAlias = Literal["reject", "raise"]
"""What a denied call does: ``"reject"`` tells the model (the run goes on), ``"raise"``
raises ``ToolDenied`` out of the run."""

HostedTools: TypeAlias = Literal["refuse", "allow"]
"""What ``guard_agent`` does with a hosted tool (run on OpenAI's servers, where no hook
can stop a call) that ``PreToolUse`` hooks match: ``"refuse"`` raises ``ValueError``,
``"allow"`` lets it run unguarded."""


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

    __slots__ = (
        "ask",
        "dispatch_gate",
        "hosted_tools",
        "max_attempts",
        "on_deny",
        "registry",
        "tasks",
        "watching",
    )

    def __init__(
        self,
        registry: HookRegistry | None,
        tasks: HookChain,
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
        self.dispatch_gate: DispatchGate | None = None
        """Set by the bridge: asks the handoff target's ``before_dispatch``/``SubagentStart``."""

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

    @property
    def guards_handoffs(self) -> bool:
        """Whether a handoff must go through the guard (``PreToolUse`` or the target's hooks)."""
        return self.pre() or self.dispatch_gate is not None

    async def handoff_verdict(
        self, context: Any, tool: str, source: str, target: str, input_json: str
    ) -> tuple[str | None, str]:
        """A handoff's ``transfer_to_*`` call: (why it is refused, or None; its input).

        ``PreToolUse`` first (``tool_name`` the handoff's tool, ``handoff_to`` the target;
        a ``modified_input`` is the input the handoff gets), then the target's dispatch
        hooks through the bridge (``dispatch_gate``).
        """
        if self.pre():
            payload: dict[str, Any] = {
                "tool_name": tool,
                "tool_input": tool_payload_input(input_json),
                "agent_name": source,
                "handoff_to": target,
            }
            call_id = getattr(context, "tool_call_id", None)
            if call_id:
                payload["tool_use_id"] = str(call_id)
            verdict = await self.pre_tool_use(payload, approved=False, interruptible=False)
            if verdict.refusal is not None:
                retry = await self.permission_denied(payload, verdict.refusal)
                return self.deny(tool, verdict.refusal, retry=retry), input_json
            if verdict.modified is not None:
                input_json = json.dumps(verdict.modified)
        if self.dispatch_gate is not None:
            refusal = await self.dispatch_gate(context, source, target)
            if refusal is not None:
                return self.deny(tool, refusal), input_json
        return None, input_json

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


@final
class ApprovalPolicy:
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
