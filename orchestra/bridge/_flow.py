"""What each event of an attempt means, once: generators that yield the hook calls they need.

``Flow._start`` (an attempt starts), ``_succeed`` (the body returned), ``_fail`` (it
raised) and ``_unrun`` (the work never ran) each yield ``(moment, args)`` for every hook
call and get the merged ``(decision, by)`` back; each returns the driver's answer. They
do no I/O: ``TaskAttempts`` (``_attempts``) drives them from sync or async code.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any, Final, TypeAlias, TypeVar

from opentelemetry.trace import Span

from orchestra._attempts import RetryBudget, after_failure
from orchestra._decisions import Again, Decision, GiveOutput, Replace, Retry, Skip
from orchestra._errors import TaskFailed
from orchestra._hooks import TaskHookContext
from orchestra.bridge._answers import DoFail, DoGive, DoRun, DoSkip, DoSleep, Ended
from orchestra.dag import Task
from orchestra.tracing import names, record_decision, record_error

if TYPE_CHECKING:
    from orchestra.bridge._attempts import AttemptDriver, TaskAttempts

__all__ = ["ContextFactory", "Flow"]

_T = TypeVar("_T")
_Call: TypeAlias = tuple[str, tuple[Any, ...]]
_Merged: TypeAlias = tuple[Decision | None, str | None]
Steps: TypeAlias = Generator[_Call, _Merged, _T]
"""One event's flow: yields hook calls, gets merged answers, returns the driver's answer."""
_CAP: Final = "orchestra"  # who decided when a cap refused a retry
_TASK_RETRIES: Final = "task.retries"  # who decided a retry when no hook did

ContextFactory: TypeAlias = Callable[["TaskAttempts"], TaskHookContext]
"""Builds the ``TaskHookContext`` of the current attempt from a ``TaskAttempts``."""


class Flow:
    """The state of one run's attempts and what each event means (``TaskAttempts``' base).

    Read by the context factory: ``task``, ``attempt`` (1-based once started), ``errors``
    (the attempts' errors so far), ``inputs`` (as replaced), ``started_at``, ``notes``
    (the messages the attempt's contexts share) and ``span`` (the attempt's, or None).
    """

    __slots__ = (
        "_budget",
        "_context",
        "_ctx",
        "_d",
        "_ended",
        "_how",
        "_settle",
        "attempt",
        "errors",
        "inputs",
        "notes",
        "span",
        "started_at",
        "task",
    )

    def __init__(
        self,
        driver: AttemptDriver,
        task: Task,
        inputs: Any,
        context: ContextFactory,
        how: tuple[Any, Any, RetryBudget | None, Callable[[Any, Ended], object] | None],
        attempt: int,
        errors: tuple[BaseException, ...],
    ) -> None:
        on_error, tracer, self._budget, self._settle = how
        self._d = driver
        self.task = task
        self.inputs = inputs
        self._context = context
        self._how: dict[str, Any] = {"subject": task.id, "on_error": on_error, "tracer": tracer}
        self.attempt = attempt
        self.errors = errors
        self.started_at = time.monotonic()
        self.notes: list[str] = []
        self.span: Span | None = None
        self._ctx: TaskHookContext | None = None
        self._ended: Ended | None = None

    @property
    def ended(self) -> Ended | None:
        """The answer that ended the work, once it ended."""
        return self._ended

    def _start(self, span: Span | None) -> Steps[DoRun | Ended]:
        if self._ended is not None:
            raise RuntimeError(f"the work of {self.task.id!r} already ended: {self._ended!r}")
        self.attempt += 1
        self.span = span
        self.notes = []
        self._ctx = None
        if self._d.has["before_execute"]:
            decision, by = yield ("before_execute", (self._context_now(),))
            if type(decision) is Replace:
                if type(decision.value) is GiveOutput:  # the output: no body runs
                    given = f"output given by {by}" if by is not None else "output given"
                    return (yield from self._end(DoGive(decision.value.value, given)))
                self.inputs = decision.value
                self._ctx = None
            elif decision is not None:
                return (yield from self._refuse(decision, by))
        return DoRun(self.inputs)

    def _succeed(self, output: Any) -> Steps[Ended]:
        if self._d.has["after_execute"]:
            decision, by = yield ("after_execute", (self._context_now(), output))
            if type(decision) is Replace:
                output = decision.value
            elif decision is not None:  # a fail-closed hook's error
                return (yield from self._refuse(decision, by))
        return (yield from self._end(DoGive(output)))

    def _fail(self, error: Exception) -> Steps[DoSleep | Ended]:
        self.errors += (error,)
        self._ctx = None
        if self.span is not None:
            record_error(self.span, error)
        decision = by = None
        if self._d.has["on_failure"]:
            decision, by = yield ("on_failure", (self._context_now(), error))
        fallback = None
        if self._d.task_retries and self.attempt <= self.task.retries:
            fallback = Retry(self.task.retry_delay)
        verdict = after_failure(
            decision,
            by,
            attempt=self.attempt,
            max_attempts=self._d.max_attempts,
            fallback=fallback,
            budget=self._budget,
        )
        decision, by = verdict.decision, verdict.hook or (_TASK_RETRIES if fallback else None)
        if isinstance(decision, Again):
            self._record(decision, by)
            if self.span is not None:
                self.span.set_attribute(names.ATTR_TASK_STATE, names.STATE_RETRYING)
            return DoSleep(decision.delay)
        if verdict.overruled is not None:
            self._record(verdict.overruled, by)
            by = _CAP
        if decision is not None:
            self._record(decision, by)
        return (yield from self._end(_failure_end(decision, by, error)))

    def _refuse(self, decision: Decision, by: str | None) -> Steps[Ended]:
        """A hook gave the work up before or after its body: ``Skip``, or ``Fail``."""
        self._record(decision, by)
        if type(decision) is Skip:
            skip = DoSkip(f"skipped by {by}{_why(decision)}", None, decision)
            return (yield from self._end(skip))
        error = TaskFailed(self.task.id, getattr(decision, "reason", None))
        return (yield from self._end(DoFail(error, f"failed by {by}{_why(decision)}", decision)))

    def _end(self, answer: Ended) -> Steps[Ended]:
        """Settle the work, then its ``on_end`` hooks, once."""
        self._ended = answer
        if self._settle is not None:
            self._settle(self, answer)
        if self._d.has["on_end"]:
            yield ("on_end", (self._context_now(), answer.state))
        return answer

    def _unrun(self, state: Any) -> Steps[None]:
        if self._ended is not None or self.attempt:
            raise RuntimeError(f"the work of {self.task.id!r} already started")
        self._ended = DoSkip(f"never ran: {state}")
        if self._d.has["on_end"]:
            yield ("on_end", (self._context_now(), state))

    def _context_now(self) -> TaskHookContext:
        """The attempt's context, made again after its inputs or errors changed."""
        ctx = self._ctx
        if ctx is None:
            ctx = self._ctx = self._context(self)  # type: ignore[arg-type]  # a Flow is always a TaskAttempts
        return ctx

    def _record(self, decision: Decision | Again, by: str | None) -> None:
        if self.span is not None:
            record_decision(self.span, decision, by, attempt=self.attempt)


def _failure_end(decision: Decision | None, by: str | None, error: Exception) -> Ended:
    """How the work ends after a failure no retry follows."""
    if type(decision) is Replace:  # recovered: the substitute is the output
        return DoGive(decision.value, f"recovered by {by}" if by else "recovered", error)
    if type(decision) is Skip:
        return DoSkip(f"skipped by {by}{_why(decision)}", error, decision)
    if decision is None:
        return DoFail(error)
    reason = f"failed by {by}{_why(decision)}"
    error.add_note(f"orchestra: {reason}")
    return DoFail(error, reason, decision)


def _why(decision: object) -> str:
    """``": reason"`` of a decision that gives one, else ``""``."""
    why = getattr(decision, "reason", None)
    return f": {why}" if why else ""
