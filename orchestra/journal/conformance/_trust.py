"""Payloads the store holds are trusted only when their tag checks under the journal key."""

from __future__ import annotations

import os
import pickle
import time
from pathlib import Path
from typing import Any

import pytest

import orchestra
from orchestra import DAG, Task
from orchestra.journal._codec import code_digest, digest
from orchestra.journal._records import Journal, RunInfo, TaskRecord

__all__ = ["TrustTests"]

_KEY = "a team's journal key, 32 bytes+"
_OTHER_KEY = "someone else's key, 32 bytes++"


class _Planted:
    """A pickle that, loaded, makes a folder: the proof that it ran."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.mkdir, (str(self.marker),))


def _rows() -> list[int]:
    return [1, 2, 3]


def _total(rows: list[int]) -> int:
    return sum(rows)


def _dag() -> DAG:
    dag = DAG("trusted")
    dag.add(Task(id="rows", fn=_rows))
    dag.add(Task(id="total", fn=_total, deps=["rows"]))
    return dag


def _plant(journal: Journal, payload: bytes) -> str:
    """A run of ``_dag`` whose ``rows`` output is ``payload``, written without any key."""
    run_id = f"planted-{time.time_ns()}"
    journal.begin_run(RunInfo(run_id=run_id, dag="trusted", started_at=time.time(), task_count=2))
    record = TaskRecord(
        task_id="rows",
        state="succeeded",
        attempts=1,
        duration=0.1,
        error=None,
        code_digest=code_digest(_rows),
        input_digest=digest(b""),  # no upstreams
        output_digest=digest(payload),  # what someone without the key can compute
    )
    journal.record(run_id, [record], {digest(payload): payload})
    return run_id


class TrustTests:
    """Planted and foreign payloads are never deserialized; their tasks run again."""

    @pytest.mark.anyio
    async def test_a_planted_pickle_never_runs_and_its_task_runs_again(
        self, journal: Journal, tmp_path: Path
    ) -> None:
        marker = tmp_path / "pwned"
        planted = _plant(journal, pickle.dumps(_Planted(marker)))
        result = await orchestra.run(_dag(), journal=journal, resume=planted)
        assert not marker.exists()  # the pickle was never loaded
        assert result.ok
        assert result.reused == frozenset()
        assert result.attempts["rows"] == 1  # it ran again
        assert result.outputs == {"rows": [1, 2, 3], "total": 6}
        assert set(result.resume_notes) == {"rows"}
        assert "failed authentication" in result.resume_notes["rows"]

    @pytest.mark.anyio
    async def test_a_plain_payload_planted_is_not_trusted_either(self, journal: Journal) -> None:
        planted = _plant(journal, pickle.dumps([9, 9]))  # harmless, but not ours
        result = await orchestra.run(_dag(), journal=journal, resume=planted)
        assert result.outputs["rows"] == [1, 2, 3]
        assert result.reused == frozenset()

    @pytest.mark.anyio
    async def test_payloads_are_trusted_under_the_key_they_were_written_with(
        self, journal: Journal
    ) -> None:
        first = await orchestra.run(_dag(), journal=journal, journal_key=_KEY)
        other = await orchestra.run(
            _dag(), journal=journal, resume=first.run_id, journal_key=_OTHER_KEY
        )
        assert other.reused == frozenset()  # another key: nothing is trusted
        assert set(other.resume_notes) == {"rows"}  # total's upstream ran again
        same = await orchestra.run(_dag(), journal=journal, resume=first.run_id, journal_key=_KEY)
        assert same.reused == {"rows", "total"}
        assert same.resume_notes == {}
        assert same.outputs == {"rows": [1, 2, 3], "total": 6}
        # the user's own key (the default) is a third key
        default = await orchestra.run(_dag(), journal=journal, resume=first.run_id)
        assert default.reused == frozenset()

    @pytest.mark.anyio
    async def test_a_resumed_run_carries_the_trusted_payloads_on(self, journal: Journal) -> None:
        first = await orchestra.run(_dag(), journal=journal, journal_key=_KEY)
        second = await orchestra.run(_dag(), journal=journal, resume="last", journal_key=_KEY)
        third = await orchestra.run(_dag(), journal=journal, resume=second.run_id, journal_key=_KEY)
        assert second.resumed_from == first.run_id
        assert third.reused == {"rows", "total"}
