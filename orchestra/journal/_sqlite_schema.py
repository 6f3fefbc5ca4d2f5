"""The SQLite journal's schema (its migrations) and its leases' statements."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

from orchestra.journal._lease import Lease

__all__ = ["MIGRATIONS", "hold_lease", "insert_lease", "locked", "transaction"]

# MIGRATIONS[v] takes a file from schema version v to v + 1; a new schema version is one
# more script here, never an edit of an older one.
MIGRATIONS: list[str] = [
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
    # Leases (``orchestra.journal.Lease``): which process holds a run (going on, or
    # being resumed), so that two processes never run its tasks at once.
    """
    CREATE TABLE leases (
        run_id    TEXT PRIMARY KEY,
        by_run    TEXT NOT NULL,
        token     TEXT NOT NULL,
        host      TEXT NOT NULL,
        pid       INTEGER NOT NULL,
        machine   TEXT NOT NULL,
        since     REAL NOT NULL,
        heartbeat REAL NOT NULL
    ) WITHOUT ROWID;
    CREATE INDEX leases_by_token ON leases (token);
    """,
]

_LEASE_COLUMNS: Final = "run_id, by_run, token, host, pid, machine, since, heartbeat"


def insert_lease(db: sqlite3.Connection, lease: Lease) -> None:
    """Store ``lease`` in place of its run's (inside the caller's transaction)."""
    db.execute(
        f"INSERT OR REPLACE INTO leases ({_LEASE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
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


def hold_lease(db: sqlite3.Connection, lease: Lease, replacing: str | None) -> Lease | None:
    """``Journal.hold``, inside the caller's write transaction."""
    row = db.execute(
        f"SELECT {_LEASE_COLUMNS} FROM leases WHERE run_id = ?", (lease.run_id,)
    ).fetchone()
    if row is not None and row[2] != lease.token and (replacing is None or row[2] != replacing):
        run_id, by_run, token, host, pid, machine, since, heartbeat = row
        return Lease(
            run_id=run_id,
            by_run=by_run,
            token=token,
            host=host,
            pid=pid,
            machine=machine,
            since=since,
            heartbeat=heartbeat,
        )
    insert_lease(db, lease)
    return None


def locked(exc: BaseException) -> bool:
    """Whether SQLite answered "database is locked" (another connection holds the file)."""
    return isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc)


@contextmanager
def transaction(db: sqlite3.Connection) -> Iterator[None]:
    """``BEGIN IMMEDIATE`` (the write lock at once: no deadlock upgrading a read) ... COMMIT."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")
