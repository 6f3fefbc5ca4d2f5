"""The embedded SQLite journal: the conformance suite, bad files, migrations, read-only paths."""

from __future__ import annotations

import ctypes
import hashlib
import json
import logging
import os
import pickle
import sqlite3
import subprocess
import sys
import threading
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

import orchestra
from orchestra import DAG, JournalError, Task
from orchestra.journal import SCHEMA_VERSION, PickleSerializer, RunInfo, SQLiteJournal, _sqlite
from orchestra.journal.conformance import JournalConformance, JournalSpec


class TestSQLiteJournal(JournalConformance):
    @pytest.fixture
    def journal_spec(self, tmp_path: Path) -> JournalSpec:
        return JournalSpec("orchestra.journal:SQLiteJournal", (str(tmp_path / "runs.db"),))

    def test_two_processes_journal_into_one_store_at_once(
        self, journal_spec: JournalSpec, tmp_path: Path
    ) -> None:
        super().test_two_processes_journal_into_one_store_at_once(journal_spec, tmp_path)
        with closing(sqlite3.connect(journal_spec.args[0])) as db:
            assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
            assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)


# -- bad input ----------------------------------------------------------------------------


def _digest(path: Path) -> bytes:
    return hashlib.sha256(path.read_bytes()).digest()


def _dag(ran: list[str]) -> DAG:
    dag = DAG("etl")
    dag.add(Task(id="extract", fn=lambda: ran.append("extract")))
    return dag


def _open_each_at_once(paths: list[str], barrier: Any, errors: Any) -> None:
    for path in paths:
        barrier.wait()  # every process opens this new file at the same moment
        try:
            SQLiteJournal(path).close()
        except JournalError as exc:
            errors.put(f"{path}: {exc}")


def test_processes_opening_one_new_file_at_once_all_open_it(tmp_path: Path) -> None:
    # Found in make test: a process read the header while another was migrating the new
    # file and saw "an SQLite database of another kind"; or WAL mode answered "locked".
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    paths = [str(tmp_path / f"new-{i}.db") for i in range(20)]
    barrier, errors = ctx.Barrier(5), ctx.Queue()
    processes = [
        ctx.Process(target=_open_each_at_once, args=(paths, barrier, errors)) for _ in range(5)
    ]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=60)
    assert [process.exitcode for process in processes] == [0] * 5
    failures = []
    while not errors.empty():
        failures.append(errors.get())
    assert failures == []
    for path in paths:
        with closing(sqlite3.connect(path)) as db:
            assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
            assert db.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)


def test_a_file_that_is_not_a_database_is_refused_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_text("my notes, not a journal\n" * 100)
    before = _digest(path)
    ran: list[str] = []
    with pytest.raises(JournalError, match=r"notes\.db: not an orchestra journal") as info:
        orchestra.run_sync(_dag(ran), journal=path)
    assert info.value.journal == str(path)
    assert ran == []
    assert _digest(path) == before


def test_an_sqlite_database_of_another_kind_is_refused_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    with closing(sqlite3.connect(path)) as db:
        db.execute("CREATE TABLE users (name TEXT)")
        db.commit()
    before = _digest(path)
    with pytest.raises(JournalError, match="an SQLite database of another kind"):
        SQLiteJournal(path)
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
    orchestra.run_sync(_dag([]), journal=path)
    with closing(sqlite3.connect(path)) as db:
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
        db.commit()
    before = _digest(path)
    ran: list[str] = []
    with pytest.raises(JournalError) as info:
        orchestra.run_sync(_dag(ran), journal=path)
    message = str(info.value)
    assert str(path) in message
    assert f"schema version {SCHEMA_VERSION + 1}" in message
    assert f"version {SCHEMA_VERSION}," in message
    assert "upgrade orchestra-hooks" in message
    assert ran == []
    assert _digest(path) == before


def test_an_older_schema_is_migrated_in_place_keeping_its_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "runs.db"
    first = orchestra.run_sync(_dag([]), journal=path)
    # a next schema version: one more migration script, applied on open
    migration = "CREATE TABLE labels (run_id TEXT, label TEXT)"
    monkeypatch.setattr(_sqlite, "MIGRATIONS", [*_sqlite.MIGRATIONS, migration])
    monkeypatch.setattr(_sqlite, "SCHEMA_VERSION", SCHEMA_VERSION + 1)
    with SQLiteJournal(path) as journal:
        run = journal.load_run(first.run_id)
        assert run is not None
        assert run.info.states == {"succeeded": 1}
    with closing(sqlite3.connect(path)) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION + 1
        assert db.execute("SELECT count(*) FROM labels").fetchone()[0] == 0
    monkeypatch.undo()  # this orchestra again: the file is now too new for it
    with pytest.raises(JournalError, match="newer than version"):
        SQLiteJournal(path)


class Forwarding:
    """A store on the ``Journal`` protocol alone (full records), kept in an SQLite file."""

    def __init__(self, path: Path) -> None:
        self.inner = SQLiteJournal(path)
        self.begin_run = self.inner.begin_run
        self.record = self.inner.record
        self.load_run = self.inner.load_run
        self.list_runs = self.inner.list_runs
        self.hold = self.inner.hold
        self.release = self.inner.release
        self.close = self.inner.close


def _outcomes(calls: list[str]) -> DAG:
    """Each way a task records: in place (None, atoms, a list, a failure), retried, not run."""

    def flaky() -> None:
        calls.append("flaky")
        if calls.count("flaky") == 1:
            raise ConnectionError("once")

    dag = DAG("outcomes")
    for k in range(5):
        dag.add(Task(id=f"none{k}", fn=lambda: None))
    dag.add(Task(id="rows", fn=lambda: [3, 1, 2]))
    for tid, atom in (("int", 7), ("str", "done"), ("bool", True), ("bytes", b"\x00")):
        dag.add(Task(id=tid, fn=lambda atom=atom: atom))
    dag.add(Task(id="long", fn=lambda: "x" * 1000))  # over the tests' cap: not kept
    dag.add(Task(id="bad", fn=lambda rows: 1 / 0, deps=["rows"]))
    dag.add(Task(id="after", fn=lambda bad: bad, deps=["bad"]))
    dag.add(Task(id="flaky", fn=flaky, retries=1))
    dag.add(Task(id="sum", fn=lambda none0, rows: sum(rows), deps=["none0", "rows"]))
    return dag


_CAPPED = PickleSerializer(max_bytes=200)
_REUSED = {"none0", "none1", "none2", "none3", "none4", "rows", "flaky", "sum"}
_REUSED |= {"int", "str", "bool", "bytes"}


def test_records_by_plan_index_read_back_as_full_records_do(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # the embedded store keeps a plan's ids and digests once and records tasks by index;
    # a store on the bare protocol gets full records: both read back the same
    indexed_path = tmp_path / "indexed.db"
    with caplog.at_level(logging.WARNING, logger="orchestra.journal"):
        indexed = orchestra.run_sync(_outcomes([]), journal=indexed_path, serializer=_CAPPED)
    assert "task 'long': output not kept (1018 bytes serialized, over the" in caplog.text
    store = Forwarding(tmp_path / "full.db")
    full = orchestra.run_sync(_outcomes([]), journal=store, serializer=_CAPPED)
    with SQLiteJournal(indexed_path) as journal:
        by_index = journal.load_run(indexed.run_id)
    by_record = store.load_run(full.run_id)
    store.close()
    assert by_index is not None
    assert by_record is not None
    assert set(by_index.tasks) == set(by_record.tasks) == set(indexed.states)

    def kept(tasks: Any) -> dict[str, tuple[Any, ...]]:
        return {t: r._replace(duration=None) for t, r in tasks.items()}

    assert kept(by_index.tasks) == kept(by_record.tasks)
    for run, result in ((by_index, indexed), (by_record, full)):
        for tid, record in run.tasks.items():
            assert record.duration == result.durations.get(tid, 0.0)
            assert record.state == result.states[tid].value
            assert record.attempts == result.attempts[tid]
    records = by_index.tasks
    assert records["none3"][1:3] == ("succeeded", 1)
    assert records["flaky"][1:3] == ("succeeded", 2)
    assert records["none3"].output_digest == records["flaky"].output_digest is not None
    assert records["bad"].error == "ZeroDivisionError: division by zero"
    assert records["after"][1:3] == ("upstream_failed", 0)
    assert records["long"][1:3] == ("succeeded", 1)
    assert records["long"].output_digest is None
    assert records["long"].note is not None
    assert "over the journal's cap of 200" in records["long"].note
    for tid in ("int", "str", "bool", "bytes", "rows"):
        assert pickle.loads(by_index.payloads[records[tid].output_digest]) == indexed.outputs[tid]
    assert len({records[t].output_digest for t in ("int", "str", "bool", "bytes")}) == 4
    with closing(sqlite3.connect(indexed_path)) as db:
        assert db.execute("SELECT count(*) FROM plans").fetchone() == (1,)
    again = orchestra.run_sync(
        _outcomes([]), journal=indexed_path, resume=indexed.run_id, serializer=_CAPPED
    )
    assert again.reused == _REUSED
    assert again.outputs == indexed.outputs
    with closing(sqlite3.connect(indexed_path)) as db:  # the second run shares the plan
        assert db.execute("SELECT count(*) FROM plans").fetchone() == (1,)


def _as_version_1(source: Path, target: Path) -> None:
    """Copy a journal of full records into a file of schema version 1, as it made them."""
    with closing(sqlite3.connect(target)) as db:
        for statement in _sqlite.MIGRATIONS[0].split(";"):
            db.execute(statement)
        db.execute(f"PRAGMA application_id = {_sqlite.APPLICATION_ID}")
        db.execute("PRAGMA user_version = 1")
        db.execute("ATTACH DATABASE ? AS src", (str(source),))
        db.execute(
            "INSERT INTO runs SELECT run_id, dag, started_at, task_count, resumed_from "
            "FROM src.runs"
        )
        db.execute("INSERT INTO batches SELECT * FROM src.batches")
        db.execute("INSERT INTO outputs SELECT * FROM src.outputs")
        db.commit()
        db.execute("DETACH DATABASE src")


def test_a_version_1_journal_is_migrated_and_its_runs_resume(tmp_path: Path) -> None:
    store = Forwarding(tmp_path / "full.db")
    first = orchestra.run_sync(_outcomes([]), journal=store, serializer=_CAPPED)
    expected = store.load_run(first.run_id)
    store.close()
    path = tmp_path / "v1.db"
    _as_version_1(tmp_path / "full.db", path)
    before = _digest(path)
    with pytest.raises(JournalError, match=r"schema version 1, .* open it once for writing"):
        SQLiteJournal(path, read_only=True)
    assert _digest(path) == before
    calls: list[str] = []
    again = orchestra.run_sync(
        _outcomes(calls), journal=path, resume=first.run_id, serializer=_CAPPED
    )
    assert again.reused == _REUSED
    assert calls == []  # flaky was reused: its body did not run
    with closing(sqlite3.connect(path)) as db:
        assert db.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
        assert db.execute("SELECT count(*) FROM plans").fetchone() == (1,)
        assert db.execute("SELECT count(*) FROM runs WHERE plan IS NULL").fetchone() == (1,)
    with SQLiteJournal(path, read_only=True) as journal:
        assert journal.load_run(first.run_id) == expected
        resumed = journal.load_run(again.run_id)
        assert resumed is not None
        assert resumed.info.resumed_from == first.run_id
        assert resumed.info.states == {"succeeded": 13, "failed": 1, "upstream_failed": 1}
        assert [r.run_id for r in journal.list_runs("outcomes")] == [again.run_id, first.run_id]


def test_read_only_opening_never_writes(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    with pytest.raises(JournalError, match="no such file"):
        SQLiteJournal(path, read_only=True)
    result = orchestra.run_sync(_dag([]), journal=path)
    with SQLiteJournal(path, read_only=True) as journal:
        assert [r.run_id for r in journal.list_runs()] == [result.run_id]
        with pytest.raises(JournalError, match="cannot record a new run"):
            journal.begin_run(RunInfo(run_id="x", dag="etl", started_at=0.0, task_count=1))


_READ_ONLY_CHILD = """
import sys
import orchestra

ran = []
dag = orchestra.DAG("etl")
dag.add(orchestra.Task(id="extract", fn=lambda: ran.append("extract")))
try:
    orchestra.run_sync(dag, journal=sys.argv[1])
except orchestra.JournalError as exc:
    print("JournalError:", exc)
print("ran:", ran)
"""


def _without_dac_override() -> None:
    """In the child: drop root's power to ignore file permissions (so 0o555 means it)."""
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (1, 2, 3):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER
        if libc.prctl(24, cap, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def _run_as_unprivileged(path: Path) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", _READ_ONLY_CHILD, str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=_without_dac_override if os.geteuid() == 0 else None,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.mark.parametrize("existing", [False, True], ids=["new-file", "existing-journal"])
def test_a_journal_on_a_read_only_path_fails_before_any_task_runs(
    tmp_path: Path, existing: bool
) -> None:
    folder = tmp_path / "readonly"
    folder.mkdir()
    path = folder / "runs.db"
    if existing:
        orchestra.run_sync(_dag([]), journal=path)
        path.chmod(0o444)
    folder.chmod(0o555)
    try:
        out = _run_as_unprivileged(path)
    finally:
        folder.chmod(0o755)
    assert f"JournalError: journal {path}: cannot" in out
    assert "ran: []" in out


def test_bad_journal_arguments_are_refused_before_the_run(tmp_path: Path) -> None:
    dag = _dag([])
    with pytest.raises(ValueError, match="resume= needs a journal="):
        orchestra.run_sync(dag, resume="last")
    with pytest.raises(ValueError, match="serializer= needs a journal="):
        orchestra.run_sync(dag, serializer=PickleSerializer())
    with pytest.raises(TypeError, match="journal must be a path"):
        orchestra.run_sync(dag, journal=42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="serializer must have dumps"):
        orchestra.run_sync(dag, journal=tmp_path / "r.db", serializer=object())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match='resume must be a run id or "last"'):
        orchestra.run_sync(dag, journal=tmp_path / "r.db", resume="")
    with pytest.raises(ValueError, match="max_bytes must be an int >= 1"):
        PickleSerializer(max_bytes=0)
    with pytest.raises(JournalError, match="has no run of DAG 'etl' to resume"):
        orchestra.run_sync(dag, journal=tmp_path / "r.db", resume="last")


# -- outputs that cannot be kept ----------------------------------------------------------


def test_an_output_that_cannot_be_serialized_stays_in_memory_and_reruns_on_resume(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "runs.db"
    calls: list[str] = []
    dag = DAG("locks")

    @dag.task
    def make_lock() -> Any:
        calls.append("make_lock")
        return threading.Lock()  # cannot be pickled

    @dag.task(deps=[make_lock])
    def use(make_lock: Any) -> bool:
        calls.append("use")
        return make_lock.acquire(blocking=False)

    with caplog.at_level(logging.WARNING, logger="orchestra.journal"):
        first = orchestra.run_sync(dag, journal=path)
    assert first.ok
    assert first.outputs["use"] is True
    assert "task 'make_lock': output not kept (cannot serialize it: TypeError" in caplog.text
    with SQLiteJournal(path) as journal:
        run = journal.load_run(first.run_id)
        assert run is not None
        record = run.tasks["make_lock"]
        assert record.output_digest is None
        assert record.note is not None
        assert "cannot serialize" in record.note
    second = orchestra.run_sync(dag, journal=path, resume="last")
    assert second.reused == frozenset()  # use's upstream re-ran, so use re-runs too
    assert calls == ["make_lock", "use", "make_lock", "use"]


def test_an_output_over_the_cap_is_not_journaled_with_a_clear_note(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "runs.db"
    dag = DAG("big")
    dag.add(Task(id="small", fn=lambda: "ok"))
    dag.add(Task(id="large", fn=lambda: "x" * 1000))
    with caplog.at_level(logging.WARNING, logger="orchestra.journal"):
        first = orchestra.run_sync(dag, journal=path, serializer=PickleSerializer(max_bytes=100))
    assert first.outputs["large"] == "x" * 1000
    assert "over the journal's cap of 100" in caplog.text
    second = orchestra.run_sync(
        dag, journal=path, resume="last", serializer=PickleSerializer(max_bytes=100)
    )
    assert second.reused == {"small"}


def test_a_serializer_of_your_own_is_used_both_ways(tmp_path: Path) -> None:
    class JSONSerializer:
        def dumps(self, obj: Any, /) -> bytes:
            return json.dumps(obj).encode()

        def loads(self, data: bytes, /) -> Any:
            return json.loads(data)

    path = tmp_path / "runs.db"
    dag = DAG("json")
    dag.add(Task(id="rows", fn=lambda: {"a": [1, 2]}))
    first = orchestra.run_sync(dag, journal=path, serializer=JSONSerializer())
    with SQLiteJournal(path) as journal:
        run = journal.load_run(first.run_id)
        assert run is not None
        assert set(run.payloads.values()) == {b'{"a": [1, 2]}'}
    second = orchestra.run_sync(dag, journal=path, resume="last", serializer=JSONSerializer())
    assert second.reused == {"rows"}
    assert second.outputs == {"rows": {"a": [1, 2]}}


def test_a_payload_that_cannot_be_loaded_reruns_its_task(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    class Forgetful:
        """Writes JSON, but cannot read it back (say, a class that moved since)."""

        def dumps(self, obj: Any, /) -> bytes:
            return json.dumps(obj).encode()

        def loads(self, data: bytes, /) -> Any:
            raise ValueError("no such class")

    path = tmp_path / "runs.db"
    dag = DAG("rows")
    dag.add(Task(id="rows", fn=lambda: [1, 2]))
    orchestra.run_sync(dag, journal=path, serializer=Forgetful())
    with caplog.at_level(logging.WARNING, logger="orchestra.journal"):
        second = orchestra.run_sync(dag, journal=path, resume="last", serializer=Forgetful())
    assert second.reused == frozenset()
    assert second.outputs == {"rows": [1, 2]}
    assert "cannot be loaded" in caplog.text
    assert second.resume_notes == {
        "rows": "its journaled output cannot be loaded (ValueError: no such class): "
        "the task ran again"
    }


def test_an_executor_that_keeps_outputs_remote_journals_states_but_no_outputs(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from test_executor_remote import StoreExecutor, chain

    path = tmp_path / "runs.db"
    first = orchestra.run_sync(chain(), journal=path, executor=StoreExecutor())
    assert first.ok
    with SQLiteJournal(path) as journal:
        run = journal.load_run(first.run_id)
        assert run is not None
        assert {r.state for r in run.tasks.values()} == {"succeeded"}
        assert all(r.output_digest is None for r in run.tasks.values())
        assert all("stays on the executor" in (r.note or "") for r in run.tasks.values())
        assert run.payloads == {}
    executor = StoreExecutor()
    with caplog.at_level(logging.WARNING, logger="orchestra.journal"):
        second = orchestra.run_sync(chain(), journal=path, resume="last", executor=executor)
    assert second.reused == frozenset()
    assert second.resumed_from == first.run_id
    assert [e for e in executor.log if e.startswith("run ")] == [f"run {t}" for t in second.states]
    assert "keeps outputs remote" in caplog.text


class _Fatal(BaseException):
    """Stands for a KeyboardInterrupt or SystemExit from a body."""


def test_a_fatal_error_and_fail_fast_still_journal_what_settled(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    dag = DAG("fatal")
    dag.add(Task(id="first", fn=lambda: 1))

    def explode(first: int) -> int:
        raise _Fatal("stop everything")

    dag.add(Task(id="second", fn=explode, deps=["first"]))
    dag.add(Task(id="third", fn=lambda second: second, deps=["second"]))
    with pytest.raises(_Fatal):
        orchestra.run_sync(dag, journal=path)
    with SQLiteJournal(path) as journal:
        (info,) = journal.list_runs("fatal")
        run = journal.load_run(info.run_id)
    assert run is not None
    assert {t: r.state for t, r in run.tasks.items()} == {
        "first": "succeeded",
        "second": "failed",
        "third": "upstream_failed",
    }
    assert run.tasks["second"].error == "_Fatal: stop everything"

    fast = DAG("fast")
    fast.add(Task(id="ok", fn=lambda: 1))
    fast.add(Task(id="bad", fn=lambda ok: 1 / 0, deps=["ok"]))
    fast.add(Task(id="after", fn=lambda bad: bad, deps=["bad"]))
    result = orchestra.run_sync(fast, journal=path, fail_fast=True)
    resumed = orchestra.run_sync(fast, journal=path, resume=result.run_id)
    assert resumed.reused == {"ok"}
    assert resumed.states["bad"] is orchestra.TaskState.FAILED


@pytest.mark.anyio
async def test_concurrent_runs_share_one_journal_file(tmp_path: Path) -> None:
    import anyio

    path = tmp_path / "runs.db"
    results: list[orchestra.RunResult] = []

    def wide(name: str) -> DAG:
        dag = DAG(name)
        for i in range(50):
            dag.add(Task(id=f"t{i}", fn=lambda i=i: i))
        return dag

    async def one(name: str) -> None:
        results.append(await orchestra.run(wide(name), journal=path))

    async with anyio.create_task_group() as tg:
        for name in ("a", "b", "c"):
            tg.start_soon(one, name)
    with SQLiteJournal(path) as journal:
        for result in results:
            run = journal.load_run(result.run_id)
            assert run is not None
            assert run.info.states == {"succeeded": 50}
    again = await orchestra.run(wide("b"), journal=path, resume="last")
    assert len(again.reused) == 50


def test_a_store_that_fails_to_record_is_logged_and_the_run_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    class Broken:
        def __init__(self) -> None:
            self.inner = SQLiteJournal(tmp_path / "runs.db")
            self.begin_run = self.inner.begin_run
            self.load_run = self.inner.load_run
            self.list_runs = self.inner.list_runs
            self.hold = self.inner.hold
            self.release = self.inner.release
            self.close = self.inner.close

        def record(self, run_id: str, tasks: Any, payloads: Any) -> None:
            raise OSError("disk full")

    journal = Broken()
    dag = DAG("broken")
    dag.add(Task(id="a", fn=lambda: 1))
    with caplog.at_level(logging.ERROR, logger="orchestra.journal"):
        result = orchestra.run_sync(dag, journal=journal)
    assert result.ok
    assert result.outputs == {"a": 1}
    assert "1 settled tasks could not be recorded" in caplog.text
    assert "disk full" in caplog.text
    run = journal.load_run(result.run_id)
    assert run is not None
    assert run.tasks == {}  # begun, but nothing recorded
    journal.close()


def test_a_serializer_that_cannot_take_none_marks_those_outputs_not_kept(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    class NoNone:
        def dumps(self, obj: Any, /) -> bytes:
            if obj is None:
                raise TypeError("no None here")
            return json.dumps(obj).encode()

        def loads(self, data: bytes, /) -> Any:
            return json.loads(data)

    path = tmp_path / "runs.db"
    dag = DAG("nones")
    dag.add(Task(id="nothing", fn=lambda: None))
    dag.add(Task(id="something", fn=lambda: 1))
    with caplog.at_level(logging.WARNING, logger="orchestra.journal"):
        first = orchestra.run_sync(dag, journal=path, serializer=NoNone())
    assert first.outputs == {"nothing": None, "something": 1}
    assert "task 'nothing': output not kept (cannot serialize it: TypeError: no None" in caplog.text
    second = orchestra.run_sync(dag, journal=path, resume="last", serializer=NoNone())
    assert second.reused == {"something"}
