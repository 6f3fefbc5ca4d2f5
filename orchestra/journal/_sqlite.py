"""The embedded journal: one SQLite file in WAL mode, safe for several processes at once."""

from __future__ import annotations

import atexit
import marshal
import os
import sqlite3
import sys
import threading
from array import array
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from itertools import chain, repeat
from pathlib import Path
from typing import Any, Final, TypeAlias, final

from orchestra._errors import JournalError
from orchestra.journal._codec import digest
from orchestra.journal._records import JournaledRun, RunInfo, TaskRecord

__all__ = [
    "SCHEMA_VERSION",
    "Plan",
    "SQLiteJournal",
    "acquire_shared",
    "encode_plan",
    "release_shared",
]

APPLICATION_ID: Final = 0x4F524348  # "ORCH", in the file header: says the file is ours
"""``PRAGMA application_id`` of an orchestra journal."""

# _MIGRATIONS[v] takes a file from schema version v to v + 1; a new schema version is one
# more script here, never an edit of an older one.
_MIGRATIONS: list[str] = [
    # Tasks are written in batches, one row per writer transaction holding its records
    # column by column as ``marshal`` data (tuples of str, int, float, bool and None:
    # reading them runs no code), many times cheaper than a row per task or JSON.
    """
    CREATE TABLE runs (
        run_id       TEXT PRIMARY KEY,
        dag          TEXT NOT NULL,
        started_at   REAL NOT NULL,
        task_count   INTEGER NOT NULL,
        resumed_from TEXT
    );
    CREATE INDEX runs_by_dag ON runs (dag, started_at);
    CREATE INDEX runs_by_start ON runs (started_at);
    CREATE TABLE batches (
        seq     INTEGER PRIMARY KEY,
        run_id  TEXT NOT NULL,
        records BLOB NOT NULL
    );
    CREATE INDEX batches_by_run ON batches (run_id, seq);
    CREATE TABLE outputs (
        digest  TEXT PRIMARY KEY,
        payload BLOB NOT NULL
    ) WITHOUT ROWID;
    """,
    # What every run of a plan shares (its task ids, code and input digests, in plan
    # order) is stored once, keyed by its digest; a run names its plan, and the batches
    # the scheduler writes hold records by plan index (see ``_record_indexed``). Batches
    # of full records (version 1's, and ``record``'s) stay as they are.
    """
    CREATE TABLE plans (
        digest TEXT PRIMARY KEY,
        tasks  BLOB NOT NULL
    ) WITHOUT ROWID;
    ALTER TABLE runs ADD COLUMN plan TEXT;
    """,
]

SCHEMA_VERSION: Final = len(_MIGRATIONS)
"""The schema version this orchestra writes (and the newest it reads)."""

_RUN_COLUMNS: Final = "run_id, dag, started_at, task_count, resumed_from"
_MARSHAL_VERSION: Final = 4  # read by every Python 3.4+
_IN_CHUNK: Final = 500  # digests per "IN (...)" query, under every SQLite's variable limit
_SUCCEEDED: Final = "succeeded"
# Plan indexes and durations of the common record are stored as little-endian arrays.
_INDEX: Final = next(code for code in "IL" if array(code).itemsize == 4)
_SWAP: Final = sys.byteorder != "little"
_PLANS_KEPT: Final = 4  # plans a journal keeps read
_KNOWN_PLANS: Final = 1024  # digests of plans a journal knows the file holds, at most


Plan: TypeAlias = tuple[Sequence[str], Sequence[str], Sequence[str]]
"""A plan's task ids, code digests and input digests, in plan order."""


def encode_plan(plan: Plan) -> tuple[str, bytes]:
    """A plan's digest and stored form, for ``_begin_planned_run``."""
    ids, codes, inputs = plan
    data = marshal.dumps((list(ids), list(codes), list(inputs)), _MARSHAL_VERSION)
    return digest(data), data


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
        """Check the file again (another process may have migrated it meanwhile)."""
        with self._lock:
            self._check_and_migrate(self._db)

    def _check_and_migrate(self, db: sqlite3.Connection) -> None:
        # Read only, until the file is known to be ours: nothing is written to a stranger.
        try:
            version = self._version(db)
        except sqlite3.DatabaseError as exc:
            if "not a database" in str(exc) or "malformed" in str(exc):
                raise self._error("not an orchestra journal (not an SQLite database)") from exc
            raise self._error(f"cannot read it ({exc})") from exc
        if self.read_only:
            if version != SCHEMA_VERSION:
                old = version < SCHEMA_VERSION
                hint = "; open it once for writing to migrate it" if old else ""
                raise self._error(
                    f"schema version {version}, this orchestra reads version {SCHEMA_VERSION}{hint}"
                )
            return
        try:
            db.execute("PRAGMA journal_mode = WAL")
            db.execute("PRAGMA synchronous = NORMAL")  # in WAL: a commit survives a crash
            if version < SCHEMA_VERSION:
                with _transaction(db):
                    self._migrate(db, self._version(db))  # another process may have done it
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
        for script in _MIGRATIONS[version:]:
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
                    with _transaction(self._db):
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

    def _begin_planned_run(self, run: RunInfo, plan: tuple[str, bytes]) -> None:
        """``begin_run``, naming the run's plan (``encode_plan``: stored once per file).

        The scheduler's writer then records the run's tasks by plan index
        (``_record_indexed``), without their ids and digests.
        """
        key, data = plan
        known = key in self._known_plans  # stored: one statement, no transaction
        with self._write("record a new run", statements=1 if known else 2) as db:
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
        index, durations, output = plain
        if not (output is None or isinstance(output, str)):
            if len(output) != len(index):
                raise ValueError(f"{len(index)} plain tasks with {len(output)} output digests")
            output = list(output)
        indexes = array(_INDEX, index)
        times = array("d", durations)
        if _SWAP:
            indexes.byteswap()
            times.byteswap()
        rest: list[Sequence[Any]] | None = None
        if general is not None:
            if len(general) != _INDEXED_COLUMNS:
                raise ValueError(f"a batch has {_INDEXED_COLUMNS} columns, got {len(general)}")
            rest = list(general)
        records = marshal.dumps(
            (output, indexes.tobytes(), times.tobytes(), rest), _MARSHAL_VERSION
        )
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
        if len(columns) != len(TaskRecord._fields):
            raise ValueError(f"a batch has {len(TaskRecord._fields)} columns, got {len(columns)}")
        self._insert(run_id, marshal.dumps(list(columns), _MARSHAL_VERSION), payloads)

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
            for record in _unmarshal(records, plan):
                tasks[record[0]] = record
        return tasks

    def _plan(self, key: str) -> Plan:
        """The plan stored under ``key`` (kept read for the next runs that name it)."""
        plan = self._plans.get(key)
        if plan is None:
            row = self._db.execute("SELECT tasks FROM plans WHERE digest = ?", (key,)).fetchone()
            if row is None:
                raise self._error(f"a run names plan {key}, which the file does not hold")
            plan = marshal.loads(row[0])
            if not (isinstance(plan, tuple) and len(plan) == 3):
                raise ValueError("a plan that orchestra did not write")
            while len(self._plans) >= _PLANS_KEPT:
                del self._plans[next(iter(self._plans))]
            self._plans[key] = plan
        return plan

    def close(self) -> None:
        """Close the file."""
        with self._lock:
            self._db.close()


_INDEXED_COLUMNS: Final = len(TaskRecord._fields) - 2  # no code or input digest


def _unmarshal(data: bytes, plan: Plan | None) -> Iterator[TaskRecord]:
    """The records of one batch (its columns zipped back into ``TaskRecord`` tuples).

    A batch is a list of ``TaskRecord`` columns (``record``), or a tuple of records by
    index into the run's plan (``_record_indexed``).
    """
    stored = marshal.loads(data)
    # tuple.__new__ is TaskRecord._make without its per-record length check
    if isinstance(stored, list) and len(stored) == len(TaskRecord._fields):
        return map(tuple.__new__, repeat(TaskRecord), zip(*stored, strict=True))
    if plan is None or not (isinstance(stored, tuple) and len(stored) == 4):
        raise ValueError("a batch of task records that orchestra did not write")
    ids, codes, inputs = plan
    output, index_data, time_data, general = stored
    index = array(_INDEX)
    index.frombytes(index_data)
    durations = array("d")
    durations.frombytes(time_data)
    if _SWAP:
        index.byteswap()
        durations.byteswap()
    if len(index) != len(durations):
        raise ValueError("a batch of task records that orchestra did not write")
    if not (output is None or isinstance(output, str) or len(output) == len(index)):
        raise ValueError("a batch of task records that orchestra did not write")
    plain = zip(
        map(ids.__getitem__, index),
        repeat(_SUCCEEDED),
        repeat(1),
        durations,
        repeat(None),
        map(codes.__getitem__, index),
        map(inputs.__getitem__, index),
        repeat(output) if output is None or isinstance(output, str) else output,
        repeat(False),
        repeat(None),
    )
    records = map(tuple.__new__, repeat(TaskRecord), plain)
    if general is None:
        return records
    if len(general) != _INDEXED_COLUMNS:
        raise ValueError("a batch of task records that orchestra did not write")
    at, state, attempts, duration, error, out, reused, note = general
    rest = zip(
        map(ids.__getitem__, at),
        state,
        attempts,
        duration,
        error,
        map(codes.__getitem__, at),
        map(inputs.__getitem__, at),
        out,
        reused,
        note,
        strict=True,
    )
    return chain(records, map(tuple.__new__, repeat(TaskRecord), rest))


def _counts(tasks: dict[str, TaskRecord]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for t in tasks.values():
        counts[t.state] = counts.get(t.state, 0) + 1
    return counts


@contextmanager
def _transaction(db: sqlite3.Connection) -> Iterator[None]:
    """``BEGIN IMMEDIATE`` (the write lock at once: no deadlock upgrading a read) ... COMMIT."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


# -- journals shared within a process -----------------------------------------------------
#
# ``run(journal="runs.db")`` borrows one open journal per file and process instead of
# opening and closing the file for every run: closing the last connection to a WAL file
# checkpoints it and deletes the WAL, and the next run's first commit recreates it, two
# fsyncs that can cost more than a whole run of cheap tasks. A borrowed journal is checked
# again at every borrowing (a file replaced or deleted meanwhile is opened anew); a few
# idle ones stay open, the rest are closed, and all are closed at exit.

_IDLE_KEPT: Final = 4


@final
class _Shared:
    __slots__ = ("inode", "journal", "users")

    def __init__(self, journal: SQLiteJournal, inode: int) -> None:
        self.journal = journal
        self.inode = inode
        self.users = 0


_shared_lock = threading.Lock()
_shared: dict[tuple[int, str], _Shared] = {}  # (pid, real path) -> journal; idle ones last


def _inode(path: str) -> int | None:
    try:
        return os.stat(path).st_ino
    except OSError:
        return None


def acquire_shared(path: str | os.PathLike[str]) -> SQLiteJournal:
    """Borrow this process's open journal on ``path`` (opened, or checked again)."""
    real = os.path.realpath(path)
    key = (os.getpid(), real)
    with _shared_lock:
        entry = _shared.pop(key, None)
        if entry is not None and entry.inode != _inode(real):  # replaced or deleted
            if entry.users == 0:
                entry.journal.close()
            entry = None
        if entry is None:
            journal = SQLiteJournal(path)
            entry = _Shared(journal, _inode(real) or 0)
        else:
            try:
                entry.journal.recheck()
            except BaseException:
                _shared[key] = entry
                raise
        entry.users += 1
        _shared[key] = entry  # most recently used last
        return entry.journal


def release_shared(journal: SQLiteJournal) -> None:
    """Give a borrowed journal back; idle ones beyond a few are closed."""
    with _shared_lock:
        for entry in _shared.values():
            if entry.journal is journal:
                entry.users -= 1
                break
        else:
            journal.close()
            return
        pid = os.getpid()
        idle = [k for k, e in _shared.items() if e.users == 0 and k[0] == pid]
        for key in idle[: max(0, len(idle) - _IDLE_KEPT)]:
            _shared.pop(key).journal.close()


@atexit.register
def _close_shared() -> None:
    pid = os.getpid()
    with _shared_lock:
        for key in [k for k in _shared if k[0] == pid]:
            _shared.pop(key).journal.close()
