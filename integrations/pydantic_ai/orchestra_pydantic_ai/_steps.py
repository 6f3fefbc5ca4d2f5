"""The step events of a pydantic-ai agent run: ``StepStart``/``StepEnd`` (internal).

A step is one model request of the run: what pydantic-ai wraps in
``wrap_model_request`` (``before_model_request``, the attempts at the model with their
``on_model_request_error`` recovery, ``after_model_request``). A model call that hooks
``Retry`` (pydantic-ai's ``RetryModelRequest``) is another attempt of the same step.
``orchestra.skills.StepEvents`` builds and fires the events: observe-only, a critical
hook's error a hook error of the run (``capability.hook_errors``), never its end.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic_ai.messages import (
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)

if TYPE_CHECKING:
    from pydantic_ai.capabilities.abstract import WrapModelRequestHandler
    from pydantic_ai.models import ModelRequestContext

    from orchestra.skills import StepEvents
    from orchestra_pydantic_ai._state import RunState

__all__ = ["around"]


async def around(
    steps: StepEvents,
    state: RunState,
    request: ModelRequestContext,
    handler: WrapModelRequestHandler,
) -> ModelResponse:
    """One model request between ``StepStart`` and ``StepEnd``."""
    record = state.hook_errors.append
    state.steps += 1
    turn = await steps.begin(
        record,
        agent_name=state.agent or "agent",
        step=state.steps,
        model=getattr(request.model, "model_name", None),
        message_count=len(request.messages),
    )
    try:
        response = await handler(request)
    except Exception as exc:
        await steps.finish(turn, record, error=exc)
        raise
    usage = response.usage
    if not steps.end:  # no StepEnd hook reads the turn: its usage alone, for the budgets
        await steps.finish(
            turn, record, input_tokens=usage.input_tokens, output_tokens=usage.output_tokens
        )
        return response
    texts = [p.content for p in response.parts if isinstance(p, TextPart)]
    await steps.finish(
        turn,
        record,
        tool_calls=[p.tool_name for p in response.parts if isinstance(p, ToolCallPart)],
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        content="".join(texts) if texts else None,
        tool_results=_tool_results(request),
    )
    return response


def _tool_results(request: ModelRequestContext) -> list[dict[str, object]]:
    """The tool returns the model reads this turn: those of its last request's parts."""
    last = request.messages[-1] if request.messages else None
    if not isinstance(last, ModelRequest):
        return []
    return [
        {"tool_name": p.tool_name, "tool_call_id": p.tool_call_id, "output": p.content}
        for p in last.parts
        if isinstance(p, ToolReturnPart)
    ]
