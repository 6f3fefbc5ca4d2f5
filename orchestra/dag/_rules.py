"""Trigger rules: when a task runs, given how its upstream tasks ended (internal).

One small class per rule, chosen from one table (``RULES``, keyed by the rule's name).
A rule's ``decide`` reads a ``Tally`` of its upstreams' outcomes so far and says whether
the task runs now (``RUN``), must wait for more upstreams (``WAIT``), or ends without
running in a terminal state. Rules decide as early as the counts allow: a failed
upstream makes an ``all_success`` task UPSTREAM_FAILED at once, a succeeded one starts a
``one_success`` task, without waiting for the slowest upstream. A failure wins over a
skip whatever the order: a skip decides only once every upstream ended.

The class attributes say what the plan and the scheduler derive from a rule, so that a
new rule is one class here (and its name in ``TriggerRule``, which a test checks):

- ``runs_on_success``: it runs when every upstream SUCCEEDED (the scheduler then queues
  the task without asking ``decide``: the common case);
- ``decides_on_success``: it may decide before every upstream ended when one succeeds;
- ``runs_after_failures``: it runs after upstream failures, which ``fail_fast`` would
  cancel first (``DAG.validate(fail_fast=True)`` asks for ``run_on_fail_fast``);
- ``waits``: False for a rule that runs at once, without waiting for its upstreams.
"""

from __future__ import annotations

from typing import ClassVar, Final, Literal, NamedTuple, TypeAlias, final

from orchestra.dag._state import TaskState

__all__ = ["RULES", "RUN", "WAIT", "Rule", "Tally", "TriggerRule"]

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

RUN: Final = TaskState.RUNNING
"""``Rule.decide``'s answer: the task may run now."""
WAIT: Final = TaskState.PENDING
"""``Rule.decide``'s answer: more upstreams must end first (the task stays PENDING)."""

_UPSTREAM_FAILED: Final = TaskState.UPSTREAM_FAILED
_SKIPPED: Final = TaskState.SKIPPED
_CANCELLED: Final = TaskState.CANCELLED


class Tally(NamedTuple):
    """How a task's upstreams ended so far (``failed`` counts UPSTREAM_FAILED too)."""

    total: int
    succeeded: int = 0
    failed: int = 0
    skipped: int = 0
    cancelled: int = 0

    @property
    def done(self) -> bool:
        """Whether every upstream ended."""
        return self.succeeded + self.failed + self.skipped + self.cancelled == self.total


class Rule:
    """A trigger rule: one subclass per rule (see the module docstring)."""

    __slots__ = ()
    name: ClassVar[TriggerRule]
    runs_on_success: ClassVar[bool] = True
    decides_on_success: ClassVar[bool] = False
    runs_after_failures: ClassVar[bool] = False
    waits: ClassVar[bool] = True

    def decide(self, tally: Tally) -> TaskState:
        """``RUN``, ``WAIT``, or the terminal state the task ends in without running."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<trigger rule {self.name!r}>"


@final
class AllSuccess(Rule):
    """Every upstream SUCCEEDED."""

    __slots__ = ()
    name = "all_success"

    def decide(self, tally: Tally) -> TaskState:
        """A failure at once; a skip or a cancellation once all ended."""
        if tally.failed:
            return _UPSTREAM_FAILED
        if not tally.done:
            return WAIT
        if tally.cancelled:
            return _CANCELLED
        return _SKIPPED if tally.skipped else RUN


@final
class NoneFailed(Rule):
    """Every upstream ended, none failed."""

    __slots__ = ()
    name = "none_failed"

    def decide(self, tally: Tally) -> TaskState:
        """A failure at once; else once all ended."""
        if tally.failed:
            return _UPSTREAM_FAILED
        if not tally.done:
            return WAIT
        return _CANCELLED if tally.cancelled else RUN


@final
class NoneFailedMinOneSuccess(Rule):
    """As ``none_failed``, and SKIPPED when no upstream SUCCEEDED."""

    __slots__ = ()
    name = "none_failed_min_one_success"

    def decide(self, tally: Tally) -> TaskState:
        """A failure at once; else once all ended."""
        if tally.failed:
            return _UPSTREAM_FAILED
        if not tally.done:
            return WAIT
        if tally.cancelled:
            return _CANCELLED
        return RUN if tally.succeeded else _SKIPPED


@final
class AllDone(Rule):
    """Every upstream ended, whatever its state."""

    __slots__ = ()
    name = "all_done"
    runs_after_failures = True

    def decide(self, tally: Tally) -> TaskState:
        """Runs once all ended."""
        return RUN if tally.done else WAIT


@final
class OneSuccess(Rule):
    """One upstream SUCCEEDED (at once)."""

    __slots__ = ()
    name = "one_success"
    decides_on_success = True

    def decide(self, tally: Tally) -> TaskState:
        """Runs at the first success; else how the others ended."""
        if tally.succeeded:
            return RUN
        if not tally.done:
            return WAIT
        if tally.failed:
            return _UPSTREAM_FAILED
        return _CANCELLED if tally.cancelled else _SKIPPED


@final
class OneFailed(Rule):
    """One upstream failed (at once); SKIPPED when all ended without a failure."""

    __slots__ = ()
    name = "one_failed"
    runs_on_success = False
    runs_after_failures = True

    def decide(self, tally: Tally) -> TaskState:
        """Runs at the first failure."""
        if tally.failed:
            return RUN
        if not tally.done:
            return WAIT
        return _CANCELLED if tally.cancelled else _SKIPPED


@final
class AllFailed(Rule):
    """Every upstream failed; SKIPPED at the first that did not."""

    __slots__ = ()
    name = "all_failed"
    runs_on_success = False
    decides_on_success = True
    runs_after_failures = True

    def decide(self, tally: Tally) -> TaskState:
        """SKIPPED at the first success or skip."""
        if tally.succeeded or tally.skipped:
            return _SKIPPED
        if not tally.done:
            return WAIT
        return _CANCELLED if tally.cancelled else RUN


@final
class AllSkipped(Rule):
    """Every upstream was SKIPPED; SKIPPED at the first that was not."""

    __slots__ = ()
    name = "all_skipped"
    runs_on_success = False
    decides_on_success = True

    def decide(self, tally: Tally) -> TaskState:
        """SKIPPED at the first success or failure."""
        if tally.succeeded or tally.failed:
            return _SKIPPED
        if not tally.done:
            return WAIT
        return _CANCELLED if tally.cancelled else RUN


@final
class Always(Rule):
    """At once, without waiting for its upstreams."""

    __slots__ = ()
    name = "always"
    runs_after_failures = True
    waits = False

    def decide(self, tally: Tally) -> TaskState:
        """Always runs."""
        return RUN


RULES: Final[dict[str, Rule]] = {
    rule.name: rule
    for rule in (
        AllSuccess(),
        AllDone(),
        NoneFailed(),
        NoneFailedMinOneSuccess(),
        OneSuccess(),
        OneFailed(),
        AllFailed(),
        AllSkipped(),
        Always(),
    )
}
"""Every trigger rule, by name: the one table the plan and the scheduler ask."""
