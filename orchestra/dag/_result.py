"""``RunResult``: the outcome of a DAG run."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping, Sequence, ValuesView
from typing import Any, TypeVar, final

import attrs

from orchestra._errors import HookError, TaskFailed
from orchestra._spending import BudgetUse
from orchestra._tracebacks import format_error
from orchestra.dag._model import TaskState

__all__ = ["Column", "RunResult"]

_V = TypeVar("_V")


@final
class Column(Mapping[str, _V]):
    """A read-only mapping of task ids to one column of the run's arrays (internal).

    ``RunResult.states`` and ``attempts`` are views over the scheduler's own lists, in
    the plan's order: building dicts of a 100,000-task run would stall the loop at its end.
    """

    __slots__ = ("_index", "_values")

    def __init__(self, index: Mapping[str, int], values: Sequence[_V]) -> None:
        self._index = index
        self._values = values

    def __getitem__(self, task_id: str) -> _V:
        return self._values[self._index[task_id]]

    def __iter__(self) -> Iterator[str]:
        return iter(self._index)

    def __len__(self) -> int:
        return len(self._index)

    def __contains__(self, task_id: object) -> bool:
        return task_id in self._index

    def values(self) -> ValuesView[_V]:
        """The values, in the plan's order (straight from the column)."""
        return _ColumnValues(self)

    def __repr__(self) -> str:
        return repr(dict(zip(self._index, self._values, strict=True)))

    def __reduce__(self) -> tuple[Any, ...]:
        return (dict, (dict(zip(self._index, self._values, strict=True)),))


class _ColumnValues(ValuesView[_V]):
    _mapping: Column[_V]

    def __iter__(self) -> Iterator[_V]:
        return iter(self._mapping._values)


@final
@attrs.frozen(repr=False, kw_only=True)
class RunResult:
    """The outcome of a DAG run.

    Attributes:
        ok: true when no task FAILED, UPSTREAM_FAILED or was CANCELLED.
        states: the terminal ``TaskState`` of every task, by id.
        outputs: the result of every SUCCEEDED task, by id.
        errors: the last error of every task that had one (the body's exception, or a
            ``TaskFailed`` for a task failed by a hook's decision), by id; also of a task
            a hook's ``Replace`` recovered (it SUCCEEDED).
        attempts: how many attempts each task started (0 for tasks that never ran).
        run_id: the run's unique id (also in every hook context).
        reasons: why a task ended as it did when a decision said so (the decision's
            reason, which hook took it, a retry cap or budget, a ``before_run`` that
            failed the run, a ``Replace`` that recovered a failure), by id.
        hook_errors: every hook error recorded during the run, in order.
        durations: seconds each task that ran spent, all attempts and waits included.
        duration: seconds the whole run took.
        reused: the ids of the tasks whose output a resumed run reused from its journal
            (they ended SUCCEEDED without running).
        resumed_from: the id of the run this one resumed, if any.
        resume_notes: why tasks that the resumed run had SUCCEEDED, with unchanged code
            and inputs, ran again anyway, by id: their journaled output failed
            authentication (it was not written with this journal key, or was changed
            since: it is never deserialized) or could not be loaded.
        messages: what hooks added with ``ctx.add_message`` for a task (its last
            attempt and its ``on_end``), by id, for the tasks that have some.
        branches: for each branch task (``branch=True``) that SUCCEEDED, the ids of the
            direct downstream tasks it chose to follow, by id (the others ended SKIPPED).
        budgets: what the run spent of each ``Budget`` among its hooks, in order
            (``BudgetUse``: used per kind, and each "would exceed" in audit mode).
    """

    ok: bool
    states: Mapping[str, TaskState]
    outputs: Mapping[str, Any]
    errors: Mapping[str, BaseException]
    attempts: Mapping[str, int]
    run_id: str
    reasons: Mapping[str, str] = attrs.field(factory=dict)
    hook_errors: Sequence[HookError] = ()
    durations: Mapping[str, float] = attrs.field(factory=dict)
    duration: float = 0.0
    reused: frozenset[str] = frozenset()
    resumed_from: str | None = None
    resume_notes: Mapping[str, str] = attrs.field(factory=dict)
    messages: Mapping[str, tuple[str, ...]] = attrs.field(factory=dict)
    branches: Mapping[str, tuple[str, ...]] = attrs.field(factory=dict)
    budgets: tuple[BudgetUse, ...] = ()

    @property
    def tracebacks(self) -> dict[str, str]:
        """The failing frames of each task's error, by id: the user's code, library folded.

        One entry per task in ``errors`` whose error was raised (a task failed by a hook's
        decision has none), formatted as Python does, with the frames of the engine,
        orchestra and site-packages folded into a count; made when asked. For every frame,
        ``traceback.print_exception(result.errors[task_id])``.
        """
        out: dict[str, str] = {}
        for task_id, error in self.errors.items():
            text = format_error(error)
            if text is not None:
                out[task_id] = text
        return out

    def count(self, state: TaskState) -> int:
        """How many tasks ended in ``state``."""
        return sum(1 for s in self.states.values() if s is state)

    def raise_for_failures(self) -> None:
        """Raise ``TaskFailed`` naming every task that did not end well; nothing if ``ok``.

        The message lists the FAILED tasks (each with its error or reason), then the
        UPSTREAM_FAILED and CANCELLED ones; ``error.task_ids`` has them all, and the
        first failed task's error is the ``__cause__``.

        Raises:
            TaskFailed: the run is not ``ok``.
        """
        if self.ok:
            return
        by_state: dict[TaskState, list[str]] = {}
        for tid, state in self.states.items():
            by_state.setdefault(state, []).append(tid)
        # an error with no task state is the run's own end (a bridge's BudgetExceeded)
        ended = [tid for tid in self.errors if tid not in self.states]
        failed = [*by_state.get(TaskState.FAILED, []), *ended]
        parts = []
        if failed:
            parts.append("failed: " + ", ".join(f"{tid!r} ({self._why(tid)})" for tid in failed))
        for state in (TaskState.UPSTREAM_FAILED, TaskState.CANCELLED):
            ids = by_state.get(state, [])
            if ids:
                why = {self.reasons.get(tid) for tid in ids} - {None}
                reason = f" ({why.pop()})" if len(why) == 1 else ""
                parts.append(f"{state.value}: {', '.join(map(repr, ids))}{reason}")
        task_ids = (
            *failed,
            *by_state.get(TaskState.UPSTREAM_FAILED, ()),
            *by_state.get(TaskState.CANCELLED, ()),
        )
        error = TaskFailed(
            task_ids[0], None, task_ids=task_ids, message=f"run {self.run_id}: {'; '.join(parts)}"
        )
        raise error from self.errors.get(failed[0]) if failed else None

    def _why(self, task_id: str) -> str:
        error = self.errors.get(task_id)
        if isinstance(error, TaskFailed) or error is None:
            return self.reasons.get(task_id) or "failed"
        return f"{type(error).__name__}: {error}"

    def __repr__(self) -> str:
        # A summary: a full repr of a 10,000-task run is useless (and slow to build).
        # asyncio's runner formats the finished main task, its result included, when it
        # returns: one pass over the states (a C loop), not one per state.
        tally = Counter(self.states.values())
        counts = ", ".join(f"{state.value}={tally[state]}" for state in TaskState if tally[state])
        return f"<RunResult ok={self.ok} {counts} run_id={self.run_id}>"
