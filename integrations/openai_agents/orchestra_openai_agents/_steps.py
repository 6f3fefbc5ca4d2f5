"""The step events of a bridged run: ``StepStart``/``StepEnd`` (internal).

A step is one model turn: what the SDK frames with ``RunHooks.on_llm_start`` and
``on_llm_end`` (the SDK's own model retries, which ``on_failure`` hooks may ask for, are
attempts of the same step). A model call that fails ends its step with ``error`` when the
run fails (``on_run_failure``: through the entry points, not under a plain
``Runner.run(hooks=...)``, where the bridge never hears of the failure). Both events are
observe-only: their outcome is not read; a hook that fails or times out is recorded as
its ``on_error`` says, and the run goes on; a critical hook's ``CriticalHookError``
(``on_error: raise``) is a hook error of the run (``SubagentResult.hook_errors``), never
the end of the run.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any, Final, final

from orchestra.skills import CriticalHookError
from orchestra_openai_agents._spans import current, model_name

if TYPE_CHECKING:
    from orchestra.skills import HookRegistry
    from orchestra_openai_agents._state import RunState

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
        """Whether anything listens (else a model turn costs one check)."""

    async def begin(self, state: RunState, agent: Any, input_items: Any) -> None:
        """``StepStart`` of the model turn the SDK starts now."""
        state.steps += 1
        fields = {
            "agent_name": str(agent.name),
            "step": state.steps,
            "model": model_name(agent),
            "message_count": len(input_items) if isinstance(input_items, list) else None,
        }
        state.step = (fields, time.perf_counter())
        if self.start:
            assert self.registry is not None
            await _fire(self.registry, "StepStart", fields, state)

    async def finish(self, state: RunState, response: Any, error: BaseException | None) -> None:
        """``StepEnd`` of the open model turn: its response, or the error that ended it."""
        opened, state.step = state.step, None
        if opened is None or not self.end:
            return
        assert self.registry is not None
        fields, started = opened
        usage = getattr(response, "usage", None)
        calls = [
            str(item.name)
            for item in getattr(response, "output", None) or ()
            if getattr(item, "type", None) == "function_call"
        ]
        payload = {
            **fields,
            "tool_calls": calls,
            "usage": {
                "input_tokens": getattr(usage, "input_tokens", None),
                "output_tokens": getattr(usage, "output_tokens", None),
            },
            "duration_ms": (time.perf_counter() - started) * 1000.0,
            "error": None if error is None else (str(error) or type(error).__name__),
        }
        await _fire(self.registry, "StepEnd", payload, state)


async def _fire(
    registry: HookRegistry, event: str, payload: dict[str, Any], state: RunState
) -> None:
    try:
        with current(state.span):
            await registry.fire(event, payload)
    except CriticalHookError as error:  # observe-only: a hook error of the run, not its end
        for failed in (error, *error.others):  # each critical hook that failed
            logger.warning("%s", failed)
            state.hook_errors.append(failed)
