"""What the bridge knows about one graph run: states, attempts, errors, spans (internal).

A run starts when a hooked graph is streamed (``invoke``, ``ainvoke``, ``stream`` and
``astream`` all stream) outside any other hooked run; subgraphs and nodes find it in the
``contextvars`` context the bridge runs the graph in, so a hooked subgraph's nodes are
part of their parent's run.
"""

from __future__ import annotations

import contextvars
import time
import uuid
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Final, final

from opentelemetry import trace
from opentelemetry.trace import Link, Span

import orchestra
import orchestra.tracing as ot
from orchestra import HookChain, TaskHookContext, TaskState
from orchestra.bridge import Ended, RunBudgets, TaskAttempts, keep

__all__ = ["Run", "current"]

_NOT_OK: Final = (TaskState.FAILED, TaskState.UPSTREAM_FAILED, TaskState.CANCELLED)

current: Final[contextvars.ContextVar[Run | None]] = contextvars.ContextVar(
    "orchestra_langgraph_run", default=None
)
"""The hooked run the code here belongs to, if any."""


@final
class Run:
    """One run of a hooked graph: what ``after_run`` gets, and the run's span."""

    __slots__ = (
        "attempts",
        "budgets",
        "durations",
        "errors",
        "graph",
        "hook_errors",
        "nodes",
        "reasons",
        "record",
        "run_id",
        "span",
        "started",
        "started_at",
        "states",
        "tracer",
    )

    def __init__(self, graph: str, nodes: tuple[str, ...]) -> None:
        self.run_id = uuid.uuid4().hex
        self.graph = graph
        self.nodes = nodes
        self.started = self.started_at = time.monotonic()
        self.states: dict[str, TaskState] = {}
        self.attempts: dict[str, int] = {}
        self.errors: dict[str, BaseException] = {}
        self.reasons: dict[str, str] = {}
        self.durations: dict[str, float] = {}
        self.hook_errors: list[orchestra.HookError] = []
        self.record: Callable[[orchestra.HookError], None] = self.hook_errors.append
        self.tracer: trace.Tracer | None = None
        self.span: Span | None = None
        self.budgets = RunBudgets(())  # the run's own, opened when it starts
        self.tracer = ot.get_tracer()
        if self.tracer is not None:
            self.span = self.tracer.start_span(
                ot.names.SPAN_RUN.format(dag=graph),
                attributes={
                    ot.names.ATTR_DAG_NAME: graph,
                    ot.names.ATTR_RUN_ID: self.run_id,
                    ot.names.ATTR_RUN_TASKS: len(nodes),
                },
            )

    def run_context(self) -> orchestra.RunContext:
        """What ``before_run`` and ``after_run`` get."""
        return orchestra.RunContext(
            dag=self.graph, run_id=self.run_id, task_ids=self.nodes, started_at=self.started_at
        )

    def context(
        self,
        task: orchestra.Task,
        attempt: int,
        errors: tuple[BaseException, ...],
        started: float,
        inputs: Any,
        notes: list[str],
    ) -> TaskHookContext:
        """The hook context of one attempt of a node."""
        return HookChain.task_context(
            task=task,
            attempt=attempt,
            executor=None,
            run_id=self.run_id,
            errors=errors,
            started_at=started,
            inputs=MappingProxyType(
                dict(inputs) if isinstance(inputs, Mapping) else {"state": inputs}
            ),
            notes=notes,
        )

    def attempt_span(self, name: str, attempt: int, previous: Span | None) -> Span | None:
        """Start the span of one node attempt (None when tracing is off)."""
        if self.tracer is None:
            return None
        links = (
            [
                Link(
                    previous.get_span_context(),
                    {ot.names.ATTR_LINK_TYPE: ot.names.LINK_PREVIOUS_ATTEMPT},
                )
            ]
            if previous is not None
            else None
        )
        parent = trace.set_span_in_context(self.span) if self.span is not None else None
        if trace.get_current_span().get_span_context().is_valid:
            parent = None  # inside a node (a subgraph's): nest under it
        return self.tracer.start_span(
            ot.names.SPAN_TASK.format(task=name),
            context=parent,
            attributes={ot.names.ATTR_TASK_ID: name, ot.names.ATTR_TASK_ATTEMPT: attempt},
            links=links,
        )

    def settle(self, name: str, state: TaskState, started: float) -> None:
        """Record a node run's terminal state."""
        self.states[name] = state
        self.durations[name] = time.monotonic() - started

    def settled(self, attempts: TaskAttempts, end: Ended) -> None:
        """A node run ended as the attempt driver says: its state, error and reason."""
        name = attempts.task.id
        self.settle(name, end.state, attempts.started_at)
        keep(end, name, self.errors, self.reasons)

    def attempt_context(self, attempts: TaskAttempts) -> TaskHookContext:
        """The hook context of the current attempt of a node run."""
        a = attempts
        return self.context(a.task, a.attempt, a.errors, a.started_at, a.inputs, a.notes)

    def result(self, error: BaseException | None = None) -> orchestra.RunResult:
        """The run as an ``orchestra.RunResult``.

        ``errors`` has each failed node's error; the error that ended the run (a
        ``BudgetExceeded``, say) under the graph's name when no node's error is it.
        """
        ok = error is None and not any(s in _NOT_OK for s in self.states.values())
        errors = dict(self.errors)
        if error is not None and not any(e is error for e in errors.values()):
            errors.setdefault(self.graph, error)
        return orchestra.RunResult(
            ok=ok,
            states=dict(self.states),
            outputs={},
            errors=errors,
            attempts=dict(self.attempts),
            run_id=self.run_id,
            reasons=dict(self.reasons),
            hook_errors=tuple(self.hook_errors),
            durations=dict(self.durations),
            duration=time.monotonic() - self.started,
            budgets=self.budgets.uses(),
        )

    def finish(self, error: BaseException | None) -> None:
        """End the run's span (with what the run spent of its budgets)."""
        if self.span is None:
            return
        self.budgets.annotate(self.span)
        failed = sum(1 for s in self.states.values() if s in _NOT_OK)
        self.span.set_attribute(ot.names.ATTR_RUN_OK, error is None and not failed)
        self.span.set_attribute(ot.names.ATTR_RUN_FAILED, failed)
        if error is not None:
            ot.record_error(self.span, error)
        self.span.end()
