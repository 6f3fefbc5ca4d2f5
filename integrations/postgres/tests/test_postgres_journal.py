"""PostgresJournal on a real PostgreSQL server: the conformance suite and bad input."""

from __future__ import annotations

import os
import pickle
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psycopg
import pytest
from orchestra_postgres import SCHEMA_VERSION, PostgresJournal

import orchestra
from orchestra import DAG, JournalError, Task
from orchestra.journal import Journal
from orchestra.journal.conformance import JournalConformance, JournalSpec

if TYPE_CHECKING:  # the fixture's type (not imported: every integration has a conftest)
    from conftest import PostgresServer


class TestPostgresJournal(JournalConformance):
    @pytest.fixture
    def journal_spec(self, postgres: PostgresServer) -> JournalSpec:
        return JournalSpec("orchestra_postgres:PostgresJournal", (postgres.new_database(),))


def test_public_names() -> None:
    import orchestra_postgres

    assert orchestra_postgres.__all__ == ["SCHEMA_VERSION", "PostgresJournal"]
    assert PostgresJournal.__module__ == "orchestra_postgres"
    assert orchestra_postgres.__doc__ is not None
    assert "PostgresJournal(" in orchestra_postgres.__doc__
    assert issubclass(PostgresJournal, Journal)


def test_an_unreachable_server_is_a_clear_error_without_the_password() -> None:
    with socket_port() as port:
        dsn = f"postgresql://me:s3cret@127.0.0.1:{port}/runs"
        with pytest.raises(JournalError, match="cannot connect") as info:
            PostgresJournal(dsn, connect_timeout=2)
    assert "s3cret" not in str(info.value)
    assert "127.0.0.1" in str(info.value)


def test_a_newer_schema_is_refused_naming_both_versions(postgres: PostgresServer) -> None:
    dsn = postgres.new_database()
    PostgresJournal(dsn).close()
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(
            "UPDATE orchestra_journal_meta SET value = %s WHERE name = 'schema_version'",
            (str(SCHEMA_VERSION + 1),),
        )
    ran: list[str] = []
    dag = DAG("etl")
    dag.add(Task(id="extract", fn=lambda: ran.append("extract")))
    with pytest.raises(JournalError) as info:
        orchestra.run_sync(dag, journal=PostgresJournal(dsn))
    message = str(info.value)
    assert f"schema version {SCHEMA_VERSION + 1}" in message
    assert f"version {SCHEMA_VERSION}," in message
    assert "journal_" in message  # names the database
    assert ran == []


def test_tables_of_another_kind_are_refused_and_left_alone(postgres: PostgresServer) -> None:
    dsn = postgres.new_database()
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE orchestra_runs (id int)")
        conn.execute("INSERT INTO orchestra_runs VALUES (7)")
    with pytest.raises(JournalError, match="not an orchestra journal"):
        PostgresJournal(dsn)
    with psycopg.connect(dsn, autocommit=True) as conn:
        assert conn.execute("SELECT id FROM orchestra_runs").fetchall() == [(7,)]
        assert conn.execute("SELECT to_regclass('orchestra_journal_meta')").fetchone() == (None,)


def test_a_role_that_cannot_write_fails_before_any_task_runs(postgres: PostgresServer) -> None:
    dsn = postgres.new_database()
    PostgresJournal(dsn).close()
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE ROLE reader LOGIN")
        conn.execute("GRANT SELECT ON ALL TABLES IN SCHEMA public TO reader")
    reader_dsn = dsn.replace("postgres@", "reader@")
    ran: list[str] = []
    dag = DAG("etl")
    dag.add(Task(id="extract", fn=lambda: ran.append("extract")))
    journal = PostgresJournal(reader_dsn)
    try:
        assert journal.list_runs() == []  # reading is allowed
        # its first write, the run's lease, is refused
        with pytest.raises(JournalError, match=r"cannot hold run \w+ \(permission denied"):
            orchestra.run_sync(dag, journal=journal)
    finally:
        journal.close()
    assert ran == []


class socket_port:
    """A local port with nothing listening on it, for the unreachable-server test."""

    def __enter__(self) -> int:
        import socket

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return int(s.getsockname()[1])

    def __exit__(self, *exc: object) -> None:
        return None


class _Planted:
    """A pickle that, loaded, makes a folder: the proof that it ran."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.mkdir, (str(self.marker),))


def _rows() -> list[int]:
    return [1, 2]


def test_a_pickle_written_into_the_database_never_runs_on_resume(
    postgres: PostgresServer, tmp_path: Path
) -> None:
    dsn = postgres.new_database()
    dag = DAG("rows")
    dag.add(Task(id="rows", fn=_rows))
    marker = tmp_path / "pwned"
    with PostgresJournal(dsn) as journal:
        orchestra.run_sync(dag, journal=journal)
    with psycopg.connect(dsn, autocommit=True) as conn:  # the attack: the output replaced
        conn.execute("UPDATE orchestra_outputs SET payload = %s", (pickle.dumps(_Planted(marker)),))
    with PostgresJournal(dsn) as journal:
        again = orchestra.run_sync(dag, journal=journal, resume="last")
    assert not marker.exists()
    assert again.reused == frozenset()
    assert again.outputs == {"rows": [1, 2]}
    assert "failed authentication" in again.resume_notes["rows"]
