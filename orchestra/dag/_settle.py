"""Settling a task: its terminal state, and what it releases downstream (internal).

``settle`` records a task's end and asks each dependent's trigger rule what follows: a
dependent may run (it joins the ready deque), wait for more upstreams, or end without
running, which settles its own dependents in turn (iteratively: deep chains never
recurse). The usual case, a task that SUCCEEDED releasing dependents whose upstreams all
succeeded, takes a short path with no rule to ask.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from orchestra.dag._rules import RUN, WAIT, Tally
from orchestra.dag._state import TaskState

if TYPE_CHECKING:
    from orchestra.dag._scheduler import _Run

__all__ = ["gate", "release_rest", "settle"]

_SUCCEEDED: Final = TaskState.SUCCEEDED
_FAILED: Final = TaskState.FAILED
_SKIPPED: Final = TaskState.SKIPPED
_UPSTREAM_FAILED: Final = TaskState.UPSTREAM_FAILED
_CANCELLED: Final = TaskState.CANCELLED
_NOT_OK: Final = (_FAILED, _UPSTREAM_FAILED, _CANCELLED)


def settle(run: _Run, i: int, state: TaskState) -> None:
    """Record task ``i``'s terminal state and release (or settle) its dependents.

    A dependent's trigger rule is asked when its last upstream ended, or earlier when
    the upstream that ended did not succeed (or its rule decides on a success): it
    may run, or end, before its slowest upstream. ``remaining`` is -1 for a task
    queued or ended that way, so the upstreams that end later pass it by. The worker
    that settled a task wakes idle workers for the ready work (``_workers.wake``).
    """
    run.states[i] = state
    run.done += 1
    remaining = run.remaining
    remaining[i] = -1  # ended: upstreams that end later pass it by
    if run.has_on_end:
        run.ending.append(i)
    if run.remote is not None:
        run.remote.ended(i, run.outputs)
    if state is _SUCCEEDED:
        _release(run, run.dependents[i], None)
    else:
        if state in _NOT_OK:
            run.not_ok += 1
        _cascade(run, [i])


def release_rest(run: _Run, i: int, d: int, left: int) -> None:
    """Finish settling task ``i``, which SUCCEEDED, from its dependent ``d`` on.

    A worker settles a task in line while each dependent it meets needs no rule
    (``settle``'s common case); at the first that does, ``d`` (``left`` of its upstreams
    still to end), this asks its rule and goes on with the dependents after it.
    """
    dependents = run.dependents[i]
    ended = [d] if _ask(run, d, left) else None
    _release(run, dependents[dependents.index(d) + 1 :], ended)


def _release(run: _Run, dependents: list[int], ended: list[int] | None) -> None:
    """Release ``dependents`` of a task that SUCCEEDED, then settle those that ended.

    A worker runs this loop in line for a body that succeeded (``_workers``, the hot
    path): a change here is a change there.
    """
    ready = run.ready
    remaining = run.remaining
    early = run.early_on_success
    plain = run.runs_on_success
    for d in dependents:
        left = remaining[d] - 1
        if left < 0:  # queued or ended already
            continue
        remaining[d] = left
        if left:
            if not early[d]:
                continue
        elif plain[d]:  # the common case: every upstream succeeded
            ready.append(d)
            continue
        if _ask(run, d, left):
            if ended is None:
                ended = [d]
            else:
                ended.append(d)
    if ended is not None:
        _cascade(run, ended)


def _cascade(run: _Run, stack: list[int]) -> None:
    """Settle the dependents of the tasks on ``stack``, which ended; and theirs, and so on."""
    states = run.states
    remaining = run.remaining
    dependents = run.dependents
    early = run.early_on_success
    plain = run.runs_on_success
    ready = run.ready
    while stack:
        j = stack.pop()
        succeeded = states[j] is _SUCCEEDED
        for d in dependents[j]:
            left = remaining[d] - 1
            if left < 0:  # queued or ended already
                continue
            remaining[d] = left
            if not succeeded:
                plain[d] = False  # its rule decides
            elif left:
                if not early[d]:
                    continue
            elif plain[d]:
                ready.append(d)
                continue
            if _ask(run, d, left):
                stack.append(d)


def _ask(run: _Run, d: int, left: int) -> bool:
    """Act on task ``d``'s trigger rule; True when it ended without running."""
    rule = gate(run, d)
    if rule is WAIT:
        return False
    if left:
        run.remaining[d] = -1  # decided before its last upstream ended
    if rule is RUN:
        run.ready.append(d)
        return False
    run.states[d] = rule
    run.remaining[d] = -1
    run.done += 1
    if rule is not _SKIPPED:  # UPSTREAM_FAILED or CANCELLED
        run.not_ok += 1
    if run.has_on_end:
        run.ending.append(d)
    if run.remote is not None:
        run.remote.ended(d, run.outputs)
    return True


def gate(run: _Run, d: int) -> TaskState:
    """What task ``d``'s trigger rule says now: ``RUN``, ``WAIT`` or its end state."""
    task = run.order[d]
    if run.cleaning and not task.run_on_fail_fast:
        return _CANCELLED  # fail_fast stopped the run: only cleanup tasks still run
    states = run.states
    succeeded = failed = skipped = cancelled = 0
    ups = run.upstreams[d]
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
    if not ups:  # a task without upstreams runs, whatever its rule
        return RUN
    return run.plan.rules[d].decide(Tally(len(ups), succeeded, failed, skipped, cancelled))
