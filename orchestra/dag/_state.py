"""``TaskState``: where a task is in a run."""

from __future__ import annotations

import enum

__all__ = ["TaskState"]


class TaskState(enum.Enum):
    """The state of a task in a run; every task ends in exactly one terminal state.

    Attributes:
        PENDING: not started yet.
        RUNNING: an attempt is under way (or waiting to retry).
        SUCCEEDED: an attempt returned; its result is in ``RunResult.outputs``.
        FAILED: it raised and no hook retried it, or a hook answered ``Fail``.
        SKIPPED: a hook answered ``Skip``, or its trigger rule does not run it after how
            its upstreams ended, none failing (``all_success`` after a skipped upstream,
            ``one_failed`` when none failed: see ``TriggerRule``).
        UPSTREAM_FAILED: an upstream failed and its trigger rule does not run it.
        CANCELLED: the run was cancelled (or ``fail_fast`` stopped it) before it ended.
    """

    PENDING = "pending"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    SKIPPED = "skipped"
    UPSTREAM_FAILED = "upstream_failed"
    CANCELLED = "cancelled"

    def __repr__(self) -> str:
        """``TaskState.SUCCEEDED``: what ``print(result.states)`` shows, readable."""
        return f"TaskState.{self.name}"

    @property
    def terminal(self) -> bool:
        """Whether the state is final."""
        return self not in (TaskState.PENDING, TaskState.RUNNING)
