"""Telemetry of one DAG run: the run span, task-attempt spans and task metrics (internal).

The scheduler asks ``RunTelemetry.start()`` once per run; it returns None when nothing
would record a span or a metric, and the scheduler then skips all of this behind one
``is not None`` check per attempt.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from contextvars import Token
from typing import Any, final

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Link, Span

from orchestra.tracing import _names as n
from orchestra.tracing._spans import record_decision, record_error
from orchestra.tracing._state import Instruments, get_instruments, get_tracer

__all__ = ["AttemptTrace", "RunTelemetry"]


@final
class AttemptTrace:
    """The span of one task attempt, current while the attempt runs (internal)."""

    __slots__ = ("attempt", "ended", "span", "token")

    def __init__(self, span: Span, token: Token[otel_context.Context], attempt: int) -> None:
        self.span = span
        self.token = token
        self.attempt = attempt
        self.ended = False

    def error(self, error: BaseException) -> None:
        """Record the error that failed the attempt (status ERROR)."""
        record_error(self.span, error)

    def decision(self, decision: object, by: str | None) -> None:
        """Record the decision that ended the attempt, and who took it."""
        record_decision(self.span, decision, by, attempt=self.attempt)

    def end(self, state: str) -> None:
        """Set the attempt's ``orchestra.task.state``, end its span, restore the context."""
        self.ended = True
        self.span.set_attribute(n.ATTR_TASK_STATE, state)
        self.span.end()
        otel_context.detach(self.token)


@final
class RunTelemetry:
    """The run span and the instruments of one run (internal)."""

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
    ) -> RunTelemetry | None:
        """Start the run span and make it current; None if nothing would record it.

        The run span's parent is the current span, if any (a caller's span, or a
        context extracted from ``TRACEPARENT``). ``deps`` (each task id with its deps,
        in the DAG's order) is read only when a span is made: pass a generator.
        """
        tracer = get_tracer()
        instruments = get_instruments()
        if tracer is None and instruments is None:
            return None
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
                    return None
        return self

    def attempt(
        self,
        task_id: str,
        attempt: int,
        *,
        retries: int,
        executor: str | None,
        previous: AttemptTrace | None,
    ) -> AttemptTrace | None:
        """Start the span of one task attempt and make it current (None without traces).

        A retried attempt links to the span of the attempt before it.
        """
        if self.instruments is not None:
            self.instruments.attempts.add(1, self.metric_attributes)
        if self.tracer is None:
            return None
        # Few attributes: each costs the SDK about a microsecond. The DAG's name and the
        # run id are on the run span, the root of the same trace.
        attributes: dict[str, Any] = {n.ATTR_TASK_ID: task_id, n.ATTR_TASK_ATTEMPT: attempt}
        if retries:
            attributes[n.ATTR_TASK_RETRIES] = retries
        if executor is not None:
            attributes[n.ATTR_TASK_EXECUTOR] = executor
        links = (
            [
                Link(
                    previous.span.get_span_context(),
                    {n.ATTR_LINK_TYPE: n.LINK_PREVIOUS_ATTEMPT},
                )
            ]
            if previous is not None
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

    def task_done(self, state: str, seconds: float) -> None:
        """Record a finished task's duration metric."""
        if self.instruments is not None:
            self.instruments.task_duration.record(
                seconds, {n.ATTR_DAG_NAME: self.dag, n.ATTR_TASK_STATE: state}
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
