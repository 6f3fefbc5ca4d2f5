"""Per-run bookkeeping shared by the run hooks and the guarded tools (internal).

The SDK hands every callback of one ``Runner.run`` a context object whose ``usage`` is
the run's own ``Usage`` (forks share it), so the bridge keys its state by that object:
one hooks object can serve concurrent runs, and nested runs (agents as tools) keep their
own state.
"""

from __future__ import annotations

import time
import weakref
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Final

import attrs

if TYPE_CHECKING:
    from opentelemetry.trace import Span

    from orchestra import HookError, SubagentHookContext

__all__ = ["Claim", "RunState", "claim_var", "state_for"]


@attrs.define(eq=False)
class RunState:
    """What the bridge knows about one SDK run."""

    attempt: int = 1
    errors: tuple[BaseException, ...] = ()
    agent: str | None = None  # the agent running now
    ctx: SubagentHookContext | None = None  # its hook context
    span: Span | None = None  # its invoke_agent span
    handoffs: list[str] = attrs.Factory(list)  # agents that handed off, in order
    handoff_from: str | None = None  # set by on_handoff, read by the next agent start
    handoff_to: str | None = None
    started_at: float = attrs.Factory(time.monotonic)
    hook_errors: list[HookError] = attrs.Factory(list)  # Python hook errors, in order


@attrs.define(eq=False)
class Claim:
    """Set by ``OrchestraRunHooks.run`` so the run it starts finds its attempt number."""

    attempt: int
    errors: tuple[BaseException, ...]
    state: RunState | None = None


claim_var: Final[ContextVar[Claim | None]] = ContextVar(
    "orchestra_openai_agents_claim", default=None
)

_STATES: Final[dict[int, RunState]] = {}


def state_for(context: Any, *, create: bool = True) -> RunState | None:
    """The state of the run ``context`` belongs to (created on first use)."""
    usage = getattr(context, "usage", None)
    if usage is None:
        return None
    key = id(usage)
    state = _STATES.get(key)
    if state is None and create:
        state = RunState()
        claim = claim_var.get()
        if claim is not None and claim.state is None:
            state.attempt, state.errors = claim.attempt, claim.errors
            claim.state = state
        _STATES[key] = state
        weakref.finalize(usage, _STATES.pop, key, None)
    return state
