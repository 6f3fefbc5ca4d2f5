"""The tool guard's policy: ``PreToolUse`` verdicts, denials, hosted tools (internal).

``ToolGuard`` holds what every guarded tool of a bridge follows (the registry's tool
events as ``orchestra.bridge.ToolHooks``, the tool-call ``TaskHooks``, the ``ask``
callback, ``on_deny``, ``hosted_tools``) and turns the protocol's answers into the SDK's:
a ``Refuse`` is ``Tool call denied: {reason}`` (or ``ToolDenied`` with ``on_deny="raise"``),
an ``Ask`` no callback settles is the SDK's approval interruption. The guarded invoker
(``_invoker``) and the agent-graph cloning (``_graph``) use it.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias, final

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
from agents.tool import FunctionTool, ToolOriginType, get_function_tool_origin
from opentelemetry import trace

from orchestra import HookChain, ToolDenied
from orchestra.bridge import (
    Approval,
    Ask,
    AttemptDriver,
    Policy,
    Proceed,
    Refuse,
    ToolCall,
    ToolHooks,
)
from orchestra.dag import DEFAULT_MAX_ATTEMPTS
from orchestra_openai_agents._state import state_for

if TYPE_CHECKING:
    from agents.run_context import RunContextWrapper

    from orchestra.skills import HookRegistry

__all__ = [
    "ApprovalPolicy",
    "AskCallback",
    "DispatchGate",
    "HostedTools",
    "OnDeny",
    "ToolGuard",
    "server_name",
    "tool_call",
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


def tool_payload_input(raw: str | None) -> dict[str, Any]:
    """The ``tool_input`` of a payload: the model's JSON arguments, parsed."""
    if not raw:
        return {}
    try:
        parsed = json.loads(raw)
    except ValueError:  # the tool reports bad JSON itself
        return {"raw": raw}
    return parsed if isinstance(parsed, dict) else {"raw": raw}


def server_name(tool: FunctionTool | None) -> str | None:
    """The MCP server a tool comes from (lobehub's ``identifier``), else None."""
    origin = get_function_tool_origin(tool) if tool is not None else None
    if origin is None or origin.type is not ToolOriginType.MCP:
        return None
    return origin.mcp_server_name


def tool_call(
    name: str,
    arguments: str | dict[str, Any] | None,
    call_id: object,
    *,
    identifier: str | None = None,
    approved: bool = False,
    **fields: Any,
) -> ToolCall:
    """The ``orchestra.bridge.ToolCall`` of one SDK call (its id, else a new one).

    ``identifier`` and ``approved`` are the call's own (``ToolCall``); ``fields`` are the
    payload's extra fields (those given None are left out).
    """
    given = arguments if isinstance(arguments, dict) else tool_payload_input(arguments)
    extra = {k: v for k, v in fields.items() if v is not None}
    ids = {"tool_use_id": str(call_id)} if call_id else {}  # none given: ToolCall makes one
    return ToolCall(name, given, fields=extra, approved=approved, identifier=identifier, **ids)


@final
class ToolGuard:
    """The policy the guarded tools follow: the registry, the tool-call hooks, ``ask``."""

    __slots__ = (
        "answers",
        "ask",
        "dispatch_gate",
        "driver",
        "hooked",
        "hosted_tools",
        "max_attempts",
        "on_deny",
        "pending",
        "policy",
        "registry",
        "tasks",
        "tools",
    )

    def __init__(
        self,
        registry: HookRegistry | None,
        tasks: HookChain,
        *,
        hooks: tuple[object, ...] = (),
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
        self.policy = Policy(registry, hooks)  # the ambient policy of what a tool starts
        self.tools = ToolHooks(registry, ask=ask)  # the one tool-call protocol
        self.tasks = tasks
        self.ask = ask
        self.on_deny: OnDeny = on_deny
        self.hosted_tools: HostedTools = hosted_tools
        self.max_attempts = max_attempts
        self.driver = AttemptDriver(tasks, max_attempts=max_attempts)  # each call's attempts
        self.hooked = self.driver.hooked
        self.dispatch_gate: DispatchGate | None = None
        """Set by the bridge: asks the handoff target's ``before_dispatch``/``SubagentStart``."""
        self.pending: dict[str, dict[str, Any]] = {}
        """The pending request of each paused call, by call id (``answer_approval``)."""
        self.answers: dict[str, Approval] = {}
        """A person's checked answer to a paused call, by call id, for the resumed run."""

    @property
    def watching(self) -> bool:
        """Whether anything looks at tool calls: hooks or a budget (else one check a call)."""
        return self.hooked or self.tools.watching

    def pre(self) -> bool:
        """Whether ``PreToolUse`` hooks are registered."""
        return self.tools.has_pre

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
        call = tool_call(
            tool,
            input_json,
            getattr(context, "tool_call_id", None),
            agent_name=source,
            handoff_to=target,
        )
        if self.pre():
            answer = await self.tools.pre(call)  # a handoff cannot pause: no Ask
            if isinstance(answer, Refuse):
                return self.deny(tool, answer), input_json
            if isinstance(answer, Proceed) and answer.modified:
                input_json = json.dumps(dict(answer.tool_input))
        if self.dispatch_gate is not None:
            refusal = await self.dispatch_gate(context, source, target)
            if refusal is not None:
                return self.deny(tool, Refuse(refusal)), input_json
        return None, input_json

    def deny(self, tool: str, refusal: Refuse) -> str:
        """What a refused call returns to the model (or ``ToolDenied`` with ``raise``)."""
        logger.info("tool %r denied: %s", tool, refusal.reason)
        if self.on_deny == "raise":
            raise ToolDenied(tool, refusal.reason, retry=refusal.retry)
        return refusal.message

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

    __slots__ = ("guard", "identifier", "name", "original")

    def __init__(
        self, original: Any, guard: ToolGuard, name: str, identifier: str | None = None
    ) -> None:
        self.original = original
        self.guard = guard
        self.name = name
        self.identifier = identifier

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
        agent = state.agent.name if state is not None and state.agent is not None else None
        call = tool_call(self.name, params, call_id, identifier=self.identifier, agent_name=agent)
        parent = (state.span or state.run_span) if state is not None else None
        with trace.use_span(parent, end_on_exit=False) if parent else contextlib.nullcontext():
            # before the call's span exists: the invoker marks it with the answer
            answer = await self.guard.tools.pre(call, can_pause=True, mark=False)
        if isinstance(answer, Ask):
            self.guard.pending[call_id] = answer.request(call)
            return True  # the SDK pauses the run: result.interruptions
        if state is not None:
            state.verdicts[call_id] = answer
        return False
