"""The step events of a pydantic-ai agent run: ``StepStart``/``StepEnd`` (internal).

A step is one model request of the run: what pydantic-ai wraps in
``wrap_model_request`` (``before_model_request``, the attempts at the model with their
``on_model_request_error`` recovery, ``after_model_request``). A model call that hooks
``Retry`` (pydantic-ai's ``RetryModelRequest``) is another attempt of the same step.
Both events are observe-only: their outcome is not read, a hook that fails or times out
is recorded as its ``on_error`` says, and the run goes on; a critical hook's
``CriticalHookError`` (``on_error: raise``) is a hook error of the run
(``capability.hook_errors``), never the end of the run.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any, Final, final

from pydantic_ai.messages import ModelResponse, ToolCallPart

from orchestra.skills import CriticalHookError

if TYPE_CHECKING:
    from pydantic_ai.capabilities.abstract import WrapModelRequestHandler
    from pydantic_ai.models import ModelRequestContext

    from orchestra.skills import HookRegistry
    from orchestra_pydantic_ai._state import RunState

__all__ = ["Steps"]

logger: Final = logging.getLogger("orchestra")


@final
class Steps:
    """Whether a registry listens to the step events, and the firing of them."""

    __slots__ = ("end", "registry", "start", "watching")

    def __init__(self, registry: HookRegistry | None) -> None:
        self.registry = registry
        self.start = registry is not None and registry.has_hooks("StepStart")
        self.end = registry is not None and registry.has_hooks("StepEnd")
        self.watching = self.start or self.end
        """Whether anything listens (else a model request costs one check)."""

    async def around(
        self, state: RunState, request: ModelRequestContext, handler: WrapModelRequestHandler
    ) -> ModelResponse:
        """One model request between ``StepStart`` and ``StepEnd``."""
        registry = self.registry
        assert registry is not None
        state.steps += 1
        model = getattr(request.model, "model_name", None)
        fields: dict[str, Any] = {
            "agent_name": state.agent or "agent",
            "step": state.steps,
            "model": model if isinstance(model, str) else None,
            "message_count": len(request.messages),
        }
        if self.start:
            await _fire(registry, "StepStart", fields, state)
        started = time.perf_counter()
        try:
            response = await handler(request)
        except Exception as exc:
            if self.end:
                ended = _ended(fields, started, [], None, None)
                error = str(exc) or type(exc).__name__
                await _fire(registry, "StepEnd", {**ended, "error": error}, state)
            raise
        if self.end:
            calls = [p.tool_name for p in response.parts if isinstance(p, ToolCallPart)]
            usage = response.usage
            ended = _ended(fields, started, calls, usage.input_tokens, usage.output_tokens)
            await _fire(registry, "StepEnd", {**ended, "error": None}, state)
        return response


async def _fire(
    registry: HookRegistry, event: str, payload: dict[str, Any], state: RunState
) -> None:
    try:
        await registry.fire(event, payload)
    except CriticalHookError as error:  # observe-only: a hook error of the run, not its end
        for failed in (error, *error.others):  # each critical hook that failed
            logger.warning("%s", failed)
            state.hook_errors.append(failed)


def _ended(
    fields: dict[str, Any],
    started: float,
    calls: list[str],
    input_tokens: int | None,
    output_tokens: int | None,
) -> dict[str, Any]:
    return {
        **fields,
        "tool_calls": calls,
        "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
        "duration_ms": (time.perf_counter() - started) * 1000.0,
    }
