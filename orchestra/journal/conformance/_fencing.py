"""Fencing: a holder that lost its lease stops, in real processes paused with SIGSTOP.

The case: a resume's process is paused (SIGSTOP, a frozen VM) longer than the lease's
time to live; another resume takes the run and runs its tasks. When the first one wakes,
it must not go on running them beside the second: it re-checks its leases before it
settles a task, finds them lost, and stops.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Final

import orchestra
from orchestra import DAG, Task
from orchestra.journal._lease import new_lease
from orchestra.journal._records import RunInfo
from orchestra.journal.conformance._processes import crash, finish_flow, start_flow
from orchestra.journal.conformance._spec import JournalSpec

__all__ = ["FencingTests"]

_TASKS: Final = 40
_TTL: Final = 2.0  # the children's lease time to live (seconds), so the test is short
_WAIT: Final = 60.0

_HOLDER: Final = """
import json, os, sys, time
from pathlib import Path

import orchestra
from orchestra.dag import _journal
from orchestra.journal import _lease
from orchestra.journal.conformance import JournalSpec

# A short lease, so the test is short (the same rules as the defaults, scaled down).
_lease.LEASE_TTL = float(os.environ["FENCE_TTL"])
_lease.RENEW_EVERY = _journal.RENEW_EVERY = _lease.LEASE_TTL / 4
who, log = os.environ["FENCE_WHO"], Path(os.environ["FENCE_LOG"])


def body(tid):
    def run():
        time.sleep(0.1)
        with log.open("a") as f:
            f.write(f"{who} {tid}\\n")
    return run


dag = orchestra.DAG("fenced")
for i in range(int(os.environ["FENCE_TASKS"])):
    dag.add(orchestra.Task(id=f"t{i}", fn=body(f"t{i}")))
journal = JournalSpec.from_json(os.environ["FENCE_JOURNAL"]).open()
try:
    result = orchestra.run_sync(dag, journal=journal, resume=os.environ["FENCE_RESUME"],
                                max_concurrency=1)
except orchestra.JournalError as exc:
    print(json.dumps({"stopped": str(exc)}))
    sys.exit(3)
finally:
    journal.close()
print(json.dumps({"states": sorted({s.value for s in result.states.values()})}))
"""


def _failing() -> None:
    raise RuntimeError("down")


def _ran(log: Path, who: str) -> int:
    return sum(1 for line in log.read_text().splitlines() if line.startswith(f"{who} "))


def _until(what: str, check: object) -> None:
    deadline = time.monotonic() + _WAIT
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"never reached: {what}"
        time.sleep(0.02)


class FencingTests:
    """A paused holder whose lease was taken stops at its next task."""

    def test_a_holder_that_lost_its_lease_stops_before_settling_another_task(
        self, journal_spec: JournalSpec, tmp_path: Path
    ) -> None:
        first = DAG("fenced")
        for i in range(_TASKS):
            first.add(Task(id=f"t{i}", fn=_failing))
        journal = journal_spec.open()
        try:
            crashed = orchestra.run_sync(first, journal=journal)
        finally:
            journal.close()
        script, log = tmp_path / "holder.py", tmp_path / "ran.log"
        script.write_text(_HOLDER)
        log.touch()

        def holder(who: str) -> subprocess.Popen[str]:
            env = {
                **os.environ,
                "FENCE_WHO": who,
                "FENCE_LOG": str(log),
                "FENCE_TTL": str(_TTL),
                "FENCE_TASKS": str(_TASKS),
                "FENCE_JOURNAL": journal_spec.to_json(),
                "FENCE_RESUME": crashed.run_id,
            }
            return subprocess.Popen(
                [sys.executable, str(script)], env=env, stdout=subprocess.PIPE, text=True
            )

        a = holder("A")
        try:
            _until("A ran 3 tasks", lambda: _ran(log, "A") >= 3)
            a.send_signal(signal.SIGSTOP)  # paused past its lease's time to live
            time.sleep(0.3)
            at_pause = _ran(log, "A")
            time.sleep(_TTL + 1)
            b = holder("B")
            _until("B ran 3 tasks", lambda: _ran(log, "B") >= 3)
            a.send_signal(signal.SIGCONT)
            out_b, _ = b.communicate(timeout=_WAIT)
            out_a, _ = a.communicate(timeout=_WAIT)
        finally:
            a.send_signal(signal.SIGCONT)
            a.kill()
        assert json.loads(out_b) == {"states": ["succeeded"]}  # B ran the run
        assert a.returncode == 3, out_a
        assert "lost its lease" in json.loads(out_a)["stopped"]
        # A finished at most the task it was in when paused, then stopped.
        assert _ran(log, "A") - at_pause <= 1
        assert _ran(log, "B") == _TASKS

    def test_a_resume_killed_right_after_registering_is_not_the_last_run(
        self, journal_spec: JournalSpec, tmp_path: Path
    ) -> None:
        # The audit's case: a resume killed (kill -9) once its run was registered, before
        # any task settled, became resume="last", and the next resume reran every task.
        crash(journal_spec, tmp_path)  # fetch, config and order settled, then SIGKILL
        journal = journal_spec.open()
        try:
            (crashed,) = journal.list_runs("crashy")
            registered = new_lease(f"killed-{time.time_ns()}")
            journal.begin_run(
                RunInfo(
                    run_id=registered.run_id,
                    dag="crashy",
                    started_at=time.time() + 1,
                    task_count=5,
                    resumed_from=crashed.run_id,
                )
            )  # what a kill -9 right after registering leaves: a run, no task, no holder
        finally:
            journal.close()
        resumed = finish_flow(start_flow(tmp_path, journal_spec, FLOW_RESUME="last"))
        assert resumed["resumed_from"] == crashed.run_id
        assert resumed["reused"] == ["config", "fetch", "order"]
