"""What a journal keeps (runs and settled tasks) and the ``Journal`` protocol stores implement."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any, NamedTuple, Protocol, final, runtime_checkable

import attrs

from orchestra.journal._lease import Lease

__all__ = ["Journal", "JournaledRun", "RunInfo", "TaskRecord"]

_NO_COUNTS: Mapping[str, int] = MappingProxyType({})


@final
@attrs.frozen(kw_only=True)
class RunInfo:
    """One journaled run.

    Attributes:
        run_id: the run's id (``RunResult.run_id``).
        dag: the DAG's name.
        started_at: when the run began, in seconds since the epoch.
        task_count: how many tasks the DAG had.
        resumed_from: the id of the run this one resumed, if any.
        states: how many of its tasks the journal holds in each state (``TaskState``
            values such as ``"succeeded"``), filled when a run is read back; tasks
            missing from the counts never settled (the run is going on, or it crashed).
    """

    run_id: str
    dag: str
    started_at: float
    task_count: int
    resumed_from: str | None = None
    states: Mapping[str, int] = _NO_COUNTS

    @classmethod
    def from_row(cls, row: Sequence[Any], states: Mapping[str, int]) -> RunInfo:
        """For stores: a run from ``(run_id, dag, started_at, task_count, resumed_from)``."""
        run_id, dag, started_at, task_count, resumed_from = row
        return cls(
            run_id=run_id,
            dag=dag,
            started_at=started_at,
            task_count=task_count,
            resumed_from=resumed_from,
            states=states,
        )

    @property
    def settled(self) -> int:
        """How many of the run's tasks the journal holds."""
        return sum(self.states.values())


class TaskRecord(NamedTuple):
    """One settled task, as the scheduler journals it.

    A tuple (not an attrs class) on purpose: one is built per settled task while the run
    goes on, and every field is a plain JSON value, so a store can write a batch of them
    as it is. The output itself travels beside it, as a payload keyed by ``output_digest``.

    Attributes:
        task_id: the task's id.
        state: its terminal ``TaskState`` value (``"succeeded"``, ``"failed"``, ...).
        attempts: how many attempts it started (0 for a task that never ran or was reused).
        duration: seconds it took, all attempts included.
        error: its last error as text (``"ValueError: bad row"``), if any.
        code_digest: digest of its function's code.
        input_digest: digest of where its inputs come from (its upstreams' ids, in order).
        output_digest: digest of its serialized output, the key of its payload; None when
            it did not succeed or its output could not be kept (see ``note``): such a
            task is not resumable.
        reused: true when the run reused the output of the run it resumed.
        note: why the output was not kept, if it was not.
    """

    task_id: str
    state: str
    attempts: int
    duration: float
    error: str | None
    code_digest: str
    input_digest: str
    output_digest: str | None
    reused: bool = False
    note: str | None = None


@final
@attrs.frozen(kw_only=True)
class JournaledRun:
    """A run read back from a journal.

    Attributes:
        info: the run.
        tasks: its settled tasks, by id.
        payloads: the serialized outputs its tasks reference, by ``output_digest``.
    """

    info: RunInfo
    tasks: Mapping[str, TaskRecord]
    payloads: Mapping[str, bytes]


@runtime_checkable
class Journal(Protocol):
    """Where runs are journaled: the embedded ``SQLiteJournal``, a Postgres one, or yours.

    The scheduler calls these methods from worker threads, never on the event loop, so
    they may block; several runs (and threads) may share one journal object, so they must
    be thread-safe. Several processes may write to one store at once; ``hold`` and
    ``release`` keep the leases that let one process at a time run a run's tasks (see
    ``Lease``). A store that passes
    ``orchestra.journal.conformance`` works with ``run(journal=...)`` and ``resume=``.
    """

    def begin_run(self, run: RunInfo) -> None:
        """Record that ``run`` began (its ``states`` are ignored).

        Raises an exception (``JournalError`` for a clear message) when the store cannot
        be written: the run then fails before any task starts.
        """
        ...

    def record(
        self, run_id: str, tasks: Sequence[TaskRecord], payloads: Mapping[str, bytes]
    ) -> None:
        """Record a batch of settled tasks of run ``run_id``, all or none (one transaction).

        ``payloads`` holds the serialized outputs of the batch by digest (a digest seen
        before may come again: keep one copy). A task recorded again in the same run
        replaces its earlier record.
        """
        ...

    def load_run(self, run_id: str) -> JournaledRun | None:
        """Read a run back with its tasks and payloads; None if the journal has no such run."""
        ...

    def list_runs(self, dag: str | None = None, *, limit: int = 20) -> Sequence[RunInfo]:
        """The latest runs, newest first (of DAG ``dag`` only, if given), with state counts."""
        ...

    def hold(self, lease: Lease, *, replacing: str | None = None) -> Lease | None:
        """Store ``lease`` as the lease of run ``lease.run_id`` unless another holds it.

        Atomically (one transaction, against other processes too): when the run has no
        lease, or its lease has the token ``lease.token`` (a renewal) or ``replacing``
        (a holder found dead), store ``lease`` in its place and return None; otherwise
        store nothing and return the run's current lease.
        """
        ...

    def release(self, token: str) -> None:
        """Drop every lease whose token is ``token`` (none is an answer too)."""
        ...

    def close(self) -> None:
        """Release the store's resources; the journal is not used after this."""
        ...
