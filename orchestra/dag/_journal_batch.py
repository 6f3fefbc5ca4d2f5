"""The writer thread's half of a journaled run: settled tasks into records, by batch.

``BatchRecorder`` (a base of ``RunJournal``) turns what the event loop queued for each
settled task (index, state, attempts, duration, error, payload, note) into the store's
records, column by column: error text, output digests. ``plan_digests`` makes what is the
same for every run of a plan once: task ids, code digests and input digests.

A task's input digest covers its upstreams' ids, in order. What they output is covered
by the rule that reuses a task only when every upstream of it is reused too: a reused
upstream hands on the output it had in the journaled run, the output its dependents
ran with there (a task's output is serialized as it settles, before any dependent
starts), so comparing their output digests again would compare equal values.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from itertools import repeat
from typing import TYPE_CHECKING, Any, Final, TypeAlias

from orchestra.dag._model import TaskState
from orchestra.journal import Journal, SQLiteJournal, TaskRecord
from orchestra.journal._codec import code_digest, digest

if TYPE_CHECKING:
    from orchestra.dag._model import Task

__all__ = ["NO_INPUTS", "REUSED", "SUCCEEDED", "BatchRecorder", "Settled", "plan_digests"]

SUCCEEDED: Final = "succeeded"
_TASK_SUCCEEDED: Final = TaskState.SUCCEEDED
REUSED: Final = object()  # in place of a payload: the resumed run's record holds it
NO_INPUTS: Final = digest(b"")

# One settled task on its way to the writer: index, state, attempts, duration, error,
# payload (bytes, None or REUSED), note. Text and digests are made in the writer thread.
Settled: TypeAlias = tuple[int, TaskState, int, float, "BaseException | None", Any, "str | None"]


class BatchRecorder:
    """Records batches of settled tasks; ``RunJournal`` fills these fields (internal)."""

    journal: Journal | None
    run_id: str
    ids: list[str]
    codes: list[str]
    inputs: list[str]  # per task: its input digest
    previous: dict[int, tuple[str, bytes]]  # reused: output digest, payload
    small: dict[bytes, str]  # digests of small payloads (None, True, 0...)
    none_payload: bytes | None
    none_digest: str

    def write(self, batch: list[Settled]) -> None:
        """Turn settled tasks into records (digests, error text) and write them as one batch.

        Column by column, with C-level maps where it can: this runs for every task, in a
        thread that shares the interpreter lock with the event loop.
        """
        n = len(batch)
        index, states, attempts, durations, errors, payloads_in, notes = zip(*batch, strict=True)
        ids = self.ids
        task_ids = list(map(ids.__getitem__, index))
        if states.count(_TASK_SUCCEEDED) == n:
            values: Sequence[str] = [SUCCEEDED] * n
        else:
            values = [s._value_ for s in states]
        if errors.count(None) != n:
            errors = tuple(None if e is None else f"{type(e).__name__}: {e}" for e in errors)
        payloads: dict[str, bytes] = {}
        none_payload = self.none_payload
        if none_payload is not None and payloads_in.count(none_payload) == n:  # all None
            out_digests: Sequence[str | None] = [self.none_digest] * n
            payloads[self.none_digest] = none_payload
            reused: Sequence[bool] = [False] * n
        else:
            out_digests, reused = self._digests(index, payloads_in, payloads)
        columns = (
            task_ids,
            values,
            attempts,
            durations,
            errors,
            list(map(self.codes.__getitem__, index)),
            list(map(self.inputs.__getitem__, index)),
            out_digests,
            reused,
            notes,
        )
        journal = self.journal
        if type(journal) is SQLiteJournal:  # stores batches as columns
            journal.record_columns(self.run_id, columns, payloads)
        else:
            assert journal is not None
            records = list(map(tuple.__new__, repeat(TaskRecord), zip(*columns, strict=True)))
            journal.record(self.run_id, records, payloads)

    def _digests(
        self, index: Sequence[int], payloads_in: Sequence[Any], payloads: dict[str, bytes]
    ) -> tuple[list[str | None], list[bool]]:
        """Output digests and reused flags of a batch; its payloads go into ``payloads``."""
        small = self.small
        none_payload = self.none_payload
        none_digest = self.none_digest
        out_digests: list[str | None] = []
        reused: list[bool] = []
        for i, payload in zip(index, payloads_in, strict=True):
            was_reused = False
            if payload is None:
                out_digest: str | None = None
            elif payload is none_payload:
                out_digest = none_digest
            elif payload is REUSED:
                out_digest, payload = self.previous[i]
                was_reused = True
            elif len(payload) <= 64:
                out_digest = small.get(payload)
                if out_digest is None:
                    out_digest = small[payload] = digest(payload)
            else:
                out_digest = digest(payload)
            if out_digest is not None:
                payloads[out_digest] = payload
            out_digests.append(out_digest)
            reused.append(was_reused)
        return out_digests, reused


# ids, input digests, code digests
PlanDigests: TypeAlias = tuple[list[str], list[str], list[str]]
_plan_lock = threading.Lock()
_plans: dict[int, tuple[Sequence[Task], PlanDigests]] = {}  # id(order) -> digests, a few
_PLANS_KEPT: Final = 8


def plan_digests(order: Sequence[Task], upstreams: Sequence[tuple[int, ...]]) -> PlanDigests:
    """Task ids, input digests and code digests of a plan (kept for its next runs).

    A DAG keeps its plan (and so its ``order``) until it changes, and tasks are frozen,
    so these are computed once per DAG, not once per run.
    """
    with _plan_lock:
        found = _plans.get(id(order))
        if found is not None and found[0] is order:
            return found[1]
    ids = [t.id for t in order]
    keys = [f"{t.id}\0".encode() for t in order]
    inputs = [
        digest(b"".join([keys[u] for u in ups]) + b"\0") if ups else NO_INPUTS for ups in upstreams
    ]
    fns = [t.fn for t in order]
    by_fn = {id(fn): code_digest(fn) for fn in {id(fn): fn for fn in fns}.values()}
    digests = (ids, inputs, [by_fn[id(fn)] for fn in fns])
    with _plan_lock:
        _plans[id(order)] = (order, digests)
        while len(_plans) > _PLANS_KEPT:
            del _plans[next(iter(_plans))]
    return digests
