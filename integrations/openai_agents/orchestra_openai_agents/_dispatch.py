"""Whether an agent may start: its ``before_dispatch`` and ``SubagentStart`` (internal).

``refusal`` asks them for an agent that starts; ``handoff_gate`` asks them for a handoff's
target before the SDK hands off (the guard's ``dispatch_gate``), so a refusal is the
``transfer_to_*`` call's output the model reads and the run goes on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from orchestra import Fail, SubagentHookContext
from orchestra.skills import RegistrySubagentHooks
from orchestra.tracing import get_tracer
from orchestra_openai_agents._spans import current
from orchestra_openai_agents._state import RunState, state_for

if TYPE_CHECKING:
    from orchestra_openai_agents._hooks import OrchestraRunHooks

__all__ = ["handoff_gate", "refusal"]


async def handoff_gate(
    bridge: OrchestraRunHooks, context: Any, source: str, target: str
) -> str | None:
    """Ask ``target``'s ``before_dispatch`` and ``SubagentStart`` before a handoff to it.

    A refusal is what ``source``'s model reads (the run goes on with ``source``); a
    yes is kept, so the target's start does not ask again.
    """
    state = state_for(context)
    if state is None:
        return None
    ctx = state.dispatch_context(source, target, context, (*state.handoffs, source))
    reason = await refusal(bridge, state, ctx)
    state.cleared = target if reason is None else None
    return reason


async def refusal(
    bridge: OrchestraRunHooks, state: RunState, ctx: SubagentHookContext
) -> str | None:
    """Why ``before_dispatch`` or ``SubagentStart`` refuse the agent, or None."""
    with current(state.span):
        if bridge._agents.has("before_dispatch"):
            record = state.hook_errors.append
            decision, by = await bridge._agents.call(
                "before_dispatch",
                ctx,
                subject=ctx.subagent_name,
                on_error=record,
                tracer=get_tracer(),
            )
            if isinstance(decision, Fail):
                return decision.reason or f"failed by {by}"
        registry = bridge.registry
        if registry is not None and registry.has_hooks("SubagentStart"):
            outcome = await registry.fire("SubagentStart", RegistrySubagentHooks.payload(ctx))
            if outcome.blocked:
                where = outcome.decided_by
                return outcome.reason or f"blocked by a SubagentStart hook at {where}"
    return None
