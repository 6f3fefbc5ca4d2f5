"""The store protocol's part of the conformance suite: records in, records out."""

from __future__ import annotations

from typing import Any

from orchestra.journal._codec import digest
from orchestra.journal._records import Journal, RunInfo, TaskRecord
from orchestra.journal.conformance._spec import JournalSpec

__all__ = ["StoreTests"]


def _record(task_id: str, state: str = "succeeded", payload: bytes | None = None) -> TaskRecord:
    return TaskRecord(
        task_id=task_id,
        state=state,
        attempts=1,
        duration=0.25,
        error=None if state != "failed" else "ValueError: bad row\nsecond line",
        code_digest=digest(b"code:" + task_id.encode()),
        input_digest=digest(b""),
        output_digest=None if payload is None else digest(payload),
        reused=False,
        note=None,
    )


def _info(run_id: str, dag: str = "etl", started_at: float = 1000.0, **kw: Any) -> RunInfo:
    return RunInfo(run_id=run_id, dag=dag, started_at=started_at, task_count=3, **kw)


def _payloads(*records: tuple[TaskRecord, bytes]) -> dict[str, bytes]:
    return {r.output_digest: p for r, p in records if r.output_digest is not None}


class StoreTests:
    """The store protocol: begin, record, load and list runs."""

    def test_a_begun_run_loads_back_without_tasks(self, journal: Journal) -> None:
        journal.begin_run(_info("r1", resumed_from="r0"))
        run = journal.load_run("r1")
        assert run is not None
        assert run.info == _info("r1", resumed_from="r0")
        assert run.tasks == {}
        assert run.info.settled == 0

    def test_an_unknown_run_loads_as_none(self, journal: Journal) -> None:
        assert journal.load_run("nope") is None
        journal.begin_run(_info("r1"))
        assert journal.load_run("r2") is None

    def test_records_and_payloads_round_trip_exactly(self, journal: Journal) -> None:
        blob = bytes(range(256)) * 3  # every byte value, NUL included
        ok = _record("é-task ✓", payload=blob)
        failed = _record("failed", "failed")
        skipped = _record("skipped", "skipped")._replace(attempts=0, duration=0.0)
        noted = _record("big")._replace(note="output not kept (too big)")
        journal.begin_run(_info("r1"))
        journal.record("r1", [ok, failed, skipped, noted], _payloads((ok, blob)))
        run = journal.load_run("r1")
        assert run is not None
        assert run.tasks == {r.task_id: r for r in (ok, failed, skipped, noted)}
        assert all(type(r) is TaskRecord for r in run.tasks.values())
        assert run.payloads == {ok.output_digest: blob}
        assert run.info.states == {"succeeded": 2, "failed": 1, "skipped": 1}
        assert run.info.settled == 4

    def test_batches_add_up_and_a_task_recorded_again_is_replaced(self, journal: Journal) -> None:
        journal.begin_run(_info("r1"))
        journal.record("r1", [_record("a", "failed")], {})
        journal.record("r1", [_record("b"), _record("c")], {})
        journal.record("r1", [_record("a")], {})
        run = journal.load_run("r1")
        assert run is not None
        assert sorted(run.tasks) == ["a", "b", "c"]
        assert run.tasks["a"].state == "succeeded"
        assert run.info.states == {"succeeded": 3}

    def test_one_payload_serves_every_run_and_task_that_has_its_digest(
        self, journal: Journal
    ) -> None:
        blob = b"same output"
        a, b = _record("a", payload=blob), _record("b", payload=blob)
        journal.begin_run(_info("r1"))
        journal.record("r1", [a], _payloads((a, blob)))
        journal.record("r1", [b], _payloads((b, blob)))
        journal.begin_run(_info("r2"))
        journal.record("r2", [a._replace(reused=True)], _payloads((a, blob)))
        for run_id in ("r1", "r2"):
            run = journal.load_run(run_id)
            assert run is not None
            assert run.payloads == {digest(blob): blob}
        r2 = journal.load_run("r2")
        assert r2 is not None
        assert r2.tasks["a"].reused is True

    def test_runs_list_newest_first_by_dag_with_limit_and_counts(self, journal: Journal) -> None:
        journal.begin_run(_info("old", started_at=1000.0))
        journal.begin_run(_info("other", dag="billing", started_at=1500.0))
        journal.begin_run(_info("new", started_at=2000.0, resumed_from="old"))
        journal.record("new", [_record("a"), _record("b", "failed")], {})
        assert [r.run_id for r in journal.list_runs()] == ["new", "other", "old"]
        assert [r.run_id for r in journal.list_runs("etl")] == ["new", "old"]
        assert [r.run_id for r in journal.list_runs("etl", limit=1)] == ["new"]
        assert journal.list_runs("nothing") == []
        new = journal.list_runs("etl", limit=1)[0]
        assert new.resumed_from == "old"
        assert new.states == {"succeeded": 1, "failed": 1}
        assert new.task_count == 3
        assert new.started_at == 2000.0

    def test_a_second_handle_sees_what_the_first_wrote(
        self, journal: Journal, journal_spec: JournalSpec
    ) -> None:
        journal.begin_run(_info("r1"))
        journal.record("r1", [_record("a", payload=b"x")], {digest(b"x"): b"x"})
        other = journal_spec.open()
        try:
            run = other.load_run("r1")
            assert run is not None
            assert run.payloads == {digest(b"x"): b"x"}
            other.begin_run(_info("r2", started_at=5000.0))
        finally:
            other.close()
        assert [r.run_id for r in journal.list_runs()] == ["r2", "r1"]

    def test_the_store_is_a_journal(self, journal: Journal) -> None:
        assert isinstance(journal, Journal)
