"""Trigger rules: when a task runs, given how its upstream tasks ended (internal).

``decide`` is the one rule table: from the counts of upstream outcomes so far it says
whether the task runs now (``RUN``), must wait for more upstreams (``WAIT``), or ends
without running in a terminal state. Rules decide as early as the counts allow: a failed
upstream makes an ``all_success`` task UPSTREAM_FAILED at once, a succeeded one starts a
``one_success`` task, without waiting for the slowest upstream. A failure wins over a skip
whatever the order: a skip decides only once every upstream ended.
"""

from __future__ import annotations

from typing import Final, Literal, TypeAlias

from orchestra.dag._state import TaskState

__all__ = [
    "AFTER_FAILURES",
    "EARLY_ON_SUCCESS",
    "RULES",
    "RUN",
    "WAIT",
    "TriggerRule",
    "decide",
]

TriggerRule: TypeAlias = Literal[
    "all_success",
    "all_done",
    "none_failed",
    "none_failed_min_one_success",
    "one_success",
    "one_failed",
    "all_failed",
    "all_skipped",
    "always",
]
"""When a task runs, given how its upstreams ended (a "failed" one FAILED or was
UPSTREAM_FAILED); each rule decides as early as it can:

- ``"all_success"`` (default): all SUCCEEDED; one failed: UPSTREAM_FAILED; one SKIPPED:
  SKIPPED (once all ended: a failure wins over a skip).
- ``"all_done"``: all ended, whatever their states.
- ``"none_failed"``: all ended, none failed; else UPSTREAM_FAILED.
- ``"none_failed_min_one_success"``: as ``none_failed``; SKIPPED if none SUCCEEDED.
- ``"one_success"``: one SUCCEEDED (at once); else UPSTREAM_FAILED or SKIPPED.
- ``"one_failed"``: one failed (at once); else SKIPPED.
- ``"all_failed"`` / ``"all_skipped"``: all failed / all SKIPPED; else SKIPPED.
- ``"always"``: at once, without waiting for its upstreams.

An upstream CANCELLED makes a waiting task CANCELLED (except ``all_done``, ``always``).
"""

RULES: Final[tuple[TriggerRule, ...]] = (
    "all_success",
    "all_done",
    "none_failed",
    "none_failed_min_one_success",
    "one_success",
    "one_failed",
    "all_failed",
    "all_skipped",
    "always",
)

RUN: Final = TaskState.RUNNING
"""``decide``'s answer: the task may run now."""
WAIT: Final = TaskState.PENDING
"""``decide``'s answer: more upstreams must end first (the task stays PENDING)."""

AFTER_FAILURES: Final = frozenset({"all_done", "always", "one_failed", "all_failed"})
"""Rules that run after upstream failures: ``fail_fast`` would cancel them first."""

EARLY_ON_SUCCESS: Final = frozenset({"one_success", "all_failed", "all_skipped"})
"""Rules that can decide before every upstream ended when an upstream succeeds."""

_UPSTREAM_FAILED: Final = TaskState.UPSTREAM_FAILED
_SKIPPED: Final = TaskState.SKIPPED
_CANCELLED: Final = TaskState.CANCELLED


def decide(
    rule: str, total: int, succeeded: int, failed: int, skipped: int, cancelled: int
) -> TaskState:
    """What a task with ``rule`` does, given how many of its ``total`` upstreams ended so.

    Args:
        rule: the task's trigger rule.
        total: how many upstreams it has.
        succeeded: how many SUCCEEDED.
        failed: how many FAILED or were UPSTREAM_FAILED.
        skipped: how many were SKIPPED.
        cancelled: how many were CANCELLED.

    Returns:
        ``RUN`` (RUNNING: it may run now), ``WAIT`` (PENDING: more upstreams must end),
        or the terminal ``TaskState`` it ends in without running.
    """
    if rule == "always" or not total:  # a task without upstreams runs, whatever its rule
        return RUN
    done = succeeded + failed + skipped + cancelled == total
    if rule == "all_success" or rule == "none_failed" or rule == "none_failed_min_one_success":
        if failed:
            return _UPSTREAM_FAILED
        if not done:
            return WAIT
        if cancelled:
            return _CANCELLED
        if rule == "all_success" and skipped:
            return _SKIPPED
        if rule == "none_failed_min_one_success" and not succeeded:
            return _SKIPPED
        return RUN
    if rule == "all_done":
        return RUN if done else WAIT
    if rule == "one_success":
        if succeeded:
            return RUN
        if not done:
            return WAIT
        return _UPSTREAM_FAILED if failed else _CANCELLED if cancelled else _SKIPPED
    if rule == "one_failed":
        if failed:
            return RUN
        if not done:
            return WAIT
        return _CANCELLED if cancelled else _SKIPPED
    if rule == "all_failed":
        if succeeded or skipped:
            return _SKIPPED
        if not done:
            return WAIT
        return _CANCELLED if cancelled else RUN
    if rule == "all_skipped":
        if succeeded or failed:
            return _SKIPPED
        if not done:
            return WAIT
        return _CANCELLED if cancelled else RUN
    raise ValueError(f"unknown trigger rule {rule!r}")  # Task refuses it before
