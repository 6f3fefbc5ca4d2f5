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

import logging
import pickle
import threading
from collections.abc import Callable, Iterable, Sequence
from itertools import repeat
from typing import TYPE_CHECKING, Any, Final, TypeAlias, final

from orchestra.dag._model import TaskState
from orchestra.journal import Journal, Serializer, SQLiteJournal, TaskRecord
from orchestra.journal._codec import code_digest, digest
from orchestra.journal._stored import encode_plan

if TYPE_CHECKING:
    from orchestra.dag._model import Task

__all__ = [
    "NO_INPUTS",
    "REUSED",
    "SUCCEEDED",
    "BatchRecorder",
    "Plain",
    "PlanDigests",
    "Settled",
    "plan_digests",
]

logger: Final = logging.getLogger("orchestra.journal")

SUCCEEDED: Final = "succeeded"
_TASK_SUCCEEDED: Final = TaskState.SUCCEEDED
REUSED: Final = object()  # in place of a payload: the resumed run's record holds it
NO_INPUTS: Final = digest(b"")
_SMALL: Final = 64  # bytes: payloads this small have their digests kept, by payload

# One settled task on its way to the writer: index, state, attempts, duration, error,
# payload (bytes, None or REUSED), note. Text and digests are made in the writer thread.
Settled: TypeAlias = tuple[int, TaskState, int, float, "BaseException | None", Any, "str | None"]
# The common case, on lanes of their own: a task that SUCCEEDED at its first attempt and
# returned None, or an atom the writer serializes (``RunJournal.atoms``), by index: its
# duration and output are read from the run's ``durations`` and ``outputs``.
Plain: TypeAlias = int


class BatchRecorder:
    """Records batches of settled tasks; ``RunJournal`` fills these fields (internal)."""

    journal: Journal | None
    run_id: str
    ids: list[str]
    codes: list[str]
    inputs: list[str]  # per task: its input digest
    previous: dict[int, tuple[str, bytes]]  # reused: output digest, payload
    small: dict[bytes, str]  # digests of small payloads (None, True, 0...)
    stored: set[str]  # digests of the payloads this run's batches stored
    none_payload: bytes | None
    none_digest: str
    indexed: bool  # the journal stores records by plan index (``_record_indexed``)
    durations: dict[str, float]  # the run's, by task id: filled before a task is queued
    outputs: dict[str, Any]  # the run's, by task id: filled before a task is queued
    serializer: Serializer
    protocol: int | None  # the pickle protocol, when the serializer is PickleSerializer
    max_bytes: int
    tag: Callable[[bytes], str]  # a payload's tag under the journal key: its digest

    def serialize(self, i: int, output: Any) -> tuple[bytes | None, str | None]:
        """The payload of task ``i``'s output, or None and why it is not kept."""
        try:
            protocol = self.protocol
            if protocol is None:
                payload = self.serializer.dumps(output)
            else:  # PickleSerializer.dumps, one call shorter
                payload = pickle.dumps(output, protocol)
        except Exception as exc:
            note = f"output not kept (cannot serialize it: {type(exc).__name__}: {exc})"
        else:
            if len(payload) <= self.max_bytes:
                return payload, None
            note = (
                f"output not kept ({len(payload)} bytes serialized, over the "
                f"journal's cap of {self.max_bytes})"
            )
        logger.warning("journal: task %r: %s; it will run again on resume", self.ids[i], note)
        return None, note

    def write(self, lanes: list[list[Any]]) -> None:
        """Turn settled tasks into records (digests, error text) and write them as one batch.

        ``lanes``: the ``Plain`` tasks whose output is None, those whose output is an
        atom, then the ``Settled`` ones. Column by column, with C-level maps where it
        can: this runs for every task, in a thread that shares the interpreter lock with
        the event loop.
        """
        nones, atoms, settled = lanes
        payloads: dict[str, bytes] = {}
        plain = self._plain(nones, atoms, settled, payloads) if nones or atoms else None
        general = self._columns(settled, payloads) if settled else None
        stored = self.stored
        for known in payloads.keys() & stored:  # by an earlier batch of this run
            del payloads[known]
        journal = self.journal
        assert journal is not None
        if self.indexed:
            assert type(journal) is SQLiteJournal
            journal._record_indexed(self.run_id, plain or ((), (), None), general, payloads)
            stored.update(payloads)
            return
        records: list[TaskRecord] = []
        if plain is not None:
            index, durations, outputs = plain
            n = len(index)
            columns: Sequence[Iterable[Any]] = (
                [SUCCEEDED] * n,
                [1] * n,
                durations,
                [None] * n,
                [outputs] * n if isinstance(outputs, str) else outputs,
                [False] * n,
                [None] * n,
            )
            records += self._full(index, columns)
        if general is not None:
            records += self._full(general[0], general[1:])
        journal.record(self.run_id, records, payloads)
        stored.update(payloads)

    def _plain(
        self,
        nones: list[int],
        atoms: list[int],
        settled: list[Settled],
        payloads: dict[str, bytes],
    ) -> tuple[list[int], list[float], str | list[str]]:
        """``Plain`` tasks' indexes, durations and output digests (one, if all are None).

        Their durations and outputs (the atoms the writer serializes) are read from the
        run's. An output that cannot be kept (over the cap) makes its task a ``Settled``
        one, with the reason, in ``settled``.
        """
        index = nones + atoms
        tids = list(map(self.ids.__getitem__, index))
        durations = list(map(self.durations.__getitem__, tids))
        none_digest = self.none_digest
        if nones:
            assert self.none_payload is not None  # else no task is Plain with None
            payloads[none_digest] = self.none_payload
            if not atoms:
                return index, durations, none_digest
        first = len(nones)
        values = map(self.outputs.__getitem__, tids[first:])
        protocol = self.protocol
        assert protocol is not None  # only PickleSerializer's atoms are serialized here
        cap = self.max_bytes
        small = self.small
        dumps = pickle.dumps
        digests = [none_digest] * first
        dropped: list[int] = []
        for k, value in enumerate(values, first):
            payload = dumps(value, protocol)
            if len(payload) > cap:  # not kept: say why, as a Settled task
                note = self.serialize(index[k], value)[1]
                settled.append((index[k], _TASK_SUCCEEDED, 1, durations[k], None, None, note))
                dropped.append(k)
                continue
            out = small.get(payload) or self._digest(payload)
            digests.append(out)
            payloads[out] = payload
        if dropped:
            for k in reversed(dropped):
                del index[k], durations[k]
        return index, durations, digests

    def _full(self, index: Sequence[int], columns: Sequence[Iterable[Any]]) -> list[TaskRecord]:
        """``TaskRecord``s from records by plan index (``SQLiteJournal._record_indexed``'s)."""
        state, attempts, durations, errors, out_digests, reused, notes = columns
        return list(
            map(
                tuple.__new__,
                repeat(TaskRecord),
                zip(
                    map(self.ids.__getitem__, index),
                    state,
                    attempts,
                    durations,
                    errors,
                    map(self.codes.__getitem__, index),
                    map(self.inputs.__getitem__, index),
                    out_digests,
                    reused,
                    notes,
                    strict=True,
                ),
            )
        )

    def _columns(self, batch: list[Settled], payloads: dict[str, bytes]) -> list[Sequence[Any]]:
        """Settled tasks as columns of records by plan index; their payloads into ``payloads``."""
        n = len(batch)
        index, states, attempts, durations, errors, payloads_in, notes = zip(*batch, strict=True)
        if states.count(_TASK_SUCCEEDED) == n:
            values: Sequence[str] = [SUCCEEDED] * n
        else:
            values = [s._value_ for s in states]
        if errors.count(None) != n:
            errors = tuple(None if e is None else f"{type(e).__name__}: {e}" for e in errors)
        none_payload = self.none_payload
        if none_payload is not None and payloads_in.count(none_payload) == n:  # all None
            out_digests: Sequence[str | None] = [self.none_digest] * n
            payloads[self.none_digest] = none_payload
            reused: Sequence[bool] = [False] * n
        else:
            out_digests, reused = self._digests(index, payloads_in, payloads)
        return [index, values, attempts, durations, errors, out_digests, reused, notes]

    def _digests(
        self, index: Sequence[int], payloads_in: Sequence[Any], payloads: dict[str, bytes]
    ) -> tuple[list[str | None], list[bool]]:
        """Output digests and reused flags of a batch; its payloads go into ``payloads``."""
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
            else:
                out_digest = self._digest(payload)
            if out_digest is not None:
                payloads[out_digest] = payload
            out_digests.append(out_digest)
            reused.append(was_reused)
        return out_digests, reused

    def _digest(self, payload: bytes) -> str:
        """The tag of ``payload``, its digest (those of small ones, often alike, are kept)."""
        if len(payload) > _SMALL:
            return self.tag(payload)
        found = self.small.get(payload)
        if found is None:
            found = self.small[payload] = self.tag(payload)
        return found


@final
class PlanDigests:
    """What every run of a plan shares: task ids, input and code digests (internal)."""

    __slots__ = ("_stored", "codes", "ids", "inputs")

    def __init__(self, ids: list[str], inputs: list[str], codes: list[str]) -> None:
        self.ids = ids
        self.inputs = inputs
        self.codes = codes
        self._stored: tuple[str, bytes] | None = None

    def stored(self) -> tuple[str, bytes]:
        """The plan's digest and stored form, for ``SQLiteJournal._begin_planned_run``."""
        stored = self._stored
        if stored is None:
            stored = self._stored = encode_plan((self.ids, self.codes, self.inputs))
        return stored


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
    digests = PlanDigests(ids, inputs, [by_fn[id(fn)] for fn in fns])
    with _plan_lock:
        _plans[id(order)] = (order, digests)
        while len(_plans) > _PLANS_KEPT:
            del _plans[next(iter(_plans))]
    return digests
