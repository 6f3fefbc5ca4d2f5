"""The scheduler's one seam to a run journal: what to reuse, and recording what settles.

``RunJournal.start`` (before any task runs, in a thread) opens the journal, finds the run
to resume and decides which tasks it reuses: a task is reused when the resumed run has it
SUCCEEDED with a kept payload, its function's code digest is unchanged, its input
digest (its upstreams' ids) is unchanged, and every upstream of it is reused too, so
each hands it the output it ran with (and a task that re-runs re-runs everything
downstream). ``settled`` and
``reused`` are called on the event loop as tasks end: a serialization and a deque append;
digests, records and store transactions happen in the journal's writer thread
(``BatchRecorder``, in ``_journal_batch``).
``finish`` records the tasks that ended without running and waits for the writer.

Which run to resume, holding it, and which payloads to trust are the journal package's
(``orchestra.journal._resume``): this module calls it at the seam. The run's leases (its
own, and the resumed run's) are renewed by the writer thread and released by ``finish``.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final, TypeAlias, cast, final

import anyio
import anyio.to_thread

from orchestra._errors import JournalError
from orchestra.dag._journal_batch import (
    REUSED,
    BatchRecorder,
    Plain,
    Settled,
    plan_digests,
)
from orchestra.dag._model import TaskState
from orchestra.journal import (
    DEFAULT_MAX_BYTES,
    Journal,
    PickleSerializer,
    RunInfo,
    Serializer,
    SQLiteJournal,
)
from orchestra.journal._key import PayloadKey, check_key, resolve_key
from orchestra.journal._lease import RENEW_EVERY, Holding, Lease, new_lease
from orchestra.journal._resume import Held, find_and_hold, reusable
from orchestra.journal._shared import acquire_shared, release_shared
from orchestra.journal._writer import BatchWriter

if TYPE_CHECKING:
    from orchestra.dag._model import DAG, Task

__all__ = ["JournalArg", "RunJournal"]

logger: Final = logging.getLogger("orchestra.journal")

JournalArg: TypeAlias = "str | os.PathLike[str] | Journal"
"""What ``run(journal=...)`` takes: a path (the embedded SQLite journal) or a ``Journal``."""

_WRITER_SERIALIZES: Final = frozenset({bool, int, float, complex, str, bytes})  # None's
# payload is made once per run
_TASK_SUCCEEDED: Final = TaskState.SUCCEEDED
_WAIT_STEP: Final = 0.2  # seconds between looks while resume_wait= waits for a holder


@final
class RunJournal(BatchRecorder):
    """One journaled run: the scheduler's seam to a ``Journal`` (internal)."""

    @classmethod
    def create(
        cls,
        journal: JournalArg | None,
        resume: str | None,
        serializer: Serializer | None,
        journal_key: bytes | str | None = None,
        resume_wait: float | None = None,
    ) -> RunJournal | None:
        """Check ``run()``'s journal arguments; None when the run is not journaled."""
        if journal is None:
            for name, value in (
                ("resume", resume),
                ("serializer", serializer),
                ("journal_key", journal_key),
            ):
                if value is not None:
                    raise ValueError(f"{name}= needs a journal=")
            return None
        if resume is not None and (not isinstance(resume, str) or not resume):
            raise ValueError(f'resume must be a run id or "last", got {resume!r}')
        if resume_wait is not None:
            if resume is None:
                raise ValueError("resume_wait= needs a resume=")
            if (
                not isinstance(resume_wait, (int, float))
                or isinstance(resume_wait, bool)
                or not resume_wait >= 0
            ):
                raise ValueError(f"resume_wait must be seconds >= 0, got {resume_wait!r}")
        if journal_key is not None:
            check_key(journal_key)
        if serializer is None:
            serializer = PickleSerializer()
        elif not isinstance(serializer, Serializer):
            raise TypeError(
                f"serializer must have dumps(obj) -> bytes and loads(bytes), got {serializer!r}"
            )
        if isinstance(journal, (str, os.PathLike, Journal)):
            return cls(journal, resume, serializer, journal_key, resume_wait or 0.0)
        raise TypeError(
            f"journal must be a path (the SQLite journal) or a Journal, got {journal!r}"
        )

    def __init__(
        self,
        journal: JournalArg,
        resume: str | None,
        serializer: Serializer,
        journal_key: bytes | str | None = None,
        resume_wait: float = 0.0,
    ) -> None:
        self.given = journal
        self.journal: Journal | None = None
        self.resume = resume
        self.resume_wait = resume_wait
        self.journal_key = journal_key
        self.key: PayloadKey | None = None  # resolved in start(), in a thread (a file read)
        self.tag: Callable[[bytes], str] = _no_key
        self.lease: Lease | None = None  # the run's own; the resumed run's is held too
        self.leases: list[Lease] = []
        self.holding: Holding | None = None  # renews and fences them, once started
        self.notes: dict[str, str] = {}  # why tasks the resumed run had kept ran again
        self.serializer = serializer
        self.max_bytes: int = getattr(serializer, "max_bytes", DEFAULT_MAX_BYTES)
        self.protocol = serializer.protocol if type(serializer) is PickleSerializer else None
        self.resumed_from: str | None = None
        self.reused_ids: list[str] = []
        self.reused_index: set[int] = set()
        self.run_id = ""
        self.ids: list[str] = []
        self.upstreams: Sequence[tuple[int, ...]] = ()
        self.codes: list[str] = []
        self.previous: dict[int, tuple[str, bytes]] = {}  # reused: output digest, payload
        self.small: dict[bytes, str] = {}  # digests of small payloads (None, True, 0...)
        self.stored: set[str] = set()  # digests of the payloads this run's batches stored
        self.writer: BatchWriter | None = None
        self.put: Callable[[Settled], None] = _not_started
        self.none: Callable[[Plain], None] = _not_started
        """Queue task ``i``, which SUCCEEDED at its first attempt with output None, its
        duration in ``durations``: what a worker calls for each such task, so one
        ``list.append``."""
        self.atom: Callable[[Plain], None] = _not_started
        """``none``, for an output of a type in ``atoms`` (in ``outputs``)."""
        self.atoms: frozenset[type] = (
            _WRITER_SERIALIZES if self.protocol is not None else frozenset()
        )
        """Types of output the writer thread serializes (immutable: what it reads later
        is what the task returned). Only for the default serializer: one of yours is
        called on the event loop, as the run goes."""
        self.indexed = False
        self.durations: dict[str, float] = {}
        self.outputs: dict[str, Any] = {}
        # None, the most common output (tasks run for their effects), serialized once
        try:
            none_payload: bytes | None = serializer.dumps(None)
        except Exception:  # a serializer that cannot: each None goes through serialize()
            none_payload = None
        self.none_payload = none_payload
        self.none_digest = ""  # its tag: made once the key is known
        self.keeps_outputs = True
        self.shared: SQLiteJournal | None = None  # borrowed for a path given as journal=

    # -- before the run -------------------------------------------------------------------

    async def start(
        self,
        dag: DAG,
        run_id: str,
        order: Sequence[Task],
        upstreams: Sequence[tuple[int, ...]],
        durations: dict[str, float],
        outputs: dict[str, Any],
        *,
        keep_outputs: bool = True,
    ) -> dict[int, Any]:
        """Open the journal, begin the run; the outputs of the tasks to reuse, by index.

        ``durations``, ``outputs``: the run's, by task id, where each task's are set
        before it is recorded (the writer reads those of ``none`` and ``atom`` tasks there).

        ``keep_outputs=False`` (an executor whose outputs stay remote): the run's outputs are
        handles, not values, so none is kept and none is reused; states are journaled.
        """
        self.durations = durations
        self.outputs = outputs
        if not keep_outputs:
            self.keeps_outputs = False
            if self.resume is not None:
                logger.warning(
                    "journal: the executor keeps outputs remote, so resume=%r reuses no task",
                    self.resume,
                )
        deadline = time.monotonic() + self.resume_wait
        while True:
            try:
                return await anyio.to_thread.run_sync(
                    self._start, dag.name, run_id, order, upstreams
                )
            except Held as held:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise JournalError(str(held), journal=held.journal) from None
                await anyio.sleep(min(_WAIT_STEP, left))

    def _start(
        self, name: str, run_id: str, order: Sequence[Task], upstreams: Sequence[tuple[int, ...]]
    ) -> dict[int, Any]:
        key = self.key = resolve_key(self.journal_key)
        self.tag = key.tag
        if self.none_payload is not None:
            self.none_digest = key.tag(self.none_payload)
        given = self.given
        # a path is told first: a runtime Protocol check costs microseconds per method
        shared = acquire_shared(given) if isinstance(given, (str, os.PathLike)) else None
        journal: Journal = shared if shared is not None else cast("Journal", given)
        self.journal = journal
        lease = self.lease = new_lease(run_id)
        try:
            self.run_id = run_id
            plan = plan_digests(order, upstreams)
            self.ids, self.inputs, self.codes = plan.ids, plan.inputs, plan.codes
            self.upstreams = upstreams
            reuse: dict[int, Any] = {}
            self.leases = [lease]
            if self.resume is not None:
                previous = find_and_hold(journal, name, self.resume, lease)
                self.resumed_from = previous.info.run_id
                self.leases.append(lease.holding(previous.info.run_id))
                if self.keeps_outputs:
                    digests = (plan.ids, plan.codes, plan.inputs)
                    loads = self.serializer.loads
                    reuse, self.previous, self.notes = reusable(
                        previous, digests, upstreams, loads, key
                    )
            info = RunInfo(
                run_id=run_id,
                dag=name,
                started_at=time.time(),
                task_count=len(order),
                resumed_from=self.resumed_from,
            )
            if type(journal) is SQLiteJournal:  # stores the plan once, records by index
                journal._begin_planned_run(info, plan.stored(), lease)
                self.indexed = True
            else:
                if journal.hold(lease) is not None:  # a new run id: nobody else holds it
                    raise JournalError(
                        f"journal {journal}: run {run_id} is held already", journal=str(journal)
                    )
                journal.begin_run(info)
        except BaseException:
            self._release(journal, shared)
            raise
        self.shared = shared
        self._open_writer(journal, run_id)
        return reuse

    def _open_writer(self, journal: Journal, run_id: str) -> None:
        """Start the batch writer that records settled tasks and renews the leases."""
        self.holding = Holding(journal, self.leases, run_id)
        self.writer = BatchWriter(
            self.write,
            name=f"orchestra-journal-{run_id[:8]}",
            lanes=3,
            tick=self.holding.renew,
            tick_every=RENEW_EVERY,
        )
        self.none, self.atom, self.put = self.writer.puts
        if self.none_payload is None or not self.keeps_outputs:
            self.none = self._not_plain
        if not self.keeps_outputs:
            self.atom = self._not_plain

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
                if attempts == 1 and self.durations.get(self.ids[i]) == duration:
                    self.none(i)
                    return
                payload = self.none_payload
            else:
                payload, note = self.serialize(i, output)
        self.put((i, state, attempts, duration, error, payload, note))

    def fence(self) -> JournalError | None:
        """Why this run may settle no more tasks (it lost a lease), or None."""
        lost = self.holding.lost() if self.holding is not None else None
        return None if lost is None else JournalError(lost, journal=str(self.journal))

    def _not_plain(self, i: Plain) -> None:
        """``none`` or ``atom`` when outputs have no payload here: ``settled`` instead."""
        tid = self.ids[i]
        self.settled(i, _TASK_SUCCEEDED, 1, self.durations[tid], self.outputs.get(tid), None)

    def reused(self, i: int) -> None:
        """Task ``i`` was reused from the resumed run: record it as such."""
        self.reused_ids.append(self.ids[i])
        self.reused_index.add(i)
        self.put((i, _TASK_SUCCEEDED, 0, 0.0, None, REUSED, None))

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
                    self.put((i, states[i], 0, 0.0, errors.get(ids[i]), None, None))
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(self._close)

    def _close(self) -> None:
        assert self.writer is not None
        assert self.journal is not None
        self.writer.close()
        self._release(self.journal, self.shared)

    def _release(self, journal: Journal, shared: SQLiteJournal | None) -> None:
        """Release the run's leases, then the borrowed journal (never raises for a lease)."""
        try:
            if self.lease is not None:
                journal.release(self.lease.token)
        except Exception as exc:  # they lapse: a dead holder's lease is free anyway
            logger.warning(
                "journal: run %s: its leases could not be released: %s", self.run_id, exc
            )
        finally:
            if shared is not None:
                release_shared(shared)


_REMOTE: Final = "output not kept (it stays on the executor, which keeps outputs remote)"


def _no_key(payload: bytes) -> str:
    raise RuntimeError("the run journal was not started: it has no key yet")


def _not_started(item: object) -> None:
    raise RuntimeError("the run journal was not started")
