"""The scheduler's one seam to a run journal: what to reuse, and recording what settles.

``RunJournal.start`` (before any task runs, in a thread) opens the journal, finds the run
to resume and decides which tasks it reuses: a task is reused when the resumed run has it
SUCCEEDED with a kept payload, its function's code digest is unchanged, its inputs'
digest (each upstream's id and output digest) is unchanged, and every upstream of it is
reused too (so a task that re-runs re-runs everything downstream). ``settled`` and
``reused`` are called on the event loop as tasks end: a serialization and a deque append;
digests, records and store transactions happen in the journal's writer thread.
``finish`` records the tasks that ended without running and waits for the writer.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from hashlib import blake2b
from itertools import repeat
from typing import TYPE_CHECKING, Any, Final, TypeAlias, final

import anyio
import anyio.to_thread

from orchestra._errors import JournalError
from orchestra.dag._model import TaskState
from orchestra.journal import (
    DEFAULT_MAX_BYTES,
    Journal,
    JournaledRun,
    PickleSerializer,
    RunInfo,
    Serializer,
    SQLiteJournal,
    TaskRecord,
)
from orchestra.journal._codec import code_digest, digest
from orchestra.journal._sqlite import acquire_shared, release_shared
from orchestra.journal._writer import BatchWriter

if TYPE_CHECKING:
    from orchestra.dag._model import DAG, Task

__all__ = ["JournalArg", "RunJournal"]

logger: Final = logging.getLogger("orchestra.journal")

JournalArg: TypeAlias = "str | os.PathLike[str] | Journal"
"""What ``run(journal=...)`` takes: a path (the embedded SQLite journal) or a ``Journal``."""

_SUCCEEDED: Final = "succeeded"
_ATOMS: Final = frozenset({type(None), bool, int, float, complex, str, bytes})
_TASK_SUCCEEDED: Final = TaskState.SUCCEEDED
_REUSED: Final = object()  # in place of a payload: the resumed run's record holds it
_LIST_IDS: Final = 5  # run ids an unknown-run error lists

# One settled task on its way to the writer: index, state, attempts, duration, error,
# payload (bytes, None or _REUSED), note. Text and digests are made in the writer thread.
_Settled: TypeAlias = tuple[int, TaskState, int, float, "BaseException | None", Any, "str | None"]


@final
class RunJournal:
    """One journaled run: the scheduler's seam to a ``Journal`` (internal)."""

    @classmethod
    def create(
        cls, journal: JournalArg | None, resume: str | None, serializer: Serializer | None
    ) -> RunJournal | None:
        """Check ``run()``'s journal arguments; None when the run is not journaled."""
        if journal is None:
            if resume is not None:
                raise ValueError("resume= needs a journal=: the journal of the run to resume")
            if serializer is not None:
                raise ValueError("serializer= needs a journal=")
            return None
        if resume is not None and (not isinstance(resume, str) or not resume):
            raise ValueError(f'resume must be a run id or "last", got {resume!r}')
        if serializer is None:
            serializer = PickleSerializer()
        elif not isinstance(serializer, Serializer):
            raise TypeError(
                f"serializer must have dumps(obj) -> bytes and loads(bytes), got {serializer!r}"
            )
        if isinstance(journal, (str, os.PathLike, Journal)):
            return cls(journal, resume, serializer)
        raise TypeError(
            f"journal must be a path (the SQLite journal) or a Journal, got {journal!r}"
        )

    def __init__(self, journal: JournalArg, resume: str | None, serializer: Serializer) -> None:
        self.given = journal
        self.journal: Journal | None = None
        self.resume = resume
        self.serializer = serializer
        self.max_bytes: int = getattr(serializer, "max_bytes", DEFAULT_MAX_BYTES)
        self.resumed_from: str | None = None
        self.reused_ids: list[str] = []
        self.reused_index: set[int] = set()
        self.run_id = ""
        self.ids: list[str] = []
        self.prefixes: list[bytes] = []  # per task: its upstreams' ids, digested first
        self.upstreams: Sequence[tuple[int, ...]] = ()
        self.codes: list[str] = []
        self.out_digests: list[bytes] = []  # what each task's dependents' inputs digest
        self.previous: dict[int, tuple[str, bytes]] = {}  # reused: output digest, payload
        self.reused_inputs: dict[int, str] = {}  # reused: input digest
        self.small: dict[bytes, str] = {}  # digests of small payloads (None, True, 0...)
        self.writer: BatchWriter[_Settled] | None = None
        self.put: Callable[[_Settled], None] = _not_started
        # None, the most common output (tasks run for their effects), serialized once
        try:
            none_payload: bytes | None = serializer.dumps(None)
        except Exception:  # a serializer that cannot: each None goes through serialize()
            none_payload = None
        self.none_payload = none_payload
        self.none_digest = digest(none_payload) if none_payload is not None else ""
        self.keeps_outputs = True
        self.any_deps = False
        self.shared: SQLiteJournal | None = None  # borrowed for a path given as journal=

    # -- before the run -------------------------------------------------------------------

    async def start(
        self,
        dag: DAG,
        run_id: str,
        order: Sequence[Task],
        upstreams: Sequence[tuple[int, ...]],
        *,
        outputs: bool = True,
    ) -> dict[int, Any]:
        """Open the journal, begin the run; the outputs of the tasks to reuse, by index.

        ``outputs=False`` (an executor whose outputs stay remote): the run's outputs are
        handles, not values, so none is kept and none is reused; states are journaled.
        """
        if not outputs:
            self.keeps_outputs = False
            if self.resume is not None:
                logger.warning(
                    "journal: the executor keeps outputs remote, so resume=%r reuses no task",
                    self.resume,
                )
        return await anyio.to_thread.run_sync(self._start, dag.name, run_id, order, upstreams)

    def _start(
        self, name: str, run_id: str, order: Sequence[Task], upstreams: Sequence[tuple[int, ...]]
    ) -> dict[int, Any]:
        given = self.given
        shared = None if isinstance(given, Journal) else acquire_shared(given)
        journal = self.journal = given if isinstance(given, Journal) else shared
        assert journal is not None
        try:
            self.run_id = run_id
            self.ids, self.prefixes, self.codes = _plan_digests(order, upstreams)
            self.upstreams = upstreams
            self.any_deps = any(upstreams)
            self.out_digests = [b""] * len(order)
            reuse: dict[int, Any] = {}
            if self.resume is not None:
                previous = self._find(journal, name)
                self.resumed_from = previous.info.run_id
                if self.keeps_outputs:
                    reuse = self._plan(previous)
            journal.begin_run(
                RunInfo(
                    run_id=run_id,
                    dag=name,
                    started_at=time.time(),
                    task_count=len(order),
                    resumed_from=self.resumed_from,
                )
            )
        except BaseException:
            if shared is not None:
                release_shared(shared)
            raise
        self.shared = shared
        self.writer = BatchWriter(self._write, name=f"orchestra-journal-{run_id[:8]}")
        self.put = self.writer.put
        return reuse

    def _find(self, journal: Journal, name: str) -> JournaledRun:
        """The run ``resume=`` names (or the DAG's last one)."""
        if self.resume == "last":
            latest = journal.list_runs(name, limit=1)
            found = journal.load_run(latest[0].run_id) if latest else None
            if found is None:
                raise JournalError(
                    f"journal {journal} has no run of DAG {name!r} to resume", journal=str(journal)
                )
            return found
        assert self.resume is not None
        found = journal.load_run(self.resume)
        if found is None or found.info.dag != name:
            ids = [r.run_id for r in journal.list_runs(name, limit=_LIST_IDS)]
            other = f" (it is a run of DAG {found.info.dag!r})" if found is not None else ""
            listed = (
                f"; its latest runs of DAG {name!r}: {', '.join(ids)}"
                if ids
                else f"; it has no run of DAG {name!r}"
            )
            raise JournalError(
                f"journal {journal} has no run {self.resume!r} to resume{other}{listed}",
                journal=str(journal),
            )
        return found

    def _plan(self, previous: JournaledRun) -> dict[int, Any]:
        """Which tasks of the resumed run to reuse (in topological order), with their outputs."""
        records = previous.tasks
        payloads = previous.payloads
        loads = self.serializer.loads
        codes = self.codes
        upstreams = self.upstreams
        out = self.out_digests
        reuse: dict[int, Any] = {}
        reused = reuse.__contains__
        atoms: dict[str, Any] = {}  # outputs that are immutable atoms, loaded once by digest
        for i, tid in enumerate(self.ids):
            rec = records.get(tid)
            if rec is None or rec.state != _SUCCEEDED or rec.code_digest != codes[i]:
                continue
            digest_ = rec.output_digest
            if digest_ is None or (payload := payloads.get(digest_)) is None:
                continue
            ups = upstreams[i]
            if ups:
                if not all(map(reused, ups)) or rec.input_digest != self._input_digest(i):
                    continue
            elif rec.input_digest != _NO_INPUTS:
                continue
            if digest_ in atoms:
                reuse[i] = atoms[digest_]
            else:
                try:
                    value = loads(payload)
                except Exception as exc:
                    logger.warning(
                        "journal: the output of task %r of run %s cannot be loaded (%s: %s); "
                        "it runs again",
                        tid,
                        previous.info.run_id,
                        type(exc).__name__,
                        exc,
                    )
                    continue
                if type(value) in _ATOMS:  # safe to share between tasks
                    atoms[digest_] = value
                reuse[i] = value
            self.previous[i] = (digest_, payload)
            self.reused_inputs[i] = rec.input_digest
            out[i] = digest_.encode()
        return reuse

    def _input_digest(self, i: int) -> str:
        """Digest of task ``i``'s inputs: its upstreams' ids, then their output digests."""
        out = self.out_digests
        h = blake2b(self.prefixes[i], digest_size=16)
        for u in self.upstreams[i]:
            h.update(out[u])
        return h.hexdigest()

    # -- during the run (on the event loop) -----------------------------------------------

    def settled(
        self,
        i: int,
        state: TaskState,
        attempts: int,
        duration: float,
        output: Any,
        error: BaseException | None,
    ) -> None:
        """Task ``i`` ran and ended in ``state``: serialize its output, queue its record."""
        payload = note = None
        if state is _TASK_SUCCEEDED:
            if not self.keeps_outputs:
                note = _REMOTE
            elif output is None and self.none_payload is not None:
                payload = self.none_payload
            else:
                payload, note = self.serialize(i, output)
        self.put((i, state, attempts, duration, error, payload, note))

    def serialize(self, i: int, output: Any) -> tuple[bytes | None, str | None]:
        """The payload of task ``i``'s output, or None and why it is not kept."""
        try:
            payload = self.serializer.dumps(output)
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

    def reused(self, i: int) -> None:
        """Task ``i`` was reused from the resumed run: record it as such."""
        self.reused_ids.append(self.ids[i])
        self.reused_index.add(i)
        self.put((i, _TASK_SUCCEEDED, 0, 0.0, None, _REUSED, None))

    # -- after the run --------------------------------------------------------------------

    async def finish(
        self,
        states: Sequence[TaskState],
        attempts: list[int],
        errors: dict[str, BaseException],
    ) -> None:
        """Record the tasks that ended without running, then wait for the writer (shielded)."""
        writer = self.writer
        if writer is None:  # start() failed: nothing was begun
            return
        ids = self.ids
        reused = self.reused_index
        if attempts.count(0) > len(reused):  # some ended without running or being reused
            for i, n in enumerate(attempts):
                if n == 0 and i not in reused:
                    writer.put((i, states[i], 0, 0.0, errors.get(ids[i]), None, None))
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(self._close)

    def _close(self) -> None:
        assert self.writer is not None
        self.writer.close()
        if self.shared is not None:
            release_shared(self.shared)

    # -- in the writer thread -------------------------------------------------------------

    def _write(self, batch: list[_Settled]) -> None:
        """Turn settled tasks into records (digests, error text) and write them as one batch.

        Column by column, with C-level maps where it can: this runs for every task, in a
        thread that shares the interpreter lock with the event loop.
        """
        n = len(batch)
        index, states, attempts, durations, errors, payloads_in, notes = zip(*batch, strict=True)
        ids = self.ids
        task_ids = list(map(ids.__getitem__, index))
        if states.count(_TASK_SUCCEEDED) == n:
            values: Sequence[str] = [_SUCCEEDED] * n
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
        if self.any_deps:
            inputs: Sequence[str] = self._inputs(index, values, out_digests)
        else:
            inputs = [_NO_INPUTS] * n
        columns = (
            task_ids,
            values,
            attempts,
            durations,
            errors,
            list(map(self.codes.__getitem__, index)),
            inputs,
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

    def _inputs(
        self, index: Sequence[int], values: Sequence[str], out_digests: Sequence[str | None]
    ) -> list[str]:
        """Input digests of a batch, in settle order (an upstream may be in the same batch)."""
        out = self.out_digests
        prefixes = self.prefixes
        upstreams = self.upstreams
        run_id = self.run_id
        known = self.reused_inputs  # checked at planning: no need to digest them again
        inputs: list[str] = []
        for i, value, out_digest in zip(index, values, out_digests, strict=True):
            if known and i in known:
                inputs.append(known[i])  # its output digest is in out[] since planning
                continue
            ups = upstreams[i]
            if ups:  # as _input_digest, inlined: this runs for every task
                h = blake2b(prefixes[i], digest_size=16)
                for u in ups:
                    h.update(out[u])
                inputs.append(h.hexdigest())
            else:
                inputs.append(_NO_INPUTS)
            # what the inputs of its dependents are made of (no payload: matches nothing)
            out[i] = (out_digest or f"{value}:{run_id}").encode()
        return inputs

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
            elif payload is _REUSED:
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


_NO_INPUTS: Final = digest(b"")
_REMOTE: Final = "output not kept (it stays on the executor, which keeps outputs remote)"


_PlanDigests: TypeAlias = tuple[list[str], list[bytes], list[str]]  # ids, prefixes, codes
_plan_lock = threading.Lock()
_plans: dict[int, tuple[Sequence[Task], _PlanDigests]] = {}  # id(order) -> digests, a few
_PLANS_KEPT: Final = 8


def _plan_digests(order: Sequence[Task], upstreams: Sequence[tuple[int, ...]]) -> _PlanDigests:
    """Task ids, input digest prefixes and code digests of a plan (kept for its next runs).

    A DAG keeps its plan (and so its ``order``) until it changes, and tasks are frozen,
    so these are computed once per DAG, not once per run.
    """
    with _plan_lock:
        found = _plans.get(id(order))
        if found is not None and found[0] is order:
            return found[1]
    ids = [t.id for t in order]
    keys = [f"{t.id}\0".encode() for t in order]
    prefixes = [b"".join([keys[u] for u in ups]) + b"\0" for ups in upstreams]
    fns = [t.fn for t in order]
    by_fn = {id(fn): code_digest(fn) for fn in {id(fn): fn for fn in fns}.values()}
    digests = (ids, prefixes, [by_fn[id(fn)] for fn in fns])
    with _plan_lock:
        _plans[id(order)] = (order, digests)
        while len(_plans) > _PLANS_KEPT:
            del _plans[next(iter(_plans))]
    return digests


def _not_started(item: _Settled) -> None:
    raise RuntimeError("the run journal was not started")
