"""The SQLite journal's leases: renewed while a run goes, as the conformance suite cannot see."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

import orchestra
from orchestra.dag import _journal
from orchestra.journal import SQLiteJournal
from orchestra.journal._lease import new_lease


def test_a_long_run_renews_its_lease(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_journal, "RENEW_EVERY", 0.05)
    path = tmp_path / "runs.db"
    probe = new_lease("probe")

    def heartbeats() -> list[float]:
        seen = []
        with SQLiteJournal(path) as journal:
            (going,) = journal.list_runs("renewed")
            for _ in range(2):
                held = journal.hold(probe.holding(going.run_id))
                assert held is not None  # the run holds itself while it goes
                assert held.going
                seen.append(held.heartbeat)
                time.sleep(0.4)
        return seen

    dag = orchestra.DAG("renewed")
    dag.add(orchestra.Task(id="watch", fn=heartbeats))
    result = orchestra.run_sync(dag, journal=path)
    first, second = result.outputs["watch"]
    assert second - first >= 0.2
    with SQLiteJournal(path) as journal:  # released at the end
        assert journal.hold(probe.holding(result.run_id)) is None
