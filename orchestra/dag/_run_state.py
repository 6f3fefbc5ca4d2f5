"""``RunState``: the one owner of a run's task states, counts and ready queue (internal).

Every other module of the engine asks it and calls its methods; none writes its fields.
A task goes PENDING -> (queued on ``ready``) -> RUNNING (``start``, once per attempt) ->
one terminal state, set by exactly one of ``succeed``, ``fail``, ``skip`` or ``cancel``.
Each of them goes through ``_end``, which counts the task and releases its dependents:
the one release loop. A dependent whose every upstream succeeded and whose
rule runs after successes is queued without asking its rule (the common case); any other
asks its ``Rule`` (``_gate``), which may queue it, keep it waiting, or end it without
running, whose own dependents are released in turn (iteratively: deep chains never
recurse).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Final, final

from orchestra.dag._rules import RUN, WAIT, Tally
from orchestra.dag._state import TaskState

if TYPE_CHECKING:
    from orchestra.dag._plan import Plan

__all__ = ["RunState"]

_PENDING: Final = TaskState.PENDING
_RUNNING: Final = TaskState.RUNNING
_SUCCEEDED: Final = TaskState.SUCCEEDED
_FAILED: Final = TaskState.FAILED
_SKIPPED: Final = TaskState.SKIPPED
_UPSTREAM_FAILED: Final = TaskState.UPSTREAM_FAILED
_CANCELLED: Final = TaskState.CANCELLED
_NOT_OK: Final = (_FAILED, _UPSTREAM_FAILED, _CANCELLED)  # a tuple: `in` by identity first
_QUEUED: Final = -1  # remaining[i] of a task queued or ended: upstreams that end later pass it


@final
class RunState:
    """States, attempts, outputs, errors, counts and the ready queue of one run.

    Args:
        plan: the run's plan.
        on_ended: called with each task's index once it reached its terminal state
            (before its dependents are released), or None.
    """

    __slots__ = (
        "_dependents",
        "_early",
        "_on_ended",
        "_plain",
        "_plan",
        "_remaining",
        "_unchosen",
        "attempts",
        "branches",
        "cleaning",
        "done",
        "errors",
        "not_ok",
        "order",
        "outputs",
        "ready",
        "reasons",
        "states",
        "total",
    )

    def __init__(self, plan: Plan, on_ended: Callable[[int], object] | None) -> None:
        n = len(plan.order)
        self._plan = plan
        self.order = plan.order
        self.total = n
        self.states: list[TaskState] = [_PENDING] * n
        self.attempts = [0] * n
        self.outputs: dict[str, Any] = {}
        self.errors: dict[str, BaseException] = {}
        self.reasons: dict[str, str] = {}
        self.branches: dict[str, tuple[str, ...]] = {}  # a branch task's chosen ids
        self.done = 0
        self.not_ok = 0
        self.cleaning = False  # after a fail_fast stop: only run_on_fail_fast tasks run
        self.ready: deque[int] = deque(plan.sources)
        self._remaining = plan.indegree.copy()
        self._dependents = plan.dependents
        self._early = plan.early
        # Whether a task is queued as soon as its last upstream succeeds: its rule runs
        # after successes and every upstream that ended so far succeeded.
        self._plain = plan.on_success.copy()
        self._unchosen: dict[int, frozenset[int]] = {}  # a branch's dependents to skip
        self._on_ended = on_ended
        for i in plan.always:  # rules that do not wait: queued at once
            if self._remaining[i]:
                self._remaining[i] = _QUEUED
                self.ready.append(i)

    # -- questions ------------------------------------------------------------------------

    @property
    def finished(self) -> bool:
        """Whether every task reached its terminal state."""
        return self.done >= self.total

    def unfinished(self) -> list[int]:
        """The tasks that did not reach a terminal state, in plan order."""
        return [i for i, state in enumerate(self.states) if not state.terminal]

    # -- the writers ----------------------------------------------------------------------

    def start(self, i: int) -> int:
        """Task ``i`` starts an attempt (RUNNING); its attempt number, 1-based."""
        self.states[i] = _RUNNING
        self.attempts[i] += 1
        return self.attempts[i]

    def succeed(
        self,
        i: int,
        output: Any,
        *,
        error: BaseException | None = None,
        reason: str | None = None,
        chosen: Iterable[int] | None = None,
    ) -> None:
        """Task ``i`` SUCCEEDED with ``output``.

        Args:
            i: the task.
            output: its output.
            error: the error a hook's ``Replace`` recovered, kept on the result.
            reason: why (a recovery), for ``RunResult.reasons``.
            chosen: for a branch task, the dependents to follow; the others end SKIPPED.
        """
        tid = self.order[i].id
        self.outputs[tid] = output
        if error is not None:
            self.errors[tid] = error
        if reason is not None:
            self.reasons[tid] = reason
        if chosen is not None:
            follow = frozenset(chosen)
            self.branches[tid] = tuple(self.order[d].id for d in sorted(follow))
            self._unchosen[i] = frozenset(self._dependents[i]) - follow
        self._end(i, _SUCCEEDED)

    def fail(self, i: int, error: BaseException, reason: str | None = None) -> None:
        """Task ``i`` FAILED with ``error`` (and ``reason``, when a decision gave one)."""
        tid = self.order[i].id
        self.errors[tid] = error
        if reason is not None:
            self.reasons[tid] = reason
        self._end(i, _FAILED)

    def skip(self, i: int, reason: str | None = None, error: BaseException | None = None) -> None:
        """Task ``i`` was SKIPPED (by a hook; ``error``: the failure the skip gave up)."""
        tid = self.order[i].id
        if error is not None:
            self.errors[tid] = error
        if reason is not None:
            self.reasons[tid] = reason
        self._end(i, _SKIPPED)

    def cancel(self, i: int, reason: str | None = None) -> None:
        """Task ``i`` was CANCELLED (the run was cancelled or stopped before it ended)."""
        if reason is not None:
            self.reasons[self.order[i].id] = reason
        self._end(i, _CANCELLED)

    def cancel_unfinished(self, reason: str | None = None) -> None:
        """End every task that did not end CANCELLED (the run is over: nothing is released)."""
        if self.finished:  # the usual end: no pass over the states
            return
        for i in self.unfinished():
            if reason is not None:
                self.reasons[self.order[i].id] = reason
            self.states[i] = _CANCELLED
            self.done += 1
            self.not_ok += 1
            if self._on_ended is not None:
                self._on_ended(i)

    def keep_for_cleanup(self) -> None:
        """After a ``fail_fast`` stop: only ``run_on_fail_fast`` tasks may still run.

        Every other task that did not end is CANCELLED now; the cleanup tasks' rules
        judge their upstreams as they ended, those CANCELLED included.
        """
        self.cleaning = True
        order = self.order
        self._plain = [
            plain and task.run_on_fail_fast for plain, task in zip(self._plain, order, strict=True)
        ]
        keep = [i for i in self.ready if order[i].run_on_fail_fast and not self.states[i].terminal]
        self.ready.clear()
        self.ready.extend(keep)
        for i in self.unfinished():
            if not order[i].run_on_fail_fast and not self.states[i].terminal:
                self.cancel(i)

    # -- how a task's end travels downstream ----------------------------------------------

    def _end(self, i: int, state: TaskState) -> None:
        """Record task ``i``'s terminal state, count it, and release its dependents.

        Releasing tells each dependent that an upstream ended: it is queued, keeps
        waiting, or ends without running, and then its own dependents are released.
        """
        self.states[i] = state
        self.done += 1
        if state in _NOT_OK:
            self.not_ok += 1
        self._remaining[i] = _QUEUED
        if self._on_ended is not None:
            self._on_ended(i)
        remaining = self._remaining
        dependents = self._dependents
        plain = self._plain
        early = self._early
        ready = self.ready
        stack = [i]
        while stack:
            j = stack.pop()
            succeeded = self.states[j] is _SUCCEEDED
            unchosen = self._unchosen.pop(j, None) if succeeded and self._unchosen else None
            for d in dependents[j]:
                left = remaining[d] - 1
                if left < 0:  # queued or ended already
                    continue
                remaining[d] = left
                if unchosen is not None and d in unchosen:  # a branch not taken
                    self._end_unrun(d, _SKIPPED, stack)
                    continue
                if not succeeded:
                    plain[d] = False  # its rule decides
                elif left:
                    if not early[d]:
                        continue
                elif plain[d]:  # every upstream succeeded: the common case
                    ready.append(d)
                    continue
                verdict = self._gate(d)
                if verdict is WAIT:
                    continue
                if verdict is RUN:
                    remaining[d] = _QUEUED
                    ready.append(d)
                else:
                    self._end_unrun(d, verdict, stack)

    def _end_unrun(self, d: int, state: TaskState, stack: list[int]) -> None:
        """Task ``d`` ends in ``state`` without running; its dependents are released next."""
        self.states[d] = state
        self.done += 1
        if state in _NOT_OK:
            self.not_ok += 1
        self._remaining[d] = _QUEUED
        if self._on_ended is not None:
            self._on_ended(d)
        stack.append(d)

    def _gate(self, d: int) -> TaskState:
        """What task ``d``'s trigger rule says now: ``RUN``, ``WAIT`` or its end state."""
        if self.cleaning and not self.order[d].run_on_fail_fast:
            return _CANCELLED  # fail_fast stopped the run: only cleanup tasks still run
        ups = self._plan.upstreams[d]
        if not ups:
            return RUN
        states = self.states
        succeeded = failed = skipped = cancelled = 0
        for u in ups:
            s = states[u]
            if s is _SUCCEEDED:
                succeeded += 1
            elif s is _FAILED or s is _UPSTREAM_FAILED:
                failed += 1
            elif s is _SKIPPED:
                skipped += 1
            elif s is _CANCELLED:
                cancelled += 1
        tally = Tally(len(ups), succeeded, failed, skipped, cancelled)
        return self._plan.rules[d].decide(tally)
