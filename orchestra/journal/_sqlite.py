"""The embedded journal: one SQLite file in WAL mode, safe for several processes at once."""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final, final

import tenacity

from orchestra._errors import JournalError
from orchestra.journal._lease import Lease
from orchestra.journal._records import JournaledRun, RunInfo, TaskRecord
from orchestra.journal._sqlite_schema import (
    MIGRATIONS,
    hold_lease,
    insert_lease,
    locked,
    transaction,
)
from orchestra.journal._stored import (
    Plan,
    decode_batch,
    decode_plan,
    encode_full,
    encode_indexed,
)

__all__ = ["SCHEMA_VERSION", "SQLiteJournal"]

APPLICATION_ID: Final = 0x4F524348  # "ORCH", in the file header: says the file is ours
"""``PRAGMA application_id`` of an orchestra journal."""

SCHEMA_VERSION: Final = len(MIGRATIONS)
"""The schema version this orchestra writes (and the newest it reads)."""

_RUN_COLUMNS: Final = "run_id, dag, started_at, task_count, resumed_from"
_IN_CHUNK: Final = 500  # digests per "IN (...)" query, under every SQLite's variable limit
_PLANS_KEPT: Final = 4  # plans a journal keeps read
_KNOWN_PLANS: Final = 1024  # digests of plans a journal knows the file holds, at most


@final
class SQLiteJournal:
    """The embedded journal: one SQLite file (stdlib ``sqlite3``, WAL mode).

    ``run(dag, journal="runs.db")`` opens one for you; build one yourself to share it
    between runs or to read runs back (``list_runs``, ``load_run``). Several processes may
    journal into one file at once: writes wait for each other (up to ``timeout``), and a
    crash loses at most the batch being written, never the file.

    Args:
        path: the journal file; created (with its schema) when missing.
        timeout: seconds a write waits for another process's write to end.
        read_only: open an existing journal without ever writing to it (the CLI's
            ``orchestra runs`` does).

    Raises:
        JournalError: the file is not an orchestra journal, has a newer schema than this
            orchestra reads, or cannot be opened. Nothing in the file is changed then.
    """

    def __init__(
        self, path: str | os.PathLike[str], *, timeout: float = 30.0, read_only: bool = False
    ) -> None:
        self.path = Path(path)
        self.read_only = read_only
        self._timeout = timeout
        self._lock = threading.Lock()
        self._plans: dict[str, Plan] = {}  # plans read lately, by digest
        self._known_plans: set[str] = set()  # digests of plans the file holds (nothing
        # deletes one), that this journal stored or found there
        self._db = self._open(timeout)

    def __repr__(self) -> str:
        return f"SQLiteJournal({str(self.path)!r})"

    def __str__(self) -> str:
        return str(self.path)

    def __enter__(self) -> SQLiteJournal:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- opening and migrating ------------------------------------------------------------

    def _error(self, message: str) -> JournalError:
        return JournalError(f"journal {self.path}: {message}", journal=str(self.path))

    def _open(self, timeout: float) -> sqlite3.Connection:
        if self.read_only:
            if not self.path.is_file():
                raise self._error("no such file")
            target, uri = f"{self.path.resolve().as_uri()}?mode=ro", True
        else:
            target, uri = str(self.path), False
        try:
            db = sqlite3.connect(
                target, timeout=timeout, isolation_level=None, check_same_thread=False, uri=uri
            )
        except sqlite3.Error as exc:
            raise self._error(f"cannot open it ({exc})") from exc
        try:
            self._check_and_migrate(db)
        except BaseException:
            db.close()
            raise
        return db

    def recheck(self) -> None:
        """Check the file again (another process may have migrated it meanwhile).

        A file still of this schema needs nothing more: two header reads, no write lock.
        """
        with self._lock:
            db = self._db
            try:
                app = db.execute("PRAGMA application_id").fetchone()[0]
                version = db.execute("PRAGMA user_version").fetchone()[0]
            except sqlite3.Error:
                app = version = None  # the full check says what is wrong
            if app != APPLICATION_ID or version != SCHEMA_VERSION or self.read_only:
                self._check_and_migrate(db)

    def _check_and_migrate(self, db: sqlite3.Connection) -> None:
        # Read in one transaction, so another process's migration is seen whole or not at all;
        # a writer takes the write lock first (BEGIN IMMEDIATE waits up to the timeout), so
        # the openers of a new file migrate it one at a time. Nothing is written to a
        # stranger: the transaction writes only once the file is known to be ours.
        begin = "BEGIN" if self.read_only else "BEGIN IMMEDIATE"
        try:
            db.execute(begin)
            try:
                version = self._version(db)
                if version < SCHEMA_VERSION and not self.read_only:
                    self._migrate(db, version)
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
        except sqlite3.DatabaseError as exc:
            if "not a database" in str(exc) or "malformed" in str(exc):
                raise self._error("not an orchestra journal (not an SQLite database)") from exc
            doing = "read" if self.read_only else "write"
            raise self._error(f"cannot {doing} it ({exc})") from exc
        if self.read_only:
            if version != SCHEMA_VERSION:
                old = version < SCHEMA_VERSION
                hint = "; open it once for writing to migrate it" if old else ""
                raise self._error(
                    f"schema version {version}, this orchestra reads version {SCHEMA_VERSION}{hint}"
                )
            return
        try:
            # Into WAL mode takes the file alone: another opener's read makes SQLite answer
            # "locked" at once (no busy wait), so it is tried again until the timeout.
            for attempt in tenacity.Retrying(
                stop=tenacity.stop_after_delay(self._timeout),
                wait=tenacity.wait_exponential(multiplier=0.001, max=0.05),
                retry=tenacity.retry_if_exception(locked),
                reraise=True,
            ):
                with attempt:
                    db.execute("PRAGMA journal_mode = WAL")
            db.execute("PRAGMA synchronous = NORMAL")  # in WAL: a commit survives a crash
        except sqlite3.Error as exc:
            raise self._error(f"cannot write it ({exc})") from exc

    def _version(self, db: sqlite3.Connection) -> int:
        app = db.execute("PRAGMA application_id").fetchone()[0]
        version = db.execute("PRAGMA user_version").fetchone()[0]
        if app == 0 and version == 0:
            tables = db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
            if tables:
                raise self._error("not an orchestra journal (an SQLite database of another kind)")
            return 0
        if app != APPLICATION_ID:
            raise self._error(
                f"not an orchestra journal (an SQLite database of application id {app:#x})"
            )
        if version > SCHEMA_VERSION:
            raise self._error(
                f"schema version {version} is newer than version {SCHEMA_VERSION}, the newest "
                "this orchestra reads: upgrade orchestra-hooks to use it (the file is unchanged)"
            )
        return int(version)

    def _migrate(self, db: sqlite3.Connection, version: int) -> None:
        for script in MIGRATIONS[version:]:
            for statement in script.split(";"):
                if statement.strip():
                    db.execute(statement)
        db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    @contextmanager
    def _write(self, what: str, *, statements: int = 2) -> Iterator[sqlite3.Connection]:
        """A write transaction; one statement alone is one by itself (autocommit)."""
        with self._lock:
            try:
                if statements == 1:
                    yield self._db
                else:
                    with transaction(self._db):
                        yield self._db
            except sqlite3.Error as exc:
                raise self._error(f"cannot {what} ({exc})") from exc

    # -- the Journal protocol -------------------------------------------------------------

    def begin_run(self, run: RunInfo) -> None:
        """Record that ``run`` began."""
        with self._write("record a new run") as db:
            db.execute(
                f"INSERT OR REPLACE INTO runs ({_RUN_COLUMNS}) VALUES (?, ?, ?, ?, ?)",
                (run.run_id, run.dag, run.started_at, run.task_count, run.resumed_from),
            )

    def _begin_planned_run(self, run: RunInfo, plan: tuple[str, bytes], lease: Lease) -> None:
        """``begin_run``, naming the run's plan (``encode_plan``: stored once per file).

        The scheduler's writer then records the run's tasks by plan index
        (``_record_indexed``), without their ids and digests. ``lease``, the run's own
        (a new run's: nobody else can hold it), is stored in the same transaction.
        """
        key, data = plan
        known = key in self._known_plans  # stored already
        with self._write("record a new run") as db:
            insert_lease(db, lease)
            if not known:
                row = db.execute("SELECT 1 FROM plans WHERE digest = ?", (key,)).fetchone()
                if row is None:
                    db.execute("INSERT INTO plans VALUES (?, ?)", (key, data))
            db.execute(
                f"INSERT OR REPLACE INTO runs ({_RUN_COLUMNS}, plan) VALUES (?, ?, ?, ?, ?, ?)",
                (run.run_id, run.dag, run.started_at, run.task_count, run.resumed_from, key),
            )
        if len(self._known_plans) >= _KNOWN_PLANS:
            self._known_plans.clear()
        self._known_plans.add(key)

    def _record_indexed(
        self,
        run_id: str,
        plain: tuple[Sequence[int], Sequence[float], str | Sequence[str] | None],
        general: Sequence[Sequence[Any]] | None,
        payloads: Mapping[str, bytes],
    ) -> None:
        """``record``, by plan index, for a run begun by ``_begin_planned_run``.

        ``plain``: the plan indexes and durations of tasks that SUCCEEDED at their first
        attempt (stored as two arrays), and their output digests: one for all, or one
        each. ``general``: other
        records, column by column in ``TaskRecord`` field order, a plan index in place of
        the task id and no code or input digest (8 columns).
        """
        records = encode_indexed(plain, general)
        self._insert(run_id, records, payloads)

    def _insert(self, run_id: str, records: bytes, payloads: Mapping[str, bytes]) -> None:
        """Store one batch and its payloads, all or none.

        A batch without payloads is one statement, with no transaction around it: a
        round trip into SQLite costs the writer thread the interpreter lock each time.
        """
        with self._write("record tasks", statements=2 if payloads else 1) as db:
            if payloads:
                db.executemany("INSERT OR IGNORE INTO outputs VALUES (?, ?)", payloads.items())
            db.execute("INSERT INTO batches (run_id, records) VALUES (?, ?)", (run_id, records))

    def record(
        self, run_id: str, tasks: Sequence[TaskRecord], payloads: Mapping[str, bytes]
    ) -> None:
        """Record a batch of settled tasks in one transaction (each payload stored once)."""
        self.record_columns(run_id, list(zip(*tasks, strict=True)), payloads)

    def record_columns(
        self, run_id: str, columns: Sequence[Sequence[Any]], payloads: Mapping[str, bytes]
    ) -> None:
        """``record``, given the batch column by column (``TaskRecord`` field order)."""
        self._insert(run_id, encode_full(columns), payloads)

    def load_run(self, run_id: str) -> JournaledRun | None:
        """Read a run back with its tasks and payloads; None if there is no such run."""
        with self._lock:
            row = self._db.execute(
                f"SELECT {_RUN_COLUMNS}, plan FROM runs WHERE run_id = ?", (run_id,)
            ).fetchone()
            if row is None:
                return None
            tasks = self._tasks(run_id, row[-1])
            digests = list({t.output_digest for t in tasks.values() if t.output_digest})
            payloads: dict[str, bytes] = {}
            for k in range(0, len(digests), _IN_CHUNK):
                chunk = digests[k : k + _IN_CHUNK]
                payloads.update(
                    self._db.execute(
                        "SELECT digest, payload FROM outputs "
                        f"WHERE digest IN ({', '.join('?' * len(chunk))})",
                        chunk,
                    ).fetchall()
                )
        return JournaledRun(
            info=RunInfo.from_row(row[:-1], _counts(tasks)), tasks=tasks, payloads=payloads
        )

    def list_runs(self, dag: str | None = None, *, limit: int = 20) -> list[RunInfo]:
        """The latest runs, newest first (of DAG ``dag`` only, if given), with state counts."""
        where, args = ("WHERE dag = ?", [dag]) if dag is not None else ("", [])
        with self._lock:
            rows = self._db.execute(
                f"SELECT {_RUN_COLUMNS}, plan FROM runs {where} "
                "ORDER BY started_at DESC, rowid DESC LIMIT ?",
                [*args, limit],
            ).fetchall()
            return [RunInfo.from_row(r[:-1], _counts(self._tasks(r[0], r[-1]))) for r in rows]

    def _tasks(self, run_id: str, plan_key: str | None) -> dict[str, TaskRecord]:
        """The run's task records by id, a later record of a task replacing an earlier one."""
        tasks: dict[str, TaskRecord] = {}
        plan = self._plan(plan_key) if plan_key is not None else None
        for (records,) in self._db.execute(
            "SELECT records FROM batches WHERE run_id = ? ORDER BY seq", (run_id,)
        ):
            for record in decode_batch(records, plan):
                tasks[record[0]] = record
        return tasks

    def _plan(self, key: str) -> Plan:
        """The plan stored under ``key`` (kept read for the next runs that name it)."""
        plan = self._plans.get(key)
        if plan is None:
            row = self._db.execute("SELECT tasks FROM plans WHERE digest = ?", (key,)).fetchone()
            if row is None:
                raise self._error(f"a run names plan {key}, which the file does not hold")
            plan = decode_plan(row[0])
            while len(self._plans) >= _PLANS_KEPT:
                del self._plans[next(iter(self._plans))]
            self._plans[key] = plan
        return plan

    def hold(self, lease: Lease, *, replacing: str | None = None) -> Lease | None:
        """Store ``lease`` unless another holds its run (see ``Journal.hold``)."""
        with self._write(f"hold run {lease.run_id}") as db:
            return hold_lease(db, lease, replacing)

    def release(self, token: str) -> None:
        """Drop the leases of holder ``token``."""
        with self._write("release its leases", statements=1) as db:
            db.execute("DELETE FROM leases WHERE token = ?", (token,))

    def close(self) -> None:
        """Close the file."""
        with self._lock:
            self._db.close()


def _counts(tasks: dict[str, TaskRecord]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for t in tasks.values():
        counts[t.state] = counts.get(t.state, 0) + 1
    return counts
