"""``OrchestraMiddleware``: orchestra's policy inside a LangChain v1 ``create_agent`` (internal).

An ``AgentMiddleware`` (``create_agent(..., middleware=[OrchestraMiddleware(...)])``):

- ``wrap_tool_call``/``awrap_tool_call``: each tool call of the agent goes through the
  tool events (``orchestra.bridge.ToolHooks``, as a hooked ``ToolNode``'s calls do: a
  deny is the error ``ToolMessage`` the model reads and the tool is not run, a
  ``modified_input`` is what the tool gets, a mock answers without it), with the
  TaskHooks around it as one task named after the tool (``Retry`` calls it again,
  ``Skip`` answers its reason as an error ``ToolMessage``, ``Fail`` raises, ``Replace``
  changes its arguments or its result).
- ``wrap_model_call``/``awrap_model_call``: each model call is a step (``StepStart``
  before it, ``StepEnd`` after it, as in every bridge), charged to the budgets open
  where the agent runs (``orchestra.Budget``): a call with no room is not made.

With no registry (or hooks) of its own, the middleware follows the ambient policy of the
guarded work the agent runs in; while a tool runs, its policy is the ambient one.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.config import get_config
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

from orchestra import TaskHooks
from orchestra.bridge import Policy, charge_model_end, charge_model_start, resolve_policy
from orchestra.bridge import policy_scope as _policy_scope
from orchestra.skills import StepEvents
from orchestra_langgraph._guard import Outcome, ToolAttempts
from orchestra_langgraph._sync import blocking
from orchestra_langgraph._tools import ToolEvents
from orchestra_langgraph._tools import _call as _tool_call
from orchestra_langgraph._tools import _message as _tool_message

if TYPE_CHECKING:
    from orchestra.skills import HookRegistry, Step

__all__ = ["OrchestraMiddleware"]

_Result = ToolMessage | Command[Any]


class OrchestraMiddleware(AgentMiddleware):
    """orchestra's hooks around every tool and model call of a ``create_agent`` agent.

    Works beside LangChain's own middleware (``HumanInTheLoopMiddleware``,
    ``ToolRetryMiddleware``...): place it where its judgement should sit in the chain (a
    retry middleware listed before it retries calls the policy let through, each retry
    judged again).

    Args:
        hooks: TaskHooks around each tool call; empty: the ambient policy's.
        registry: the YAML hooks (``orchestra.skills.load(...)``) for the tool events and
            ``StepStart``/``StepEnd``; None: the ambient policy's.

    Examples:
        >>> from langchain.agents import create_agent
        >>> from langchain_core.language_models.fake_chat_models import (
        ...     FakeMessagesListChatModel,
        ... )
        >>> from langchain_core.messages import AIMessage
        >>> model = FakeMessagesListChatModel(responses=[AIMessage("hi")])
        >>> agent = create_agent(model, tools=[], middleware=[OrchestraMiddleware()])
        >>> agent.invoke({"messages": [("user", "hello")]})["messages"][-1].content
        'hi'
    """

    def __init__(self, hooks: Iterable[object] = (), registry: HookRegistry | None = None) -> None:
        super().__init__()
        self.hooks = tuple(hooks)
        self.registry = registry

    def _policy(self) -> Policy:
        return resolve_policy(self.registry, self.hooks, kinds=(TaskHooks,))

    def wrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], _Result]
    ) -> _Result:
        """One tool call: the TaskHooks around the tool events around ``handler``."""
        policy = self._policy()
        events, attempts = _tool_parts(policy, request, handler)

        def once(args: Any) -> Outcome:
            return Outcome(events.wrap(_with_args(request, args), handler))

        with _scope(policy):
            return _answer(request, attempts.run_sync(once))

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[_Result]],
    ) -> _Result:
        """``wrap_tool_call``, awaited (``ainvoke``/``astream``)."""
        policy = self._policy()
        events, attempts = _tool_parts(policy, request, handler)

        async def once(args: Any) -> Outcome:
            return Outcome(await events.awrap(_with_args(request, args), handler))

        with _scope(policy):
            return _answer(request, await attempts.run_async(once))

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> Any:
        """One model call as a step: ``StepStart``, the budgets, the call, ``StepEnd``."""
        steps, fields = StepEvents(self._policy().registry, charge=False), _fields(request)
        turn = blocking(lambda: steps.begin(_dropped, **fields))
        charge_model_start(fields["model"])
        try:
            response = handler(request)
        except Exception as error:
            blocking(functools.partial(steps.finish, turn, _dropped, error=error))
            raise
        blocking(lambda: steps.finish(turn, _dropped, **_usage(response)))
        charge_model_end(fields["model"], _tokens(response))
        return response

    async def awrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], Awaitable[ModelResponse]],
    ) -> Any:
        """``wrap_model_call``, awaited."""
        steps, fields = StepEvents(self._policy().registry, charge=False), _fields(request)
        turn: Step = await steps.begin(_dropped, **fields)
        charge_model_start(fields["model"])
        try:
            response = await handler(request)
        except Exception as error:
            await steps.finish(turn, _dropped, error=error)
            raise
        await steps.finish(turn, _dropped, **_usage(response))
        charge_model_end(fields["model"], _tokens(response))
        return response


@contextlib.contextmanager
def _scope(policy: Policy) -> Iterator[None]:
    """The middleware's policy as the ambient one while the call runs."""
    with _policy_scope(policy.registry, policy.hooks):
        yield


def _tool_parts(
    policy: Policy, request: ToolCallRequest, handler: Any
) -> tuple[ToolEvents, ToolAttempts]:
    events = ToolEvents(policy.registry)
    call = _tool_call(request.tool_call)
    tool = request.tool
    meta = dict(getattr(tool, "metadata", None) or {})
    tags = getattr(tool, "tags", None)
    if tags:
        meta.setdefault("tags", tuple(tags))
    return events, ToolAttempts(policy, call, handler, meta)


def _with_args(request: ToolCallRequest, args: Any) -> ToolCallRequest:
    """The request with the arguments this attempt runs with (a ``Replace`` applied)."""
    if args == request.tool_call.get("args"):
        return request
    return request.override(tool_call={**request.tool_call, "args": dict(args)})


def _answer(request: ToolCallRequest, outcome: Outcome) -> _Result:
    """What the model reads: the call's result, or a skip's reason as an error message."""
    if not outcome.refused and isinstance(outcome.value, ToolMessage | Command):
        return outcome.value
    return _tool_message(request.tool_call, outcome.value, error=outcome.refused)


def _dropped(error: object) -> None:
    """A critical step hook's error: already logged by ``StepEvents``; the run goes on."""


def _fields(request: ModelRequest) -> dict[str, Any]:
    """``StepStart``'s fields for one model call."""
    config = get_config()
    metadata = config.get("metadata") or {}
    return {
        "agent_name": str(metadata.get("lc_agent_name") or "agent"),
        "step": _step(request.messages),
        "model": _model_name(request.model),
        "message_count": len(request.messages),
        "node": metadata.get("langgraph_node"),
    }


def _step(messages: Sequence[BaseMessage]) -> int:
    """The call's 1-based rank in this turn: the model answers since the last user message."""
    count = 0
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            break
        count += isinstance(message, AIMessage)
    return count + 1


def _model_name(model: Any) -> str | None:
    for attribute in ("model_name", "model"):
        name = getattr(model, attribute, None)
        if isinstance(name, str):
            return name
    return None


def _message(response: Any) -> AIMessage | None:
    results = response.result if isinstance(response, ModelResponse) else [response]
    return next((m for m in reversed(results) if isinstance(m, AIMessage)), None)


def _tokens(response: Any) -> dict[str, Any]:
    message = _message(response)
    return dict(getattr(message, "usage_metadata", None) or {})


def _usage(response: Any) -> dict[str, Any]:
    message, tokens = _message(response), _tokens(response)
    return {
        "tool_calls": [call["name"] for call in (message.tool_calls if message else ())],
        "input_tokens": tokens.get("input_tokens"),
        "output_tokens": tokens.get("output_tokens"),
        "content": message.text if message is not None else None,
    }
