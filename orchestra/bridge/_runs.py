"""What a bridge keeps of one run it drives: ``RunRecord`` (public through ``orchestra.bridge``).

An engine with runs of its own (a LangGraph invocation, a Hamilton ``driver.execute``)
keeps, as orchestra's scheduler does, every task's state, attempts, error, reason and
duration, the run's hook errors, and the run span with one span per attempt. ``RunRecord``
is that bookkeeping, written once: the attempt driver settles each task into it
(``settle=record.settled``), builds each attempt's context from it
(``context=record.attempt_context``), reports hook errors to it (``on_error=record.record``)
and starts each attempt's span through it (``spans=record.spans(task_id)``); ``result()``
is the ``RunResult`` that ``after_run`` gets, and ``finish()`` ends the run span.

An engine adds what it alone knows in a subclass: how its inputs show in ``ctx.inputs``
(``inputs_of``), its tasks' upstream states (``upstream_of``), its own fields.
"""

from __future__ import annotations

import functools
import time
import uuid
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Final

import anyio
from opentelemetry import trace
from opentelemetry.trace import Link, Span, Tracer

from orchestra._chain import HookChain
from orchestra._decisions import Fail
from orchestra._errors import HookError
from orchestra._hooks import NO_INPUTS, RunContext, TaskHookContext
from orchestra._spending import RunBudgets
from orchestra.bridge._answers import DoGive, Ended, keep
from orchestra.bridge._attempts import SpanFactory, TaskAttempts
from orchestra.dag import RunResult, Task, TaskState
from orchestra.tracing import get_tracer, names, record_error

__all__ = ["RunRecord"]

_NOT_OK: Final = frozenset({TaskState.FAILED, TaskState.UPSTREAM_FAILED, TaskState.CANCELLED})
"""The terminal states that make a run not ok (as ``RunResult.ok`` says)."""
_NO_BUDGETS: Final = RunBudgets(())


class RunRecord:
    """The bookkeeping of one run a bridge drives: its tasks' outcomes, its spans, its result.

    Args:
        name: the run's name (``RunContext.dag``, the run span's ``run {name}``).
        run_id: the run's id (None: a new one).
        keep_outputs: whether ``settle`` keeps each SUCCEEDED task's output for
            ``result().outputs`` (an engine that has an ``after_run`` to show them to).
        executor: the agent each attempt's context names (``ctx.executor``), or None.

    Attributes:
        states: each ended task's terminal ``TaskState``, by id.
        attempts: how many attempts each task started in this run, by id.
        outputs: each SUCCEEDED task's output, when kept.
        errors: each task's error kept on the result, by id.
        reasons: why each task ended as it did, when a decision (or a cap) said so.
        durations: seconds each ended task took, all attempts included.
        hook_errors: every hook error of the run, in order.
        record: what gets each hook error (``hook_errors.append``; an engine may wrap it).
        started_at: ``time.monotonic()`` when the run started.
        tracer: the run's tracer once ``open_span`` found one (hook spans use it), else None.
        span: the run span, or None.
        budgets: the budgets the run opened (``enter_budgets``'s answer; none until then):
            what they spent is on the result and the run span.
    """

    __slots__ = (
        "attempts",
        "budgets",
        "durations",
        "errors",
        "executor",
        "hook_errors",
        "keep_outputs",
        "name",
        "outputs",
        "reasons",
        "record",
        "run_id",
        "span",
        "started_at",
        "states",
        "tracer",
    )

    def __init__(
        self,
        name: str,
        run_id: str | None = None,
        *,
        keep_outputs: bool = False,
        executor: str | None = None,
    ) -> None:
        self.name = name
        self.run_id = run_id or uuid.uuid4().hex
        self.keep_outputs = keep_outputs
        self.executor = executor
        self.started_at = time.monotonic()
        self.states: dict[str, TaskState] = {}
        self.attempts: dict[str, int] = {}
        self.outputs: dict[str, Any] = {}
        self.errors: dict[str, BaseException] = {}
        self.reasons: dict[str, str] = {}
        self.durations: dict[str, float] = {}
        self.hook_errors: list[HookError] = []
        self.record: Callable[[HookError], None] = self.hook_errors.append
        self.tracer: Tracer | None = None
        self.span: Span | None = None
        self.budgets = _NO_BUDGETS

    # -- the run -----------------------------------------------------------------------------

    def run_context(self, task_ids: tuple[str, ...]) -> RunContext:
        """What ``before_run`` and ``after_run`` get, ``task_ids`` the run's tasks."""
        return RunContext(
            dag=self.name, run_id=self.run_id, task_ids=task_ids, started_at=self.started_at
        )

    async def before_run(
        self, chain: HookChain, task_ids: tuple[str, ...] = ()
    ) -> tuple[Fail | None, str | None]:
        """Call ``chain``'s ``before_run``: the ``Fail`` that refuses the run and its hook.

        ``(None, None)`` when the run may start. For an engine whose tasks are not known
        beforehand (an agent's tool calls), ``task_ids`` is empty. Hook errors go to
        ``record``.
        """
        if not chain.has("before_run"):
            return None, None
        decision, by = await chain.call(
            "before_run", self.run_context(task_ids), subject=self.name, on_error=self.record
        )
        return (decision, by) if isinstance(decision, Fail) else (None, None)

    async def after_run(
        self, chain: HookChain, error: BaseException | None, task_ids: tuple[str, ...] = ()
    ) -> None:
        """Call ``chain``'s ``after_run`` once with ``result(error)``, shielded from cancelling."""
        if chain.has("after_run"):
            with anyio.CancelScope(shield=True):
                await chain.call(
                    "after_run",
                    self.run_context(task_ids),
                    self.result(error),
                    subject=self.name,
                    on_error=self.record,
                )

    def open_span(self, tasks: int) -> Span | None:
        """Start the run span when tracing is on (``tasks``: how many the run plans)."""
        self.tracer = get_tracer()
        if self.tracer is not None:
            self.span = self.tracer.start_span(
                names.SPAN_RUN.format(dag=self.name),
                attributes={
                    names.ATTR_DAG_NAME: self.name,
                    names.ATTR_RUN_ID: self.run_id,
                    names.ATTR_RUN_TASKS: tasks,
                },
            )
        return self.span

    def failed(self) -> int:
        """How many tasks ended not ok (FAILED, UPSTREAM_FAILED or CANCELLED)."""
        return sum(1 for state in self.states.values() if state in _NOT_OK)

    def result(self, error: BaseException | None = None) -> RunResult:
        """The run as a ``RunResult``.

        ``error``, the error that ended the run, makes it not ok; it is in ``errors``
        under the run's name when no task's error is it (a ``BudgetExceeded``, say).
        """
        errors = dict(self.errors)
        if error is not None and not any(e is error for e in errors.values()):
            errors.setdefault(self.name, error)
        return RunResult(
            ok=error is None and not self.failed(),
            states=dict(self.states),
            outputs=dict(self.outputs),
            errors=errors,
            attempts=dict(self.attempts),
            run_id=self.run_id,
            reasons=dict(self.reasons),
            hook_errors=tuple(self.hook_errors),
            durations=dict(self.durations),
            duration=time.monotonic() - self.started_at,
            budgets=self.budgets.uses(),
        )

    def finish(self, error: BaseException | None = None) -> None:
        """End the run span (if any): the run's outcome, what it spent, the error that ended it."""
        if self.span is None:
            return
        self.budgets.annotate(self.span)
        failed = self.failed()
        self.span.set_attribute(names.ATTR_RUN_OK, error is None and not failed)
        self.span.set_attribute(names.ATTR_RUN_FAILED, failed)
        if error is not None:
            record_error(self.span, error)
        self.span.end()

    # -- each task ---------------------------------------------------------------------------

    def settle(self, name: str, state: TaskState, started: float, output: Any = None) -> None:
        """Record that task ``name`` ended in ``state`` (``started``: its first attempt's time)."""
        self.states[name] = state
        self.durations[name] = time.monotonic() - started
        if self.keep_outputs and state is TaskState.SUCCEEDED:
            self.outputs[name] = output

    def settled(self, attempts: TaskAttempts, end: Ended) -> None:
        """The driver's ``settle``: a task ended as ``end`` says (state, output, error, reason)."""
        name = attempts.task.id
        output = end.output if type(end) is DoGive else None
        self.settle(name, end.state, attempts.started_at, output)
        keep(end, name, self.errors, self.reasons)

    def attempt_context(self, attempts: TaskAttempts) -> TaskHookContext:
        """The driver's ``context``: the hook context of the current attempt."""
        a = attempts
        return HookChain.task_context(
            task=a.task,
            attempt=a.attempt,
            executor=self.executor,
            run_id=self.run_id,
            errors=a.errors,
            started_at=a.started_at,
            inputs=self.inputs_of(a.inputs),
            upstream_states=self.upstream_of(a.task),
            notes=a.notes,
        )

    def inputs_of(self, inputs: Any) -> Mapping[str, Any]:
        """What ``ctx.inputs`` shows of an attempt's inputs: a read-only copy of a mapping.

        An engine whose inputs are no mapping (a graph's state) says how they show.
        """
        return MappingProxyType(dict(inputs)) if isinstance(inputs, Mapping) else NO_INPUTS

    def upstream_of(self, task: Task) -> Mapping[str, TaskState]:
        """``ctx.upstream_states`` of ``task``: none unless the engine says (its deps' states)."""
        return NO_INPUTS

    def spans(self, task_id: str, *, nest: bool = False) -> SpanFactory:
        """The driver's ``spans`` for one run of a task: each attempt counted and traced.

        Args:
            task_id: the task.
            nest: put the attempts under the current span when there is one (a node of a
                subgraph, run inside its parent's node), else under the run span.
        """
        return functools.partial(self._attempt, task_id, nest)

    def _attempt(
        self, task_id: str, nest: bool, attempt: int, previous: Span | None
    ) -> Span | None:
        self.attempts[task_id] = self.attempts.get(task_id, 0) + 1
        if self.tracer is None:
            return None
        links = None
        if previous is not None:
            kind = {names.ATTR_LINK_TYPE: names.LINK_PREVIOUS_ATTEMPT}
            links = [Link(previous.get_span_context(), kind)]
        parent = trace.set_span_in_context(self.span) if self.span is not None else None
        if nest and trace.get_current_span().get_span_context().is_valid:
            parent = None
        return self.tracer.start_span(
            names.SPAN_TASK.format(task=task_id),
            context=parent,
            attributes={names.ATTR_TASK_ID: task_id, names.ATTR_TASK_ATTEMPT: attempt},
            links=links,
        )
