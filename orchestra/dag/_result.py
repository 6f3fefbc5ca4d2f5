"""``RunResult``: the outcome of a DAG run."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, final

import attrs

from orchestra._errors import HookError
from orchestra.dag._model import TaskState

__all__ = ["RunResult"]


@final
@attrs.frozen(repr=False, kw_only=True)
class RunResult:
    """The outcome of a DAG run.

    Attributes:
        ok: true when no task FAILED, UPSTREAM_FAILED or was CANCELLED.
        states: the terminal ``TaskState`` of every task, by id.
        outputs: the result of every SUCCEEDED task, by id.
        errors: the last error of every task that had one (the body's exception, or a
            ``TaskFailed`` for a task failed by a hook's decision), by id.
        attempts: how many attempts each task started (0 for tasks that never ran).
        run_id: the run's unique id (also in every hook context).
        reasons: why a task ended FAILED or SKIPPED when a decision said so (the
            decision's reason, which hook took it, a retry cap or budget), by id.
        hook_errors: every hook error recorded during the run, in order.
        durations: seconds each task that ran spent, all attempts and waits included.
        duration: seconds the whole run took.
        reused: the ids of the tasks whose output a resumed run reused from its journal
            (they ended SUCCEEDED without running).
        resumed_from: the id of the run this one resumed, if any.
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

    def count(self, state: TaskState) -> int:
        """How many tasks ended in ``state``."""
        return sum(1 for s in self.states.values() if s is state)

    def __repr__(self) -> str:
        # A summary: a full repr of a 10,000-task run is useless (and slow to build).
        counts = ", ".join(f"{state.value}={n}" for state in TaskState if (n := self.count(state)))
        return f"<RunResult ok={self.ok} {counts} run_id={self.run_id}>"
