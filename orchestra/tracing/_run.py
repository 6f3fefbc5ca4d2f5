"""Telemetry of runs and attempts: one recorder object each, and a no-op twin (internal).

The engines decide once per run (or dispatch attempt) whether anything records: then they
hold a recorder, else its no-op twin whose methods do nothing, and call it
unconditionally. ``RunTelemetry.start()`` gives the run's; ``agent_attempt()`` the span
of one dispatch attempt.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import Token
from typing import Any, Final, Protocol, final

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Link, Span

from orchestra.tracing import names as n
from orchestra.tracing._spans import (
    agent_span,
    record_decision,
    record_error,
    record_hook_error,
    set_agent_output,
)
from orchestra.tracing._state import Instruments, get_instruments, get_tracer

__all__ = [
    "NO_ATTEMPT",
    "NO_RUN",
    "AttemptSpan",
    "AttemptTrace",
    "RunTelemetry",
    "agent_attempt",
]


class _Task(Protocol):
    """What a task attempt's span needs of a task (``orchestra.Task`` has it)."""

    @property
    def id(self) -> str: ...
    @property
    def retries(self) -> int: ...
    @property
    def agent(self) -> str | None: ...


class _State(Protocol):
    """A terminal ``TaskState``: its ``value`` goes on spans and metrics."""

    @property
    def value(self) -> str: ...


class AttemptSpan:
    """The span of one attempt (a task's or an agent's): errors, decisions, output."""

    __slots__ = ("attempt", "span")

    def __init__(self, span: Span, attempt: int) -> None:
        self.span = span
        self.attempt = attempt

    def error(self, error: BaseException) -> None:
        """Record the error that failed the attempt (status ERROR)."""
        record_error(self.span, error)

    def decision(self, decision: object, by: str | None) -> None:
        """Record a decision taken about the attempt, and who took it."""
        record_decision(self.span, decision, by, attempt=self.attempt)

    def hook_error(self, error: BaseException, hook: str) -> None:
        """Record a hook error that was isolated during the attempt."""
        record_hook_error(self.span, error, hook)

    def output(self, output: Any) -> None:
        """Put an agent's output on the span (only when content capture is on)."""
        set_agent_output(self.span, output)

    def branch(self, chosen: tuple[str, ...]) -> None:
        """Record the downstream tasks a branch task chose to follow."""
        self.span.set_attribute(n.ATTR_BRANCH_CHOSEN, chosen)

    def end(self, state: str) -> None:
        """End a task attempt's span (task attempts only)."""


@final
class AttemptTrace(AttemptSpan):
    """The span of one task attempt, current while the attempt runs."""

    __slots__ = ("ended", "token")

    def __init__(self, span: Span, token: Token[otel_context.Context], attempt: int) -> None:
        super().__init__(span, attempt)
        self.token = token
        self.ended = False

    def end(self, state: str) -> None:
        """Set the attempt's ``orchestra.task.state``, end its span, restore the context."""
        if self.ended:
            return
        self.ended = True
        self.span.set_attribute(n.ATTR_TASK_STATE, state)
        self.span.end()
        otel_context.detach(self.token)


@final
class _NoAttempt(AttemptSpan):
    """An attempt nothing records: every method does nothing."""

    __slots__ = ()

    def __init__(self) -> None:
        pass

    def error(self, error: BaseException) -> None:
        pass

    def decision(self, decision: object, by: str | None) -> None:
        pass

    def hook_error(self, error: BaseException, hook: str) -> None:
        pass

    def output(self, output: Any) -> None:
        pass

    def branch(self, chosen: tuple[str, ...]) -> None:
        pass


NO_ATTEMPT: Final[AttemptSpan] = _NoAttempt()
"""The attempt recorder of an attempt nothing records."""


@contextmanager
def agent_attempt(
    tracer: trace.Tracer,
    agent: str,
    *,
    task: str,
    mode: str,
    parent: str | None,
    attempt: int,
    delegated_from: tuple[str, ...],
) -> Iterator[AttemptSpan]:
    """The ``invoke_agent {agent}`` span of one dispatch attempt, as a recorder."""
    with agent_span(
        tracer,
        agent,
        task=task,
        mode=mode,
        parent=parent,
        attempt=attempt,
        delegated_from=delegated_from,
    ) as span:
        yield AttemptSpan(span, attempt)


class RunTelemetry:
    """The run span and the instruments of one run; ``NO_RUN`` when nothing records."""

    __slots__ = (
        "context",
        "dag",
        "instruments",
        "metric_attributes",
        "run_id",
        "span",
        "token",
        "tracer",
    )

    def __init__(
        self,
        tracer: trace.Tracer | None,
        instruments: Instruments | None,
        dag: str,
        run_id: str,
    ) -> None:
        self.tracer = tracer
        self.instruments = instruments
        self.dag = dag
        self.run_id = run_id
        self.span: Span | None = None
        self.context: otel_context.Context | None = None
        self.token: Token[otel_context.Context] | None = None
        self.metric_attributes = {n.ATTR_DAG_NAME: dag}

    @classmethod
    def start(
        cls,
        dag: str,
        run_id: str,
        *,
        tasks: int,
        max_concurrency: int,
        deps: Iterable[tuple[str, Sequence[str]]] = (),
    ) -> RunTelemetry:
        """Start the run span and make it current; ``NO_RUN`` if nothing would record it.

        The run span's parent is the current span, if any (a caller's span, or a
        context extracted from ``TRACEPARENT``). ``deps`` (each task id with its deps,
        in the DAG's order) is read only when a span is made: pass a generator.
        """
        tracer = get_tracer()
        instruments = get_instruments()
        if tracer is None and instruments is None:
            return NO_RUN
        self = cls(tracer, instruments, dag, run_id)
        if tracer is not None:
            span = tracer.start_span(
                n.SPAN_RUN.format(dag=dag),
                attributes={
                    n.ATTR_DAG_NAME: dag,
                    n.ATTR_RUN_ID: run_id,
                    n.ATTR_RUN_TASKS: tasks,
                    n.ATTR_RUN_MAX_CONCURRENCY: max_concurrency,
                    n.ATTR_DAG_DEPS: json.dumps(
                        {task: list(on) for task, on in deps}, separators=(",", ":")
                    ),
                },
            )
            if span.is_recording():
                self.span = span
                self.context = trace.set_span_in_context(span)
                self.token = otel_context.attach(self.context)
            else:  # sampled out: nothing below it would be recorded either
                span.end()
                self.tracer = None
                if instruments is None:
                    return NO_RUN
        return self

    def attempt(self, task: _Task, attempt: int, previous: AttemptSpan) -> AttemptSpan:
        """Start the span of one task attempt and make it current (``NO_ATTEMPT`` if none).

        A retried attempt links to the span of the attempt before it.
        """
        task_id = task.id
        retries = task.retries
        executor = task.agent
        if self.instruments is not None:
            self.instruments.attempts.add(1, self.metric_attributes)
        if self.tracer is None:
            return NO_ATTEMPT
        # Few attributes: each costs the SDK about a microsecond. The DAG's name and the
        # run id are on the run span, the root of the same trace.
        attributes: dict[str, Any] = {n.ATTR_TASK_ID: task_id, n.ATTR_TASK_ATTEMPT: attempt}
        if retries:
            attributes[n.ATTR_TASK_RETRIES] = retries
        if executor is not None:
            attributes[n.ATTR_TASK_EXECUTOR] = executor
        links = (
            [Link(previous.span.get_span_context(), {n.ATTR_LINK_TYPE: n.LINK_PREVIOUS_ATTEMPT})]
            if previous is not NO_ATTEMPT
            else None
        )
        span = self.tracer.start_span(
            n.SPAN_TASK.format(task=task_id),
            context=self.context,
            attributes=attributes,
            links=links,
        )
        token = otel_context.attach(trace.set_span_in_context(span, self.context))
        return AttemptTrace(span, token, attempt)

    def task_done(self, attempt: AttemptSpan, state: _State, seconds: float) -> None:
        """End a finished task's last attempt span and record its duration metric."""
        attempt.end(state.value)
        if self.instruments is not None:
            self.instruments.task_duration.record(
                seconds, {n.ATTR_DAG_NAME: self.dag, n.ATTR_TASK_STATE: state.value}
            )

    def finish(
        self,
        *,
        ok: bool,
        failed: int,
        not_run: Iterable[tuple[str, str]] = (),
        error: BaseException | None = None,
    ) -> None:
        """End the run span: the outcome, the tasks that never ran, a fatal error."""
        span = self.span
        if span is None:
            return
        span.set_attribute(n.ATTR_RUN_OK, ok)
        span.set_attribute(n.ATTR_RUN_FAILED, failed)
        for task_id, state in not_run:
            span.add_event(
                n.EVENT_TASK_NOT_RUN, {n.ATTR_TASK_ID: task_id, n.ATTR_TASK_STATE: state}
            )
        if error is not None:
            record_error(span, error, escaped=True)
        elif not ok:
            span.set_status(trace.Status(trace.StatusCode.ERROR, f"{failed} task(s) not ok"))
        span.end()
        if self.token is not None:
            otel_context.detach(self.token)


@final
class _NoRun(RunTelemetry):
    """A run nothing records: every method does nothing."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__(None, None, "", "")

    def attempt(self, task: _Task, attempt: int, previous: AttemptSpan) -> AttemptSpan:
        return NO_ATTEMPT

    def task_done(self, attempt: AttemptSpan, state: _State, seconds: float) -> None:
        pass

    def finish(
        self,
        *,
        ok: bool,
        failed: int,
        not_run: Iterable[tuple[str, str]] = (),
        error: BaseException | None = None,
    ) -> None:
        pass


NO_RUN: Final[RunTelemetry] = _NoRun()
"""The telemetry of a run nothing records (``tracer`` is None)."""
