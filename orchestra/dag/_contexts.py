"""The hook contexts of a DAG run's tasks (internal).

``end_context`` is what ``on_end`` gets (the last attempt's, or attempt 0 for a task that
never started); the context of an attempt under way is made by ``_attempt.hooks_at``.
Both read the task's upstream states through a live, read-only view of the run's states
(``upstream_states``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, final

from orchestra._hooks import NO_INPUTS, TaskHookContext, task_context
from orchestra.dag._state import TaskState

if TYPE_CHECKING:
    from orchestra.dag._model import Task
    from orchestra.dag._scheduler import _Run

__all__ = ["end_context", "upstream_states"]


def end_context(run: _Run, i: int) -> TaskHookContext:
    """The context of task ``i``'s ``on_end``: its last attempt's, or attempt 0."""
    task = run.state.order[i]
    ran = run.ends.pop(i, None)
    if ran is None:  # it never started
        errors, started, inputs, notes = (), 0.0, NO_INPUTS, []
    else:
        errors, started, inputs, notes = ran
    return task_context(
        task,
        run.state.attempts[i],
        task.agent,
        run.run_id,
        errors,
        started,
        inputs,
        upstream_states(run, i),
        notes,
    )


def upstream_states(run: _Run, i: int) -> Mapping[str, TaskState]:
    """Task ``i``'s upstream states by id: a live view of the run's states."""
    view = run.up_views.get(i)
    if view is None:
        ups = run.plan.upstreams[i]
        if not ups:
            return NO_INPUTS
        view = run.up_views[i] = _Upstreams(ups, run.state.order, run.state.states)
    return view


@final
class _Upstreams(Mapping[str, TaskState]):
    """A task's upstream states by id: a live, read-only view of the run's states."""

    __slots__ = ("_order", "_states", "_ups")

    def __init__(
        self, ups: tuple[int, ...], order: Sequence[Task], states: list[TaskState]
    ) -> None:
        self._ups = ups  # built per task while it runs: the id lookups wait until asked
        self._order = order
        self._states = states

    def __getitem__(self, task_id: str) -> TaskState:
        for u in self._ups:
            if self._order[u].id == task_id:
                return self._states[u]
        raise KeyError(task_id)

    def __iter__(self) -> Iterator[str]:
        return (self._order[u].id for u in self._ups)

    def __len__(self) -> int:
        return len(self._ups)

    def __repr__(self) -> str:
        return repr(dict(self))
