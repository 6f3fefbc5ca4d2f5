"""What the bridge does when a run or a model call fails (internal).

``failure_context`` finds the dispatch a failure belongs to; ``on_run_failure`` calls
``on_failure`` for a failed run (unless it already answered for that model error), fires
``SubagentStop`` (``"failed"``) and ends the open spans; ``model_retry`` is the SDK's model
retry policy under the entry points, decided by ``on_failure``; ``refuse_retry`` and
``refuse_stop`` record a decision that could not be carried out.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Final

import attrs
from agents import Agent
from agents.retry import RetryDecision, RetryPolicyContext

from orchestra import DispatchError, ExecutionMode, HookError, SubagentHookContext
from orchestra.bridge import Again
from orchestra.tracing import get_tracer
from orchestra_openai_agents._spans import current
from orchestra_openai_agents._state import RunState, claim_var, end_span, input_text
from orchestra_openai_agents._steps import finish

if TYPE_CHECKING:
    from orchestra_openai_agents._hooks import OrchestraRunHooks

__all__ = ["failure_context", "model_retry", "on_run_failure", "refuse_retry", "refuse_stop"]

logger: Final = logging.getLogger("orchestra")


def failure_context(
    bridge: OrchestraRunHooks,
    state: RunState | None,
    agent: Agent[Any],
    input: Any,
    error: BaseException,
) -> SubagentHookContext:
    """The dispatch a failure belongs to: the open one, else the one starting."""
    attempt = state.attempt if state is not None else 1
    errors = (*(state.errors if state is not None else ()), error)
    if state is not None and state.ctx is not None:
        ctx = state.ctx
    elif state is not None and state.handoff_from is not None:  # failed in a handoff
        ctx = SubagentHookContext(
            parent_agent=state.handoff_from,
            subagent_name=state.handoff_to or agent.name,
            execution_mode=ExecutionMode.SYNC,
            task=input_text(input),
            attempt=attempt,
            delegated_from=(*state.handoffs, state.handoff_from),
        )
    else:
        name = state.last_agent.name if state is not None and state.last_agent else agent.name
        ctx = SubagentHookContext(
            parent_agent=bridge.parent,
            subagent_name=str(name),
            execution_mode=ExecutionMode.SYNC,
            task=input_text(input),
            attempt=attempt,
        )
    return attrs.evolve(ctx, errors=errors)


async def on_run_failure(
    bridge: OrchestraRunHooks,
    state: RunState | None,
    ctx: SubagentHookContext,
    error: BaseException,
) -> tuple[Again | None, str | None]:
    """``on_failure`` for a failed run, unless it already answered for this error.

    Then ``SubagentStop`` (``"failed"``) and the open spans end with the error.
    """
    if state is not None and state.step is not None:  # the model turn the error ended
        await finish(bridge.steps, state, None, error)
    answered = state.answered.pop(id(error), None) if state is not None else None
    decision, by = None, None
    if isinstance(error, DispatchError):  # the hooks refused an agent: nothing failed
        answered = False
    elif answered is None and bridge._agents.has("on_failure"):
        record = state.hook_errors.append if state is not None else None
        with current(state.span if state is not None else None):
            decision, by = await bridge._agents.call(
                "on_failure",
                ctx,
                error,
                subject=ctx.subagent_name,
                on_error=record,
                tracer=get_tracer(),
            )
    with current(state.span if state is not None else None):
        await bridge.subagent_stop(ctx, "failed", None, error)
    if state is not None:
        state.ctx = None
        for span in (state.llm_span, state.span):
            end_span(span, error)
        state.llm_span = state.span = None
    return (decision if isinstance(decision, Again) else None), by


async def model_retry(bridge: OrchestraRunHooks, context: RetryPolicyContext) -> RetryDecision:
    """The SDK's model retry policy under the entry points: ``on_failure`` decides."""
    claim = claim_var.get()
    state = claim.state if claim is not None else None
    if state is None or state.ctx is None:
        return RetryDecision(retry=False)
    base = state.ctx
    ctx = attrs.evolve(base, attempt=context.attempt, errors=(*state.errors, context.error))
    with current(state.llm_span or state.span):
        decision, by = await bridge._agents.call(
            "on_failure",
            ctx,
            context.error,
            subject=ctx.subagent_name,
            on_error=state.hook_errors.append,
            tracer=get_tracer(),
        )
    state.answered[id(context.error)] = decision if decision is not None else False
    if state.llm_span is not None:
        state.llm_span.record_exception(context.error)
    if isinstance(decision, Again) and context.attempt < bridge.max_attempts:
        reason = f"{type(decision).__name__} by {by}"
        return RetryDecision(retry=True, delay=decision.delay, reason=reason)
    return RetryDecision(retry=False, reason=None if by is None else f"no retry from {by}")


def refuse_retry(state: RunState | None, why: str, agent: str) -> None:
    """Record that a ``Retry`` of the whole run was not carried out, and why."""
    _not_carried_out(state, f"a Retry of the run of {agent!r}", why, "on_failure", agent)


def refuse_stop(state: RunState | None, reason: str, segments: int) -> None:
    """Record that a ``Stop`` hook's block was not carried out, and why."""
    why = (
        "the run was streamed"
        if segments == 0
        else f"the run was continued {segments - 1} time(s) already (max_attempts)"
    )
    _not_carried_out(state, f"a Stop block ({reason})", why, "Stop", None)


def _not_carried_out(
    state: RunState | None, what: str, why: str, moment: str, subject: str | None
) -> None:
    error = HookError(
        f"{what} was not carried out: {why}",
        hook="OrchestraRunHooks",
        moment=moment,
        subject=subject,
    )
    logger.warning("%s", error)
    if state is not None:
        state.hook_errors.append(error)
