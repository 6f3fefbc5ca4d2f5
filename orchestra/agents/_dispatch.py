"""One dispatch: the delegation chain, and the attempts of each agent in layers (internal).

``_Dispatch.run`` walks the delegation chain; ``run_agent`` makes the attempts of one
agent; ``attempt_once`` is one attempt: ``before`` hooks, the agent's run, then either
``after`` hooks or ``after_failure``, which decides what comes next with the rule the
scheduler shares (``orchestra._attempts.after_failure``).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Final, final

import anyio
import attrs

from orchestra._attempts import after_failure
from orchestra._decisions import Again, Decision, Delegate, Replace
from orchestra._errors import DispatchError, HookError
from orchestra._hooks import ExecutionMode, SubagentHookContext, subagent_context
from orchestra._reporting import report_also, stop_reporting
from orchestra._spending import Spending, spending
from orchestra.agents._types import AgentContext, Subagent, SubagentResult, _Session
from orchestra.tracing._engine import NO_ATTEMPT, AttemptSpan, agent_attempt, set_budget_use

if TYPE_CHECKING:
    from orchestra.agents._dispatcher import Dispatcher

__all__ = ["Delegation"]

_TEAMMATE: Final = ExecutionMode.TEAMMATE
_NO_NOTES: Final[list[str]] = []  # the messages of an attempt no hook sees (never appended)
_ORCHESTRA: Final = "orchestra"  # who took a decision no hook took, for traces


@final
@attrs.frozen(kw_only=True, eq=False)
class Delegation:
    """How one agent's part of a dispatch ends when it does not answer (internal).

    Attributes:
        decision: the ``Delegate`` to carry out.
        hook: the label of the hook that asked for it.
        cause: the error that led to it, if any.
    """

    decision: Delegate
    hook: str | None
    cause: BaseException | None


@final
class _Dispatch:
    """One dispatch: the delegation chain and the attempts of each agent (internal)."""

    __slots__ = (
        "at",
        "attempt",
        "d",
        "delegated_from",
        "errors",
        "hook_errors",
        "mode",
        "name",
        "notes",
        "parent",
        "spent",
        "started",
        "task",
        "text",
        "tracer",
    )

    def __init__(
        self, d: Dispatcher, name: str, task: str, parent: str | None, mode: ExecutionMode
    ) -> None:
        self.d = d
        self.name = name
        self.task = task
        self.text = task  # this attempt's text, as before_dispatch hooks replaced it
        self.notes: list[str] = _NO_NOTES  # what this attempt's hooks added
        self.parent = parent
        self.mode = mode
        self.attempt = 0
        self.delegated_from: tuple[str, ...] = ()
        self.errors: list[BaseException] = []
        self.hook_errors: list[HookError] | None = None
        self.started = time.monotonic() if d._hooked else 0.0
        self.tracer = d._tracer
        self.at: AttemptSpan = NO_ATTEMPT
        self.spent: tuple[Spending, ...] = ()  # the budgets' counts, while it runs

    # -- errors ---------------------------------------------------------------------------

    def record(self, error: HookError) -> None:
        if self.hook_errors is None:
            self.hook_errors = []
        self.hook_errors.append(error)
        self.at.hook_error(error, error.hook)

    def error(self, message: str, reason: str | None = None) -> DispatchError:
        return DispatchError(
            message,
            agent=self.name,
            delegated_from=self.delegated_from,
            attempts=self.attempt,
            reason=reason,
            hook_errors=tuple(self.hook_errors or ()),
        )

    def failed(self, decision: Decision, hook: str | None) -> DispatchError:
        """The error of a dispatch that a hook's ``Fail`` ended."""
        reason = getattr(decision, "reason", None)
        who = f" by {hook}" if hook is not None else ""
        return self.error(
            f"dispatch to agent {self.name!r} failed{who}: {reason or 'failed by a hook'}",
            reason,
        )

    def context(self) -> SubagentHookContext:
        return subagent_context(
            self.parent,
            self.name,
            self.mode,
            self.text,
            self.attempt,
            self.delegated_from,
            tuple(self.errors),
            self.started,
            self.notes,
        )

    def on_failure(self, error: BaseException) -> Awaitable[tuple[Decision | None, str | None]]:
        """Call the ``on_failure`` hooks about ``error`` (already in ``errors``)."""
        return self.d._chain.call(
            "on_failure",
            self.context(),
            error,
            subject=self.name,
            on_error=self.record,
            tracer=self.tracer,
        )

    # -- the chain ------------------------------------------------------------------------

    async def run(self) -> SubagentResult:
        """Run the dispatch to its end: a result, a ``DispatchError``, or a BaseException."""
        if not self.d._hooked:
            return await self.run_agents()
        # Adapters report the errors of the hooks they run (YAML hooks) to this dispatch
        # (and to the DAG run around it, if any).
        reporting = report_also(self.record)
        try:
            if not self.d._budgets:
                return await self.run_agents()
            # the agents' guarded tools and model calls are charged to the budgets
            with spending(self.d._budgets) as self.spent:
                result = await self.run_agents()
            return attrs.evolve(result, budgets=tuple(spent.use() for spent in self.spent))
        finally:
            stop_reporting(reporting)

    async def run_agents(self) -> SubagentResult:
        """The agent dispatched to, then each one it delegates to, until a result."""
        d = self.d
        agent = d._agents.get(self.name)
        if agent is None:
            raise self.error(f"no agent named {self.name!r}{d._known()}")
        while True:
            if self.mode is _TEAMMATE:
                session = d._session(self.parent, self.name)
                assert session.lock is not None
                async with session.lock:
                    if session.closed:
                        raise self.error(f"the session of teammate {self.name!r} is closed")
                    step = await self.run_agent(agent, session)
            else:
                session = _Session()
                try:
                    step = await self.run_agent(agent, session)
                finally:
                    if session.needs_closing:
                        await session.close(f"agent {self.name!r}")
            if type(step) is SubagentResult:
                return step
            assert isinstance(step, Delegation)
            agent = self.delegate(step)

    async def run_agent(self, agent: Subagent, session: _Session) -> SubagentResult | Delegation:
        """All the attempts of one agent: its result, or a delegation to another agent."""
        tracer = self.tracer
        while True:
            self.attempt += 1
            if tracer is None:
                outcome = await self.attempt_once(agent, session)
            else:
                with agent_attempt(
                    tracer,
                    self.name,
                    task=self.task,
                    mode=self.mode.value,
                    parent=self.parent,
                    attempt=self.attempt,
                    delegated_from=self.delegated_from,
                ) as self.at:
                    try:
                        outcome = await self.attempt_once(agent, session)
                    finally:
                        if self.spent:  # the figures as this attempt ends
                            set_budget_use(self.at.span, [spent.use() for spent in self.spent])
                        self.at = NO_ATTEMPT
            if isinstance(outcome, Again):
                if outcome.delay:
                    await anyio.sleep(outcome.delay)
                continue
            return outcome

    async def attempt_once(
        self, agent: Subagent, session: _Session
    ) -> SubagentResult | Delegation | Again:
        """One attempt: hooks around one run; what comes next, or DispatchError."""
        d = self.d
        text = self.text = self.task
        if d._hooked:
            self.notes = []
        if d._has_before:
            step = self.before(
                *await d._chain.call(
                    "before_dispatch",
                    self.context(),
                    subject=self.name,
                    on_error=self.record,
                    tracer=self.tracer,
                )
            )
            if step is not None:
                return step
            text = self.text
            if self.notes:  # what hooks added follows the text, one message a line
                text = "\n\n".join((text, "\n".join(self.notes)))
        ctx = AgentContext(
            self.name, self.parent, self.mode, self.attempt, self.delegated_from, d, session
        )
        try:
            output = await agent.run(text, ctx)
        except Exception as exc:
            return await self.after_failure(exc)
        except BaseException as exc:
            # Cancellation is not the agent's failure; anything else (KeyboardInterrupt,
            # SystemExit...) is shown to the hooks, never retried, and propagates.
            if d._has_on_failure and not isinstance(exc, anyio.get_cancelled_exc_class()):
                self.errors.append(exc)
                await self.on_failure(exc)
            raise
        self.at.output(output)
        result = SubagentResult(
            agent=self.name,
            output=output,
            attempts=self.attempt,
            delegated_from=self.delegated_from,
            hook_errors=tuple(self.hook_errors) if self.hook_errors else (),
            messages=tuple(self.notes),
        )
        if d._has_after:
            recorded = len(self.hook_errors or ())
            decision, by = await d._chain.call(
                "after_dispatch",
                self.context(),
                result,
                subject=self.name,
                on_error=self.record,
                tracer=self.tracer,
            )
            result = self.after(result, recorded, decision, by)
        return result

    def before(self, decision: Decision | None, by: str | None) -> Delegation | None:
        """After ``before_dispatch`` hooks: None to go on, a delegation, or DispatchError."""
        if decision is None:
            return None
        self.at.decision(decision, by)
        if type(decision) is Replace:  # the text, as the hooks replaced it
            self.text = decision.value
            return None
        cause = self.errors[-1] if self.errors else None
        if type(decision) is Delegate:
            return Delegation(decision=decision, hook=by, cause=cause)
        raise self.failed(decision, by) from cause

    async def after_failure(self, exc: Exception) -> SubagentResult | Delegation | Again:
        """What follows a failed attempt: retry, delegate, recover, or DispatchError."""
        d = self.d
        name = self.name
        self.errors.append(exc)
        self.at.error(exc)
        decision = by = None
        if d._has_on_failure:
            decision, by = await self.on_failure(exc)
        verdict = after_failure(decision, by, attempt=self.attempt, max_attempts=d._max_attempts)
        decision = verdict.decision
        if decision is None:
            raise self.error(
                f"agent {name!r} failed on attempt {self.attempt}: {type(exc).__name__}: {exc}"
            ) from exc
        if verdict.overruled is not None:
            self.at.decision(decision, _ORCHESTRA)
            reason = getattr(decision, "reason", None)
            raise self.error(
                f"agent {name!r} reached the attempt cap of {d._max_attempts} "
                f"(last error: {type(exc).__name__}: {exc})",
                reason,
            ) from exc
        self.at.decision(decision, by)
        if isinstance(decision, Again):
            return decision
        if type(decision) is Delegate:
            return Delegation(decision=decision, hook=by, cause=exc)
        if type(decision) is Replace:  # recovered: the substitute output answers
            return SubagentResult(
                agent=name,
                output=decision.value,
                attempts=self.attempt,
                delegated_from=self.delegated_from,
                hook_errors=tuple(self.hook_errors or ()),
                messages=tuple(self.notes),
                error=exc,
            )
        raise self.failed(decision, by) from exc

    def after(
        self, result: SubagentResult, recorded: int, decision: Decision | None, by: str | None
    ) -> SubagentResult:
        """After ``after_dispatch`` hooks: the result, with what they replaced and added."""
        if decision is not None:
            self.at.decision(decision, by)
            if type(decision) is not Replace:  # a fail-closed hook's error
                raise self.failed(decision, by)
            result = attrs.evolve(result, output=decision.value)
        if self.hook_errors and len(self.hook_errors) > recorded:
            result = attrs.evolve(result, hook_errors=tuple(self.hook_errors))
        if len(self.notes) > len(result.messages):
            result = attrs.evolve(result, messages=tuple(self.notes))
        return result

    def delegate(self, step: Delegation) -> Subagent:
        """Move the dispatch to the agent ``step`` names, or refuse with DispatchError."""
        d = self.d
        name = self.name
        target = step.decision.agent
        cause = step.cause
        who = f" (asked by {step.hook})" if step.hook is not None else ""
        chain = (*self.delegated_from, name)
        if target == name:
            raise self.error(f"agent {name!r} cannot delegate to itself{who}") from cause
        if target in self.delegated_from:
            raise self.error(
                f"cannot delegate from {name!r} to {target!r}{who}: {target!r} was already "
                f"tried in this chain ({' -> '.join(chain)})"
            ) from cause
        agent = d._agents.get(target)
        if agent is None:
            raise self.error(
                f"cannot delegate from {name!r} to unknown agent {target!r}{who}{d._known()}"
            ) from cause
        if len(chain) > d._max_delegations:
            raise self.error(
                f"cannot delegate from {name!r} to {target!r}{who}: max_delegations="
                f"{d._max_delegations} reached (chain: {' -> '.join(chain)})"
            ) from cause
        self.delegated_from = chain
        self.name = target
        self.attempt = 0
        self.errors = []
        return agent

    async def timed_out(self, seconds: float) -> DispatchError:
        """Show the timeout to ``on_failure`` hooks (answers ignored); return the error."""
        error = TimeoutError(f"dispatch timed out after {seconds:g} s")
        if self.d._has_on_failure and self.attempt > 0:
            self.errors.append(error)
            await self.on_failure(error)
        dispatch_error = self.error(
            f"dispatch of {self.task!r} to agent {self.name!r} timed out after {seconds:g} s "
            f"(attempt {self.attempt})"
        )
        dispatch_error.__cause__ = error
        return dispatch_error
