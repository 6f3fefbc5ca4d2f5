"""The step events of a bridged run: ``StepStart``/``StepEnd`` (internal).

A step is one model turn: what the SDK frames with ``RunHooks.on_llm_start`` and
``on_llm_end`` (the SDK's own model retries, which ``on_failure`` hooks may ask for, are
attempts of the same step). A model call that fails ends its step with ``error`` when the
run fails (``on_run_failure``: through the entry points, not under a plain
``Runner.run(hooks=...)``, where the bridge never hears of the failure).
``orchestra.skills.StepEvents`` builds and fires the events, their hook spans under the
agent's: observe-only, a critical hook's error a hook error of the run
(``SubagentResult.hook_errors``), never its end.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from orchestra_openai_agents._spans import current, model_name

if TYPE_CHECKING:
    from orchestra.skills import StepEvents
    from orchestra_openai_agents._state import RunState

__all__ = ["begin", "finish"]


async def begin(steps: StepEvents, state: RunState, agent: Any, input_items: Any) -> None:
    """``StepStart`` of the model turn the SDK starts now."""
    state.steps += 1
    with current(state.span):
        state.step = await steps.begin(
            state.hook_errors.append,
            agent_name=str(agent.name),
            step=state.steps,
            model=model_name(agent),
            message_count=len(input_items) if isinstance(input_items, list) else None,
        )


async def finish(
    steps: StepEvents, state: RunState, response: Any, error: BaseException | None
) -> None:
    """``StepEnd`` of the open model turn: its response, or the error that ended it."""
    turn, state.step = state.step, None
    if turn is None:
        return
    usage = getattr(response, "usage", None)
    calls = [
        str(item.name)
        for item in getattr(response, "output", None) or ()
        if getattr(item, "type", None) == "function_call"
    ]
    with current(state.span):
        await steps.finish(
            turn,
            state.hook_errors.append,
            tool_calls=calls,
            input_tokens=getattr(usage, "input_tokens", None),
            output_tokens=getattr(usage, "output_tokens", None),
            error=error,
        )
