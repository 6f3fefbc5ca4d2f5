"""Child processes: a run killed with SIGKILL and resumed in another; two writers at once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import pytest

import orchestra
from orchestra.journal._records import JournaledRun
from orchestra.journal.conformance._spec import JournalSpec

__all__ = ["ProcessTests", "crash", "finish_flow", "start_flow"]

_WAIT: Final = 60.0  # seconds a child process gets to reach a point (generous: CI is slow)


_FLOW: Final = '''
"""A DAG the conformance suite runs in child processes."""
import json
import os
import sys
import time
from pathlib import Path

import orchestra
from orchestra.journal.conformance import JournalSpec

LOG = Path(os.environ["FLOW_LOG"])


def mark(event):
    with LOG.open("a", encoding="utf-8") as f:
        f.write(event + "\\n")


dag = orchestra.DAG("crashy")


@dag.task
def fetch():
    mark("fetch")
    return {"rows": [3, 1, 2]}


@dag.task
def config():
    mark("config")
    return "desc"


@dag.task(deps=["fetch", "config"])
def order(fetch, config):
    mark("order")
    return sorted(fetch["rows"], reverse=config == "desc")


@dag.task(deps=["order"])
def publish(order):
    mark("publish")
    if os.environ.get("FLOW_HANG") == "1":
        time.sleep(3600)  # SIGKILLed here
    time.sleep(float(os.environ.get("FLOW_SLOW", "0")))  # two resumes overlap here
    return ",".join(map(str, order))


@dag.task(deps=["publish", "fetch"])
def summary(publish, fetch):
    mark("summary")
    return {"published": publish, "count": len(fetch["rows"])}


def wide(n):
    d = orchestra.DAG("wide")
    for i in range(n):
        d.add(orchestra.Task(id=f"t{i}", fn=(lambda i=i: i * i)))
    return d


if __name__ == "__main__":
    spec = os.environ.get("FLOW_JOURNAL")
    journal = JournalSpec.from_json(spec).open() if spec else None
    target = dag
    if os.environ.get("FLOW_WIDE"):
        target = wide(int(os.environ["FLOW_WIDE"]))
    if os.environ.get("FLOW_GO"):
        go = Path(os.environ["FLOW_GO"])
        while not go.exists():  # both processes start together
            time.sleep(0.01)
    wait = os.environ.get("FLOW_WAIT")
    try:
        result = orchestra.run_sync(
            target,
            journal=journal,
            resume=os.environ.get("FLOW_RESUME") or None,
            resume_wait=float(wait) if wait else None,
            backend=os.environ.get("FLOW_BACKEND", "asyncio"),
        )
    except orchestra.JournalError as exc:
        json.dump({"refused": str(exc)}, sys.stdout)
        sys.exit(3)
    finally:
        if journal is not None:
            journal.close()
    json.dump(
        {
            "run_id": result.run_id,
            "states": {k: v.value for k, v in result.states.items()},
            "outputs": result.outputs,
            "reused": sorted(result.reused),
            "resumed_from": result.resumed_from,
        },
        sys.stdout,
    )
'''


def _start_flow(tmp: Path, spec: JournalSpec | None, **env: str) -> subprocess.Popen[str]:
    flow = tmp / "flow.py"
    if not flow.exists():
        flow.write_text(_FLOW)
    log = tmp / "bodies.log"
    log.touch()
    environ = {**os.environ, "FLOW_LOG": str(log), **env}
    if spec is not None:
        environ["FLOW_JOURNAL"] = spec.to_json()
    return subprocess.Popen(
        [sys.executable, str(flow)],
        env=environ,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _finish_flow(proc: subprocess.Popen[str], *, refused: bool = False) -> dict[str, Any]:
    """What the child printed: its run, or (exit status 3) ``{"refused": message}``."""
    try:
        out, err = proc.communicate(timeout=_WAIT)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise
    ok = (0, 3) if refused else (0,)
    assert proc.returncode in ok, f"child failed ({proc.returncode}):\n{err}"
    result: dict[str, Any] = json.loads(out)
    return result


def _wait_for(what: str, check: Callable[[], bool], proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + _WAIT
    while not check():
        if proc.poll() is not None:
            raise AssertionError(f"child ended ({proc.returncode}) before {what}")
        if time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"child did not reach {what} in {_WAIT} s")
        time.sleep(0.02)


start_flow = _start_flow
finish_flow = _finish_flow


def crash(spec: JournalSpec, tmp: Path, backend: str = "asyncio") -> None:
    """A run of the "crashy" DAG killed with SIGKILL in publish, after three tasks settled."""
    log = tmp / "bodies.log"
    first = _start_flow(tmp, spec, FLOW_HANG="1", FLOW_BACKEND=backend)
    try:
        _wait_for("publish", lambda: "publish" in log.read_text("utf-8").split(), first)
        _wait_for("the journal", _settled(spec, "crashy", {"fetch", "config", "order"}), first)
    finally:
        first.send_signal(signal.SIGKILL)
        first.communicate()


def _settled(spec: JournalSpec, dag: str, ids: set[str]) -> Callable[[], bool]:
    def check() -> bool:
        journal = spec.open()
        try:
            runs = journal.list_runs(dag, limit=1)
            run = journal.load_run(runs[0].run_id) if runs else None
        finally:
            journal.close()
        return run is not None and ids <= {
            t for t, r in run.tasks.items() if r.state == "succeeded"
        }

    return check


class ProcessTests:
    """Stores shared between processes: crash and resume, concurrent writers."""

    @pytest.mark.parametrize("backend", ["asyncio", "trio"])
    def test_a_run_killed_by_sigkill_resumes_in_a_new_process(
        self, journal_spec: JournalSpec, tmp_path: Path, backend: str
    ) -> None:
        log = tmp_path / "bodies.log"
        first = _start_flow(tmp_path, journal_spec, FLOW_HANG="1", FLOW_BACKEND=backend)
        try:
            _wait_for("publish", lambda: "publish" in log.read_text("utf-8").split(), first)
            _wait_for(
                "the journal", _settled(journal_spec, "crashy", {"fetch", "config", "order"}), first
            )
        finally:
            first.send_signal(signal.SIGKILL)
            first.communicate()
        assert first.returncode == -signal.SIGKILL
        resumed = _finish_flow(
            _start_flow(tmp_path, journal_spec, FLOW_RESUME="last", FLOW_BACKEND=backend)
        )
        ran = log.read_text("utf-8").split()
        assert {t: ran.count(t) for t in ("fetch", "config", "order")} == dict.fromkeys(
            ("fetch", "config", "order"), 1
        )  # every task that had succeeded ran exactly once overall
        assert ran.count("publish") == 2  # killed once, then run to the end
        assert resumed["reused"] == ["config", "fetch", "order"]
        clean_dir = tmp_path / "clean"
        clean_dir.mkdir()
        clean = _finish_flow(_start_flow(clean_dir, None, FLOW_BACKEND=backend))
        assert resumed["outputs"] == clean["outputs"]
        assert set(resumed["states"].values()) == {"succeeded"}

    def test_two_processes_journal_into_one_store_at_once(
        self, journal_spec: JournalSpec, tmp_path: Path
    ) -> None:
        go = tmp_path / "go"
        n = 400
        procs = [
            _start_flow(tmp_path, journal_spec, FLOW_WIDE=str(n), FLOW_GO=str(go)) for _ in range(2)
        ]
        go.touch()
        results = [_finish_flow(p) for p in procs]
        journal = journal_spec.open()
        try:
            runs = [journal.load_run(r["run_id"]) for r in results]
            listed = {r.run_id for r in journal.list_runs("wide")}
        finally:
            journal.close()
        assert listed == {r["run_id"] for r in results}
        for run in runs:
            assert isinstance(run, JournaledRun)
            assert run.info.states == {"succeeded": n}
            outputs = {
                t: orchestra.journal.PickleSerializer().loads(run.payloads[r.output_digest or ""])
                for t, r in run.tasks.items()
            }
            assert outputs == {f"t{i}": i * i for i in range(n)}
