"""Leases: one process at a time runs a run's tasks; dead holders' runs are taken back."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import attrs
import pytest

import orchestra
from orchestra import DAG, JournalError, Task
from orchestra.journal._lease import LEASE_TTL, Lease, new_lease
from orchestra.journal._records import Journal, RunInfo
from orchestra.journal.conformance._processes import crash, finish_flow, start_flow
from orchestra.journal.conformance._spec import JournalSpec

__all__ = ["LeaseTests"]


def _one() -> int:
    return 1


def _plus(one: int) -> int:
    return one + 1


def _dag() -> DAG:
    dag = DAG("leased")
    dag.add(Task(id="one", fn=_one))
    dag.add(Task(id="two", fn=_plus, deps=["one"]))
    return dag


def _dead_pid() -> int:
    """The id of a process of this machine that has ended (and was reaped)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _holder(run_id: str, **changes: Any) -> Lease:
    """A lease on ``run_id`` held by "another resume": this live process, another token."""
    lease = new_lease(f"other-{time.time_ns()}").holding(run_id)
    return attrs.evolve(lease, **changes)


class LeaseTests:
    """``hold``/``release`` and what ``run(resume=...)`` does with them."""

    def test_hold_is_a_compare_and_set_on_the_runs_lease(self, journal: Journal) -> None:
        mine, theirs = new_lease("r1"), new_lease("r1")
        assert journal.hold(mine) is None  # free: held now
        assert journal.hold(mine.renewed(mine.heartbeat + 1)) is None  # a renewal
        found = journal.hold(theirs)
        assert found == mine.renewed(mine.heartbeat + 1)  # refused: the current lease
        assert journal.hold(theirs, replacing="not its token") == found
        assert journal.hold(theirs, replacing=mine.token) is None  # taken over
        assert journal.hold(mine) == theirs
        assert journal.hold(new_lease("r2")) is None  # another run: its own lease
        journal.release(mine.token)  # not its holder any more: nothing to drop
        assert journal.hold(mine) == theirs
        journal.release(theirs.token)
        assert journal.hold(mine) is None

    def test_one_release_drops_every_lease_of_its_holder(self, journal: Journal) -> None:
        own = new_lease("new")
        resumed = own.holding("old")
        assert journal.hold(own) is None
        assert journal.hold(resumed) is None
        journal.release(own.token)
        other = new_lease("x")
        assert journal.hold(other.holding("new")) is None
        assert journal.hold(other.holding("old")) is None

    @pytest.mark.anyio
    async def test_a_run_releases_its_leases_however_it_ends(self, journal: Journal) -> None:
        first = await orchestra.run(_dag(), journal=journal)
        resumed = await orchestra.run(_dag(), journal=journal, resume=first.run_id)
        other = new_lease("x")
        for run_id in (first.run_id, resumed.run_id):
            assert journal.hold(other.holding(run_id)) is None
        failing = DAG("leased")
        failing.add(Task(id="one", fn=lambda: 1 / 0))
        failed = await orchestra.run(failing, journal=journal)
        assert not failed.ok
        assert journal.hold(other.holding(failed.run_id)) is None

    @pytest.mark.anyio
    async def test_a_second_resume_is_refused_naming_the_run_and_its_holder(
        self, journal: Journal
    ) -> None:
        first = await orchestra.run(_dag(), journal=journal)
        holder = _holder(first.run_id)
        assert journal.hold(holder) is None
        with pytest.raises(JournalError) as info:
            await orchestra.run(_dag(), journal=journal, resume=first.run_id)
        message = str(info.value)
        assert f"run {first.run_id} is being resumed by run {holder.by_run}" in message
        assert f"pid {os.getpid()} on host {holder.host}" in message
        assert "resume_wait=" in message
        with pytest.raises(JournalError, match=f"run {first.run_id} is being resumed"):
            await orchestra.run(_dag(), journal=journal, resume="last")
        assert journal.hold(holder.renewed()) is None  # the refused resumes took nothing

    @pytest.mark.anyio
    async def test_two_resumes_at_once_in_one_process_run_each_task_once(
        self, journal: Journal
    ) -> None:
        import anyio

        failing = DAG("leased")
        failing.add(Task(id="one", fn=_one))
        failing.add(Task(id="two", fn=lambda one: 1 / 0, deps=["one"]))
        first = await orchestra.run(failing, journal=journal)
        ran: list[str] = []
        release = anyio.Event()

        async def two(one: int) -> int:
            ran.append("two")
            await release.wait()
            return one + 1

        outcomes: list[object] = []

        async def resume() -> None:
            dag = DAG("leased")
            dag.add(Task(id="one", fn=_one))
            dag.add(Task(id="two", fn=two, deps=["one"]))
            try:
                outcomes.append(await orchestra.run(dag, journal=journal, resume=first.run_id))
            except JournalError as exc:
                outcomes.append(exc)
                release.set()  # the other one may end now

        with anyio.fail_after(30):  # two holders would both wait for ever
            async with anyio.create_task_group() as tg:
                tg.start_soon(resume)
                tg.start_soon(resume)
        assert ran == ["two"]
        refused = [o for o in outcomes if isinstance(o, JournalError)]
        assert len(refused) == 1
        assert f"run {first.run_id} is being resumed" in str(refused[0])

    @pytest.mark.anyio
    async def test_resume_wait_waits_for_the_holder_to_end(self, journal: Journal) -> None:
        first = await orchestra.run(_dag(), journal=journal)
        holder = _holder(first.run_id)
        assert journal.hold(holder) is None
        started = time.monotonic()
        with pytest.raises(JournalError, match="is being resumed"):
            await orchestra.run(_dag(), journal=journal, resume=first.run_id, resume_wait=0.3)
        assert time.monotonic() - started >= 0.3
        timer = threading.Timer(0.5, journal.release, (holder.token,))
        timer.start()
        try:
            resumed = await orchestra.run(
                _dag(), journal=journal, resume=first.run_id, resume_wait=30
            )
        finally:
            timer.cancel()
        assert resumed.reused == {"one", "two"}
        assert time.monotonic() - started >= 0.8

    @pytest.mark.anyio
    async def test_a_dead_holders_lease_is_taken_back(self, journal: Journal) -> None:
        runs = [await orchestra.run(_dag(), journal=journal) for _ in range(3)]
        stale = time.time() - LEASE_TTL - 1
        dead = [
            _holder(runs[0].run_id, pid=_dead_pid()),  # this machine: its process is gone
            _holder(runs[1].run_id, machine="elsewhere", since=stale, heartbeat=stale),
        ]
        for lease in dead:
            assert journal.hold(lease) is None
        for run in runs[:2]:
            resumed = await orchestra.run(_dag(), journal=journal, resume=run.run_id)
            assert resumed.reused == {"one", "two"}
        alive = _holder(runs[2].run_id, machine="elsewhere")  # renewed just now: alive
        assert journal.hold(alive) is None
        with pytest.raises(JournalError, match="is being resumed"):
            await orchestra.run(_dag(), journal=journal, resume=runs[2].run_id)

    @pytest.mark.anyio
    async def test_resume_last_never_picks_a_run_that_is_still_going(
        self, journal: Journal
    ) -> None:
        finished = await orchestra.run(_dag(), journal=journal)
        going = new_lease(f"going-{time.time_ns()}")  # a run under way, in a live process
        assert journal.hold(going) is None
        journal.begin_run(
            RunInfo(run_id=going.run_id, dag="leased", started_at=time.time(), task_count=2)
        )
        resumed = await orchestra.run(_dag(), journal=journal, resume="last")
        assert resumed.resumed_from == finished.run_id
        with pytest.raises(JournalError, match=f"run {going.run_id} is still going"):
            await orchestra.run(_dag(), journal=journal, resume=going.run_id)
        # once its process died, it can be resumed
        journal.release(going.token)
        assert journal.hold(attrs.evolve(going, pid=_dead_pid())) is None
        crashed = await orchestra.run(_dag(), journal=journal, resume=going.run_id)
        assert crashed.resumed_from == going.run_id

    def test_two_processes_resuming_one_crashed_run_never_run_a_task_twice(
        self, journal_spec: JournalSpec, tmp_path: Path
    ) -> None:
        crash(journal_spec, tmp_path)
        go = tmp_path / "go"
        both = [
            start_flow(tmp_path, journal_spec, FLOW_RESUME="last", FLOW_SLOW="3", FLOW_GO=str(go))
            for _ in range(2)
        ]
        go.touch()
        results = [finish_flow(p, refused=True) for p in both]
        ran = (tmp_path / "bodies.log").read_text("utf-8").split()
        assert {t: ran.count(t) for t in ("publish", "summary")} == {"publish": 2, "summary": 1}
        refused = [r["refused"] for r in results if "refused" in r]
        assert len(refused) == 1, results
        assert "is being resumed by run" in refused[0]
        (done,) = [r for r in results if "refused" not in r]
        assert done["reused"] == ["config", "fetch", "order"]
        assert set(done["states"].values()) == {"succeeded"}

    def test_a_resume_that_waits_continues_the_run_it_waited_for(
        self, journal_spec: JournalSpec, tmp_path: Path
    ) -> None:
        crash(journal_spec, tmp_path)
        go = tmp_path / "go"
        env = {"FLOW_RESUME": "last", "FLOW_SLOW": "1", "FLOW_GO": str(go), "FLOW_WAIT": "60"}
        both = [start_flow(tmp_path, journal_spec, **env) for _ in range(2)]
        go.touch()
        first, second = sorted((finish_flow(p) for p in both), key=lambda r: len(r["reused"]))
        ran = (tmp_path / "bodies.log").read_text("utf-8").split()
        assert {t: ran.count(t) for t in ("publish", "summary")} == {"publish": 2, "summary": 1}
        assert first["reused"] == ["config", "fetch", "order"]
        assert second["resumed_from"] == first["run_id"]  # the run the other one made
        assert second["reused"] == sorted(first["states"])  # everything, nothing ran

    def test_resume_last_in_another_process_skips_a_run_still_going(
        self, journal_spec: JournalSpec, tmp_path: Path
    ) -> None:
        clean = finish_flow(start_flow(tmp_path, journal_spec))
        log = tmp_path / "bodies.log"
        hanging = start_flow(tmp_path, journal_spec, FLOW_HANG="1")
        try:
            deadline = time.monotonic() + 60
            while log.read_text("utf-8").split().count("publish") < 2:
                assert hanging.poll() is None
                assert time.monotonic() < deadline
                time.sleep(0.02)
            resumed = finish_flow(start_flow(tmp_path, journal_spec, FLOW_RESUME="last"))
        finally:
            hanging.kill()
            hanging.communicate()
        assert resumed["resumed_from"] == clean["run_id"]
        assert len(resumed["reused"]) == 5
