"""The embedded SQLite journal: the conformance suite, bad files, migrations."""

from __future__ import annotations

import hashlib
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from orchestra import JournalError
from orchestra.journal import SCHEMA_VERSION, RunInfo, SQLiteJournal, _sqlite
from orchestra.journal.conformance import JournalConformance, JournalSpec


class TestSQLiteJournal(JournalConformance):
    @pytest.fixture
    def journal_spec(self, tmp_path: Path) -> JournalSpec:
        return JournalSpec("orchestra.journal:SQLiteJournal", (str(tmp_path / "runs.db"),))


def _digest(path: Path) -> bytes:
    return hashlib.sha256(path.read_bytes()).digest()


def _begin(path: Path, run_id: str = "r1") -> None:
    with SQLiteJournal(path) as journal:
        journal.begin_run(RunInfo(run_id=run_id, dag="etl", started_at=1.0, task_count=1))


def test_a_file_that_is_not_a_database_is_refused_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_text("my notes, not a journal\n" * 100)
    before = _digest(path)
    with pytest.raises(JournalError, match=r"notes\.db: not an orchestra journal") as info:
        SQLiteJournal(path)
    assert info.value.journal == str(path)
    assert _digest(path) == before


def test_an_sqlite_database_of_another_kind_is_refused_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    with closing(sqlite3.connect(path)) as db:
        db.execute("CREATE TABLE users (name TEXT)")
        db.commit()
    before = _digest(path)
    with pytest.raises(JournalError, match="an SQLite database of another kind"):
        SQLiteJournal(path)
    assert _digest(path) == before
    with closing(sqlite3.connect(path)) as db:
        db.execute("PRAGMA application_id = 42")
        db.commit()
    before = _digest(path)
    with pytest.raises(JournalError, match="application id 0x2a"):
        SQLiteJournal(path)
    assert _digest(path) == before
    assert not Path(f"{path}-wal").exists()


def test_a_journal_of_a_newer_schema_is_refused_naming_both_versions(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    _begin(path)
    with closing(sqlite3.connect(path)) as db:
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
        db.commit()
    before = _digest(path)
    with pytest.raises(JournalError) as info:
        SQLiteJournal(path)
    message = str(info.value)
    assert str(path) in message
    assert f"schema version {SCHEMA_VERSION + 1}" in message
    assert f"version {SCHEMA_VERSION}," in message
    assert "upgrade orchestra-hooks" in message
    assert _digest(path) == before


def test_an_older_schema_is_migrated_in_place_keeping_its_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "runs.db"
    _begin(path)
    # a next schema version: one more migration script, applied on open
    migration = "CREATE TABLE labels (run_id TEXT, label TEXT)"
    monkeypatch.setattr(_sqlite, "_MIGRATIONS", [*_sqlite._MIGRATIONS, migration])
    monkeypatch.setattr(_sqlite, "SCHEMA_VERSION", SCHEMA_VERSION + 1)
    with SQLiteJournal(path) as journal:
        assert journal.load_run("r1") is not None
    with closing(sqlite3.connect(path)) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION + 1
        assert db.execute("SELECT count(*) FROM labels").fetchone()[0] == 0
    monkeypatch.undo()  # this orchestra again: the file is now too new for it
    with pytest.raises(JournalError, match="newer than version"):
        SQLiteJournal(path)


def test_read_only_opening_never_writes(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    with pytest.raises(JournalError, match="no such file"):
        SQLiteJournal(path, read_only=True)
    _begin(path)
    with SQLiteJournal(path, read_only=True) as journal:
        assert [r.run_id for r in journal.list_runs()] == ["r1"]
        with pytest.raises(JournalError, match="cannot record a new run"):
            journal.begin_run(RunInfo(run_id="x", dag="etl", started_at=0.0, task_count=1))
