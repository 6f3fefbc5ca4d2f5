"""What the adapter knows about one Hamilton run: states, attempts, traces (internal)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from types import MappingProxyType
from typing import Any, Final, final

from opentelemetry import trace
from opentelemetry.trace import Link, Span

import orchestra
import orchestra.tracing as ot
from orchestra import HookChain, TaskHookContext, TaskState
from orchestra.bridge import DoGive, Ended, TaskAttempts, keep

__all__ = ["Run", "Trace"]

_NOT_OK: Final = (TaskState.FAILED, TaskState.UPSTREAM_FAILED, TaskState.CANCELLED)


@final
class Trace:
    """The spans of one run: the run span and one span per node attempt."""

    __slots__ = ("context", "span", "tracer")

    def __init__(self, tracer: trace.Tracer, dag: str, run_id: str, tasks: int) -> None:
        self.tracer = tracer
        self.span = tracer.start_span(
            ot.SPAN_RUN.format(dag=dag),
            attributes={ot.ATTR_DAG_NAME: dag, ot.ATTR_RUN_ID: run_id, ot.ATTR_RUN_TASKS: tasks},
        )
        self.context = trace.set_span_in_context(self.span)

    def attempt(self, task_id: str, attempt: int, previous: Span | None) -> Span:
        """Start the span of one node attempt, linked to the attempt before it."""
        links = (
            [Link(previous.get_span_context(), {ot.ATTR_LINK_TYPE: ot.LINK_PREVIOUS_ATTEMPT})]
            if previous is not None
            else None
        )
        return self.tracer.start_span(
            ot.SPAN_TASK.format(task=task_id),
            context=self.context,
            attributes={ot.ATTR_TASK_ID: task_id, ot.ATTR_TASK_ATTEMPT: attempt},
            links=links,
        )

    def finish(self, ok: bool, failed: int, error: BaseException | None) -> None:
        """End the run span with the run's outcome."""
        self.span.set_attribute(ot.ATTR_RUN_OK, ok)
        self.span.set_attribute(ot.ATTR_RUN_FAILED, failed)
        if error is not None:
            ot.record_error(self.span, error)
        self.span.end()


@final
class Upstream(Mapping[str, TaskState]):
    """The states of a node's upstream nodes, read from its run (a read-only view).

    Hamilton's inputs are dependencies without a state: they are not in it.
    """

    __slots__ = ("_deps", "_states")

    def __init__(self, deps: tuple[str, ...], states: Mapping[str, TaskState]) -> None:
        self._deps = deps
        self._states = states

    def __getitem__(self, dep: str) -> TaskState:
        if dep not in self._deps:
            raise KeyError(dep)
        return self._states[dep]

    def __iter__(self) -> Iterator[str]:
        return (dep for dep in self._deps if dep in self._states)

    def __len__(self) -> int:
        return sum(1 for dep in self._deps if dep in self._states)

    def __repr__(self) -> str:
        return f"{dict(self)!r}"


@final
class Run:
    """One ``driver.execute``: every node's task, state, attempts, and the run's trace."""

    __slots__ = (
        "async_driver",
        "attempts",
        "dag",
        "durations",
        "ending",
        "errors",
        "hook_errors",
        "keep_outputs",
        "outputs",
        "plan",
        "reasons",
        "record",
        "request",
        "run_id",
        "started",
        "started_at",
        "states",
        "trace",
        "tracer",
    )

    def __init__(self, run_id: str, dag: str, *, async_driver: bool, keep_outputs: bool) -> None:
        self.run_id = run_id
        self.dag = dag
        self.async_driver = async_driver
        self.keep_outputs = keep_outputs
        self.started = self.started_at = time.monotonic()
        self.states: dict[str, TaskState] = {}
        self.attempts: dict[str, int] = {}
        self.outputs: dict[str, Any] = {}
        self.errors: dict[str, BaseException] = {}
        self.reasons: dict[str, str] = {}
        self.durations: dict[str, float] = {}
        self.hook_errors: list[orchestra.HookError] = []
        self.record: Callable[[orchestra.HookError], None] = self.hook_errors.append
        self.plan: dict[str, Any] = {}  # name -> Hamilton node, in topological order
        self.ending = False
        self.trace: Trace | None = None
        self.tracer: trace.Tracer | None = None  # the trace's tracer, for hook spans
        self.request: tuple[Any, list[str], dict[str, Any], dict[str, Any]] | None = None

    def context(
        self,
        task: orchestra.Task,
        attempt: int,
        errors: tuple[BaseException, ...],
        started: float,
        inputs: Mapping[str, Any],
        notes: list[str],
    ) -> TaskHookContext:
        """The hook context of one attempt of ``task`` (``notes``: the attempt's messages)."""
        return HookChain.task_context(
            task=task,
            attempt=attempt,
            executor=None,
            run_id=self.run_id,
            errors=errors,
            started_at=started,
            inputs=MappingProxyType(inputs),  # the node's own kwargs: nothing changes them
            upstream_states=Upstream(task.deps, self.states),
            notes=notes,
        )

    def settle(self, name: str, state: TaskState, output: Any, started: float) -> None:
        """Record a node's terminal state (and its output, when kept)."""
        self.states[name] = state
        self.durations[name] = time.monotonic() - started
        if self.keep_outputs and state is TaskState.SUCCEEDED:
            self.outputs[name] = output

    def settled(self, attempts: TaskAttempts, end: Ended) -> None:
        """A node ended as the attempt driver says: its state, output, error and reason."""
        name = attempts.task.id
        self.settle(
            name, end.state, end.output if type(end) is DoGive else None, attempts.started_at
        )
        keep(end, name, self.errors, self.reasons)

    def attempt_context(self, attempts: TaskAttempts) -> TaskHookContext:
        """The hook context of the current attempt of a node."""
        a = attempts
        return self.context(a.task, a.attempt, a.errors, a.started_at, a.inputs, a.notes)

    def unfinished(self) -> list[tuple[str, TaskState]]:
        """Planned nodes that never ended, with the state they end in now the run is over.

        A node downstream of a failure is UPSTREAM_FAILED; any other node the run never
        reached (Hamilton stops at the first error) is CANCELLED.
        """
        ended: list[tuple[str, TaskState]] = []
        for name, node in self.plan.items():
            if name in self.states:
                continue
            failed = any(
                self.states.get(dep.name) in (TaskState.FAILED, TaskState.UPSTREAM_FAILED)
                for dep in node.dependencies
            )
            state = TaskState.UPSTREAM_FAILED if failed else TaskState.CANCELLED
            self.states[name] = state
            self.attempts.setdefault(name, 0)
            ended.append((name, state))
        return ended

    def result(self) -> orchestra.RunResult:
        """The run as an ``orchestra.RunResult``."""
        return orchestra.RunResult(
            ok=not any(state in _NOT_OK for state in self.states.values()),
            states=dict(self.states),
            outputs=dict(self.outputs),
            errors=dict(self.errors),
            attempts=dict(self.attempts),
            run_id=self.run_id,
            reasons=dict(self.reasons),
            hook_errors=tuple(self.hook_errors),
            durations=dict(self.durations),
            duration=time.monotonic() - self.started,
        )

    def failed(self) -> int:
        """How many nodes ended not ok."""
        return sum(1 for state in self.states.values() if state in _NOT_OK)
