"""``PostgresJournal``: the ``orchestra.Journal`` protocol on PostgreSQL (psycopg 3)."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Final, final

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from orchestra import JournalError
from orchestra.journal import JournaledRun, Lease, RunInfo, TaskRecord

__all__ = ["SCHEMA_VERSION", "PostgresJournal"]

# _MIGRATIONS[v] takes a database from schema version v to v + 1; a new version is one
# more script, never an edit of an older one.
_MIGRATIONS: list[str] = [
    """
    CREATE TABLE orchestra_journal_meta (
        name  text PRIMARY KEY,
        value text NOT NULL
    );
    CREATE TABLE orchestra_runs (
        seq          bigserial UNIQUE,
        run_id       text PRIMARY KEY,
        dag          text NOT NULL,
        started_at   double precision NOT NULL,
        task_count   integer NOT NULL,
        resumed_from text
    );
    CREATE INDEX orchestra_runs_by_dag ON orchestra_runs (dag, started_at DESC);
    CREATE INDEX orchestra_runs_by_start ON orchestra_runs (started_at DESC);
    CREATE TABLE orchestra_tasks (
        run_id        text NOT NULL,
        task_id       text NOT NULL,
        state         text NOT NULL,
        attempts      integer NOT NULL,
        duration      double precision NOT NULL,
        error         text,
        code_digest   text NOT NULL,
        input_digest  text NOT NULL,
        output_digest text,
        reused        boolean NOT NULL,
        note          text,
        PRIMARY KEY (run_id, task_id)
    );
    CREATE TABLE orchestra_outputs (
        digest  text PRIMARY KEY,
        payload bytea NOT NULL
    );
    """,
    # Leases (orchestra.journal.Lease): which process holds a run, going on or resumed.
    """
    CREATE TABLE orchestra_leases (
        run_id    text PRIMARY KEY,
        by_run    text NOT NULL,
        token     text NOT NULL,
        host      text NOT NULL,
        pid       integer NOT NULL,
        machine   text NOT NULL,
        since     double precision NOT NULL,
        heartbeat double precision NOT NULL
    );
    CREATE INDEX orchestra_leases_by_token ON orchestra_leases (token);
    """,
]

SCHEMA_VERSION: Final = len(_MIGRATIONS)
"""The schema version this package writes (and the newest it reads)."""

_LOCK_KEY: Final = 0x4F524348_4A524E4C  # "ORCHJRNL": serializes opening and migrating
_LEASE_KEY: Final = 0x4F524C53  # "ORLS": with a run id's hash, serializes its lease's CAS
_RUN_COLUMNS: Final = "run_id, dag, started_at, task_count, resumed_from"
_LEASE_COLUMNS: Final = "run_id, by_run, token, host, pid, machine, since, heartbeat"
_TASK_COLUMNS: Final = (
    "task_id, state, attempts, duration, error, code_digest, input_digest, output_digest, "
    "reused, note"
)
# A batch goes in as one statement: each column an array, unnested server-side (many times
# faster than a row per statement, even pipelined).
_INSERT_TASKS: Final = (
    f"INSERT INTO orchestra_tasks (run_id, {_TASK_COLUMNS}) SELECT %s, * FROM unnest("
    "%s::text[], %s::text[], %s::int[], %s::float8[], %s::text[], %s::text[], %s::text[], "
    "%s::text[], %s::bool[], %s::text[]) "
    "ON CONFLICT (run_id, task_id) DO UPDATE SET "
    + ", ".join(f"{c} = EXCLUDED.{c}" for c in _TASK_COLUMNS.split(", ")[1:])
)
_INSERT_OUTPUTS: Final = (
    "INSERT INTO orchestra_outputs SELECT * FROM unnest(%s::text[], %s::bytea[]) "
    "ON CONFLICT DO NOTHING"
)


@final
class PostgresJournal:
    """The orchestra run journal in a PostgreSQL database.

    Pass it as ``run(dag, journal=PostgresJournal(dsn))``; it is not closed by the run,
    so one journal serves many runs (close it when done, or use it as a context manager).

    Args:
        dsn: a libpq connection string or URI (``postgresql://user@host/db``).
        connect_timeout: seconds to wait for the server.

    Raises:
        orchestra.JournalError: the server cannot be reached, the database holds tables
            of that name that are not an orchestra journal, or its journal schema is
            newer than this package reads (nothing is changed then).
    """

    def __init__(self, dsn: str, *, connect_timeout: float = 10.0) -> None:
        self.dsn = dsn
        self._name = _masked(dsn)
        self._lock = threading.Lock()
        try:
            self._conn = psycopg.connect(
                dsn, autocommit=True, connect_timeout=max(1, round(connect_timeout))
            )
        except psycopg.Error as exc:
            raise self._error(f"cannot connect ({_first_line(exc)})") from exc
        try:
            self._check_and_migrate()
        except BaseException:
            self._conn.close()
            raise

    def __repr__(self) -> str:
        return f"PostgresJournal({self._name!r})"

    def __str__(self) -> str:
        return self._name

    def __enter__(self) -> PostgresJournal:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _error(self, message: str) -> JournalError:
        return JournalError(f"journal {self._name}: {message}", journal=self._name)

    # -- opening and migrating ------------------------------------------------------------

    def _check_and_migrate(self) -> None:
        conn = self._conn
        try:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
                version = self._version()
                for script in _MIGRATIONS[version:]:
                    conn.execute(script)
                if version < SCHEMA_VERSION:
                    conn.execute(
                        "INSERT INTO orchestra_journal_meta VALUES ('schema_version', %s) "
                        "ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value",
                        (str(SCHEMA_VERSION),),
                    )
        except psycopg.Error as exc:
            raise self._error(f"cannot prepare its tables ({_first_line(exc)})") from exc

    def _version(self) -> int:
        conn = self._conn
        meta = _one(conn, "SELECT to_regclass('orchestra_journal_meta')")
        if meta is None:
            if _one(conn, "SELECT to_regclass('orchestra_runs')") is not None:
                raise self._error(
                    "not an orchestra journal (it has an orchestra_runs table of another kind)"
                )
            return 0
        value = _one(conn, "SELECT value FROM orchestra_journal_meta WHERE name = 'schema_version'")
        version = int(value) if value is not None else 0
        if version > SCHEMA_VERSION:
            raise self._error(
                f"schema version {version} is newer than version {SCHEMA_VERSION}, the "
                "newest this orchestra-hooks-postgres reads: upgrade it to use this journal "
                "(the database is unchanged)"
            )
        return version

    @contextmanager
    def _write(self, what: str) -> Iterator[psycopg.Connection[Any]]:
        with self._lock:
            try:
                with self._conn.transaction():
                    yield self._conn
            except psycopg.Error as exc:
                raise self._error(f"cannot {what} ({_first_line(exc)})") from exc

    # -- the Journal protocol -------------------------------------------------------------

    def begin_run(self, run: RunInfo) -> None:
        """Record that ``run`` began."""
        with self._write("record a new run") as conn:
            conn.execute(
                f"INSERT INTO orchestra_runs ({_RUN_COLUMNS}) VALUES (%s, %s, %s, %s, %s) "
                "ON CONFLICT (run_id) DO UPDATE SET dag = EXCLUDED.dag, "
                "started_at = EXCLUDED.started_at, task_count = EXCLUDED.task_count, "
                "resumed_from = EXCLUDED.resumed_from",
                (run.run_id, run.dag, run.started_at, run.task_count, run.resumed_from),
            )

    def record(
        self, run_id: str, tasks: Sequence[TaskRecord], payloads: Mapping[str, bytes]
    ) -> None:
        """Record a batch of settled tasks in one transaction (each payload stored once)."""
        last = {t.task_id: t for t in tasks}  # one row per task: the batch's last record
        columns = [list(c) for c in zip(*last.values(), strict=True)] or [[]] * 10
        with self._write("record tasks") as conn:
            if payloads:
                # in digest order: two writers inserting the same outputs never deadlock
                digests = sorted(payloads)
                conn.execute(_INSERT_OUTPUTS, (digests, [payloads[d] for d in digests]))
            if last:
                conn.execute(_INSERT_TASKS, (run_id, *columns))

    def load_run(self, run_id: str) -> JournaledRun | None:
        """Read a run back with its tasks and payloads; None if there is no such run."""
        with self._lock, self._conn.transaction():
            conn = self._conn
            row = conn.execute(
                f"SELECT {_RUN_COLUMNS} FROM orchestra_runs WHERE run_id = %s", (run_id,)
            ).fetchone()
            if row is None:
                return None
            tasks = {
                r[0]: TaskRecord._make(r)
                for r in conn.execute(
                    f"SELECT {_TASK_COLUMNS} FROM orchestra_tasks WHERE run_id = %s", (run_id,)
                )
            }
            digests = list({t.output_digest for t in tasks.values() if t.output_digest})
            payloads: dict[str, bytes] = {
                d: bytes(p)
                for d, p in conn.execute(
                    "SELECT digest, payload FROM orchestra_outputs WHERE digest = ANY(%s)",
                    (digests,),
                )
            }
        counts: dict[str, int] = {}
        for t in tasks.values():
            counts[t.state] = counts.get(t.state, 0) + 1
        return JournaledRun(info=RunInfo.from_row(row, counts), tasks=tasks, payloads=payloads)

    def list_runs(self, dag: str | None = None, *, limit: int = 20) -> list[RunInfo]:
        """The latest runs, newest first (of DAG ``dag`` only, if given), with state counts."""
        where = "WHERE dag = %s" if dag is not None else ""
        args: list[Any] = [dag] if dag is not None else []
        with self._lock, self._conn.transaction():
            conn = self._conn
            rows = conn.execute(
                f"SELECT {_RUN_COLUMNS} FROM orchestra_runs {where} "
                "ORDER BY started_at DESC, seq DESC LIMIT %s",
                [*args, limit],
            ).fetchall()
            counts: dict[str, dict[str, int]] = {r[0]: {} for r in rows}
            for run_id, state, n in conn.execute(
                "SELECT run_id, state, count(*) FROM orchestra_tasks "
                "WHERE run_id = ANY(%s) GROUP BY run_id, state",
                (list(counts),),
            ):
                counts[run_id][state] = n
        return [RunInfo.from_row(r, counts[r[0]]) for r in rows]

    def hold(self, lease: Lease, *, replacing: str | None = None) -> Lease | None:
        """Store ``lease`` unless another holds its run (see ``orchestra.Journal.hold``).

        One transaction under an advisory lock of the run, so concurrent holders (of any
        process or machine) take turns.
        """
        with self._write(f"hold run {lease.run_id}") as conn:
            conn.execute(
                "SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (_LEASE_KEY, lease.run_id)
            )
            row = conn.execute(
                f"SELECT {_LEASE_COLUMNS} FROM orchestra_leases WHERE run_id = %s",
                (lease.run_id,),
            ).fetchone()
            if row is not None and row[2] not in (lease.token, replacing):
                return Lease(**dict(zip(_LEASE_COLUMNS.split(", "), row, strict=True)))
            conn.execute(
                f"INSERT INTO orchestra_leases ({_LEASE_COLUMNS}) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (run_id) DO UPDATE SET "
                + ", ".join(f"{c} = EXCLUDED.{c}" for c in _LEASE_COLUMNS.split(", ")[1:]),
                (
                    lease.run_id,
                    lease.by_run,
                    lease.token,
                    lease.host,
                    lease.pid,
                    lease.machine,
                    lease.since,
                    lease.heartbeat,
                ),
            )
            return None

    def release(self, token: str) -> None:
        """Drop the leases of holder ``token``."""
        with self._write("release its leases") as conn:
            conn.execute("DELETE FROM orchestra_leases WHERE token = %s", (token,))

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._conn.close()


def _one(conn: psycopg.Connection[Any], query: str) -> Any:
    row = conn.execute(query).fetchone()
    return None if row is None else row[0]


def _masked(dsn: str) -> str:
    """The DSN without its password, for messages."""
    try:
        params = conninfo_to_dict(dsn)
    except psycopg.Error:
        return "a PostgreSQL database"
    params.pop("password", None)
    return make_conninfo("", **params)


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
