"""Per-run bookkeeping shared by the run hooks and the guarded tools (internal).

The SDK hands every callback of one ``Runner.run`` a context object whose ``usage`` is
the run's own ``Usage`` (tool contexts and agents used as tools share it), so the bridge
keys its state by that object: one hooks object can serve concurrent runs. A run started
through the bridge's entry points (``run``, ``run_sync``, ``run_streamed``) leaves a
``Claim`` in a context variable; the first callback of that run adopts it, so the state
carries the entry point's run id, attempt number and run span.

When a run's ``Usage`` is garbage collected, spans still open (a run that ended outside
the entry points, by an error the SDK gave no callback for) are ended with an error status.
"""

from __future__ import annotations

import time
import uuid
import weakref
from collections.abc import Mapping
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Final

import attrs
from opentelemetry import trace

from orchestra import ExecutionMode, SubagentHookContext

if TYPE_CHECKING:
    from opentelemetry.trace import Span

    from orchestra import HookError
    from orchestra.skills import Step

__all__ = [
    "Claim",
    "RunState",
    "claim_var",
    "end_span",
    "input_text",
    "state_for",
    "tool_parent_var",
]


def end_span(span: Span | None, error: BaseException | str | None = None) -> None:
    """End ``span`` (if any), with an ERROR status when ``error`` is given."""
    if span is None:
        return
    if isinstance(error, BaseException):
        span.record_exception(error, escaped=True)
        span.set_attribute("error.type", type(error).__qualname__)
        span.set_status(trace.Status(trace.StatusCode.ERROR, type(error).__name__))
    elif error is not None:
        span.set_attribute("error.type", error)
        span.set_status(trace.Status(trace.StatusCode.ERROR, error))
    span.end()


@attrs.define(eq=False)
class RunState:
    """What the bridge knows about one SDK run (one ``Usage``)."""

    run_id: str = ""  # the claim's, else a new one (see state_for)
    attempt: int = 1
    errors: tuple[BaseException, ...] = ()
    run_span: Span | None = None  # the run's root span
    owns_run_span: bool = False  # opened by a callback (not an entry point): end it here
    agent: Any = None  # the agent object running now
    ctx: SubagentHookContext | None = None  # its dispatch context
    span: Span | None = None  # its invoke_agent span
    resumed: str | None = None  # an entry point opened this agent's dispatch on resume
    llm_span: Span | None = None  # the model call in flight
    handoffs: list[str] = attrs.Factory(list)  # agents that handed off, in order
    handoff_from: str | None = None  # set by on_handoff, read by the next agent start
    handoff_to: str | None = None
    denied_handoff: bool = False  # the guard refused a handoff: the same agent goes on
    cleared: str | None = None  # a handoff target whose dispatch hooks already said yes
    started_at: float = attrs.Factory(time.monotonic)
    hook_errors: list[HookError] = attrs.Factory(list)  # Python hook errors, in order
    tool_calls: int = 0  # tool calls that ran to an answer (side effects)
    verdicts: dict[str, Any] = attrs.Factory(dict)  # PreToolUse verdicts taken before a call
    answered: dict[int, Any] = attrs.Factory(dict)  # id(error) -> on_failure answer
    last_agent: Any = None  # the last agent that started
    steps: int = 0  # model turns so far (StepStart's step)
    step: Step | None = None  # the open turn

    def open_spans(self) -> list[Span]:
        """The spans still open, innermost first."""
        spans = [self.llm_span, self.span]
        if self.owns_run_span:
            spans.append(self.run_span)
        return [span for span in spans if span is not None]

    def dispatch_context(
        self, parent: str | None, name: str, context: Any, delegated_from: tuple[str, ...]
    ) -> SubagentHookContext:
        """The hook context of the dispatch of ``name`` (by ``parent``) in this run's attempt.

        ``context`` is the SDK's run context (its ``turn_input`` is the dispatch's task).
        """
        return SubagentHookContext(
            parent_agent=parent,
            subagent_name=name,
            execution_mode=ExecutionMode.SYNC,
            task=input_text(getattr(context, "turn_input", None)),
            attempt=self.attempt,
            delegated_from=delegated_from,
            errors=self.errors,
            started_at=self.started_at,
        )


@attrs.define(eq=False)
class Claim:
    """Left by an entry point so the run it starts finds its run id, attempt and span."""

    run_id: str
    attempt: int
    errors: tuple[BaseException, ...]
    run_span: Span | None
    state: RunState | None = None


claim_var: Final[ContextVar[Claim | None]] = ContextVar(
    "orchestra_openai_agents_claim", default=None
)

tool_parent_var: Final[ContextVar[Span | None]] = ContextVar(
    "orchestra_openai_agents_tool_parent", default=None
)
"""The span of the guarded tool call running now: an agent used as a tool runs under it."""

_STATES: Final[dict[int, RunState]] = {}


def _forget(key: int) -> None:
    state = _STATES.pop(key, None)
    if state is None:
        return
    for span in state.open_spans():
        end_span(span, "run ended without a callback")


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
            state.run_id, state.attempt, state.errors = claim.run_id, claim.attempt, claim.errors
            state.run_span = claim.run_span
            claim.state = state
        else:
            state.run_id = uuid.uuid4().hex
        _STATES[key] = state
        weakref.finalize(usage, _forget, key)
    return state


def input_text(items: Any) -> str:
    """The text of the last user message of a run or turn input."""
    if isinstance(items, str):
        return items
    for item in reversed(items or ()):
        if not isinstance(item, Mapping) or item.get("role") != "user":
            continue
        content = item.get("content")
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            parts = [p.get("text") for p in content if isinstance(p, Mapping)]
            return "\n".join(p for p in parts if isinstance(p, str))
    return ""
