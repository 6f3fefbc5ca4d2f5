"""How a Prefect task run's states read in orchestra's terms, and its retry delays (internal)."""

from __future__ import annotations

from typing import Any, Final, final
from uuid import UUID

from prefect.client.schemas.objects import State
from prefect.context import TaskRunContext

from orchestra import TaskState

__all__ = ["SKIPPED", "Delays", "task_state"]

SKIPPED: Final = "Skipped"
"""The name of the ``Completed`` state a skipped task run ends in."""


def task_state(state: State[Any]) -> TaskState:
    """The orchestra ``TaskState`` a Prefect task run's final state stands for.

    ``Completed`` named ``"Skipped"`` (a hook's ``Skip``) is SKIPPED, other ``Completed``
    states SUCCEEDED; ``Failed`` and ``Crashed`` are FAILED; ``Pending`` named
    ``"NotReady"`` (an upstream task failed, so the run never started) is
    UPSTREAM_FAILED; ``Cancelled``/``Cancelling`` are CANCELLED; a state that is not final
    is PENDING or RUNNING.
    """
    if state.is_completed():
        return TaskState.SKIPPED if state.name == SKIPPED else TaskState.SUCCEEDED
    if state.is_failed() or state.is_crashed():
        return TaskState.FAILED
    if state.is_cancelled() or state.is_cancelling():
        return TaskState.CANCELLED
    if state.is_pending() and state.name == "NotReady":
        return TaskState.UPSTREAM_FAILED
    return TaskState.RUNNING if state.is_running() else TaskState.PENDING


@final
class Delays(list[float]):
    """The hooked task's ``retry_delay_seconds``, as Prefect shows them.

    They are the task's own delays, except for a retry a hook asked for, which waits the
    hook's delay.

    Prefect reads ``retry_delay_seconds`` (truth, then an item) right after
    ``retry_condition_fn`` agreed to retry, in the task run's context.
    """

    def __init__(self, own: list[float], decided: dict[UUID, float]) -> None:
        super().__init__(own or [0.0])
        self.decided = decided

    def _current(self) -> float | None:
        ctx = TaskRunContext.get()
        return None if ctx is None else self.decided.get(ctx.task_run.id)

    def __bool__(self) -> bool:
        delay = self._current()
        return bool(delay) if delay is not None else any(super().__iter__())

    def __getitem__(self, index: Any) -> Any:
        ctx = TaskRunContext.get()
        if ctx is not None and ctx.task_run.id in self.decided:
            return self.decided.pop(ctx.task_run.id)
        return super().__getitem__(index)
