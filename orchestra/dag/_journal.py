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
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final, TypeAlias, final

import anyio
import anyio.to_thread

from orchestra._errors import JournalError
from orchestra.dag._journal_batch import (
    REUSED,
    SUCCEEDED,
    BatchRecorder,
    Plain,
    Settled,
    plan_digests,
)
from orchestra.dag._model import TaskState
from orchestra.journal import (
    DEFAULT_MAX_BYTES,
    Journal,
    JournaledRun,
    PickleSerializer,
    RunInfo,
    Serializer,
    SQLiteJournal,
)
from orchestra.journal._codec import digest
from orchestra.journal._shared import acquire_shared, release_shared
from orchestra.journal._writer import BatchWriter

if TYPE_CHECKING:
    from orchestra.dag._model import DAG, Task

__all__ = ["JournalArg", "RunJournal"]

logger: Final = logging.getLogger("orchestra.journal")

JournalArg: TypeAlias = "str | os.PathLike[str] | Journal"
"""What ``run(journal=...)`` takes: a path (the embedded SQLite journal) or a ``Journal``."""

_ATOMS: Final = frozenset({type(None), bool, int, float, complex, str, bytes})
_WRITER_SERIALIZES: Final = _ATOMS - {type(None)}  # None's payload is made once per run
_TASK_SUCCEEDED: Final = TaskState.SUCCEEDED
_LIST_IDS: Final = 5  # run ids an unknown-run error lists


@final
class RunJournal(BatchRecorder):
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
        self.none_digest = digest(none_payload) if none_payload is not None else ""
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
            plan = plan_digests(order, upstreams)
            self.ids, self.inputs, self.codes = plan.ids, plan.inputs, plan.codes
            self.upstreams = upstreams
            reuse: dict[int, Any] = {}
            if self.resume is not None:
                previous = self._find(journal, name)
                self.resumed_from = previous.info.run_id
                if self.keeps_outputs:
                    reuse = self._plan(previous)
            info = RunInfo(
                run_id=run_id,
                dag=name,
                started_at=time.time(),
                task_count=len(order),
                resumed_from=self.resumed_from,
            )
            if type(journal) is SQLiteJournal:  # stores the plan once, records by index
                journal._begin_planned_run(info, plan.stored())
                self.indexed = True
            else:
                journal.begin_run(info)
        except BaseException:
            if shared is not None:
                release_shared(shared)
            raise
        self.shared = shared
        self.writer = BatchWriter(self.write, name=f"orchestra-journal-{run_id[:8]}", lanes=3)
        self.none, self.atom, self.put = self.writer.puts
        if self.none_payload is None or not self.keeps_outputs:
            self.none = self._not_plain
        if not self.keeps_outputs:
            self.atom = self._not_plain
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
        inputs = self.inputs
        reuse: dict[int, Any] = {}
        reused = reuse.__contains__
        atoms: dict[str, Any] = {}  # outputs that are immutable atoms, loaded once by digest
        for i, tid in enumerate(self.ids):
            rec = records.get(tid)
            if rec is None or rec.state != SUCCEEDED or rec.code_digest != codes[i]:
                continue
            digest_ = rec.output_digest
            if digest_ is None or (payload := payloads.get(digest_)) is None:
                continue
            if rec.input_digest != inputs[i] or not all(map(reused, upstreams[i])):
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
        return reuse

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
        self.writer.close()
        if self.shared is not None:
            release_shared(self.shared)


_REMOTE: Final = "output not kept (it stays on the executor, which keeps outputs remote)"


def _not_started(item: object) -> None:
    raise RuntimeError("the run journal was not started")
