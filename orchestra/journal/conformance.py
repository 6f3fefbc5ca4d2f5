"""The tests every journal store passes (``SQLiteJournal``, ``PostgresJournal``, yours).

Subclass ``JournalConformance`` in a test module and give it a ``journal_spec`` fixture
that makes a fresh, empty store for each test::

    import pytest
    from orchestra.journal.conformance import JournalConformance, JournalSpec


    class TestMyJournal(JournalConformance):
        @pytest.fixture
        def journal_spec(self, tmp_path):
            return JournalSpec("my_package.journal:MyJournal", (str(tmp_path / "store"),))

A ``JournalSpec`` names the store's factory by import path, so the suite can open the
same store in child processes: it kills one with SIGKILL in the middle of a run and
resumes in another, and has two processes journal into one store at once. The suite
needs pytest, the anyio pytest plugin and trio (both anyio backends are tested).
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Final

import attrs
import pytest

import orchestra
from orchestra import DAG, JournalError, RunResult, Task, TaskHooks, TaskState
from orchestra.journal._codec import digest
from orchestra.journal._records import Journal, JournaledRun, RunInfo, TaskRecord

__all__ = ["JournalConformance", "JournalSpec"]

_WAIT: Final = 60.0  # seconds a child process gets to reach a point (generous: CI is slow)


@attrs.frozen
class JournalSpec:
    """How to open a store, in this process or another: a factory's import path and arguments.

    Attributes:
        factory: ``"package.module:callable"``, called with ``args`` to open the store.
        args: string arguments (a path, a DSN).
    """

    factory: str
    args: tuple[str, ...] = ()

    def open(self) -> Journal:
        """Open the store."""
        module, _, name = self.factory.partition(":")
        journal = getattr(importlib.import_module(module), name)(*self.args)
        assert isinstance(journal, Journal), f"{self.factory} did not return a Journal"
        return journal

    def to_json(self) -> str:
        """The spec as JSON, for a child process's environment."""
        return json.dumps([self.factory, list(self.args)])

    @classmethod
    def from_json(cls, text: str) -> JournalSpec:
        """Read a spec written by ``to_json``."""
        factory, args = json.loads(text)
        return cls(factory, tuple(args))


# -- records ------------------------------------------------------------------------------


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


# -- in-process DAGs ----------------------------------------------------------------------


class _Calls(TaskHooks):
    """Records which task bodies ran (before_execute) in order."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.after: list[str] = []

    def before_execute(self, ctx: Any) -> None:
        self.started.append(ctx.task.id)

    def after_execute(self, ctx: Any, result: Any) -> None:
        self.after.append(ctx.task.id)


def _pipeline(flaky: dict[str, bool], *, name: str = "pipeline") -> DAG:
    """Extract -> transform -> load, report(extract): load fails while flaky["load"]."""
    dag = DAG(name)

    @dag.task
    def extract() -> list[int]:
        return [3, 1, 2]

    @dag.task(deps=[extract])
    def transform(extract: list[int]) -> list[int]:
        return sorted(extract)

    @dag.task(deps=[transform])
    def load(transform: list[int]) -> str:
        if flaky["load"]:
            raise ConnectionError("warehouse down")
        return ",".join(map(str, transform))

    @dag.task(deps=[extract])
    def report(extract: list[int]) -> int:
        return len(extract)

    return dag


def _double(source: int) -> int:
    return source * 2


def _triple(source: int) -> int:
    return source * 3


def _two() -> int:
    return 2


def _three() -> int:
    return 3


def _plus_one(middle: int) -> int:
    return middle + 1


def _chain(
    source: Callable[[], int], middle: Callable[[int], int], *, extra_dep: bool = False
) -> DAG:
    """Source -> middle -> sink, and extra (an upstream of middle when ``extra_dep``)."""
    dag = DAG("chain")
    dag.add(Task(id="source", fn=source))
    dag.add(Task(id="extra", fn=_three))
    dag.add(Task(id="middle", fn=middle, deps=["source", "extra"] if extra_dep else ["source"]))
    dag.add(Task(id="sink", fn=_plus_one, deps=["middle"]))
    return dag


# -- child processes ----------------------------------------------------------------------

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
        go = Path(os.environ["FLOW_GO"])
        while not go.exists():  # both processes start writing together
            time.sleep(0.01)
    try:
        result = orchestra.run_sync(
            target,
            journal=journal,
            resume=os.environ.get("FLOW_RESUME") or None,
            backend=os.environ.get("FLOW_BACKEND", "asyncio"),
        )
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


def _finish_flow(proc: subprocess.Popen[str]) -> dict[str, Any]:
    try:
        out, err = proc.communicate(timeout=_WAIT)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise
    assert proc.returncode == 0, f"child failed ({proc.returncode}):\n{err}"
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


class JournalConformance:
    """The conformance suite: subclass it and define a ``journal_spec`` fixture."""

    @pytest.fixture
    def journal_spec(self) -> JournalSpec:
        """A fresh, empty store (override this fixture)."""
        raise NotImplementedError("define a journal_spec fixture that makes a fresh store")

    @pytest.fixture
    def journal(self, journal_spec: JournalSpec) -> Iterator[Journal]:
        """The store, opened for the test and closed after it."""
        journal = journal_spec.open()
        try:
            yield journal
        finally:
            journal.close()

    @pytest.fixture(params=["asyncio", "trio"])
    def anyio_backend(self, request: pytest.FixtureRequest) -> str:
        """Both anyio backends."""
        return str(request.param)

    # -- the store protocol ---------------------------------------------------------------

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

    # -- runs, resumed --------------------------------------------------------------------

    @pytest.mark.anyio
    async def test_resume_reuses_what_succeeded_and_runs_the_rest(self, journal: Journal) -> None:
        flaky = {"load": True}
        first = await orchestra.run(_pipeline(flaky), journal=journal)
        assert first.states["load"] is TaskState.FAILED
        assert first.reused == frozenset()
        flaky["load"] = False
        calls = _Calls()
        second = await orchestra.run(
            _pipeline(flaky), journal=journal, resume="last", hooks=[calls]
        )
        assert second.ok
        assert second.reused == {"extract", "transform", "report"}
        assert second.resumed_from == first.run_id
        assert second.run_id != first.run_id
        assert calls.started == ["load"]  # no body and no hook ran for the reused tasks
        assert calls.after == ["load"]
        assert second.outputs == {
            "extract": [3, 1, 2],
            "transform": [1, 2, 3],
            "load": "1,2,3",
            "report": 3,
        }
        assert second.attempts["extract"] == 0
        assert all(s is TaskState.SUCCEEDED for s in second.states.values())
        run = journal.load_run(second.run_id)
        assert run is not None
        assert run.info.resumed_from == first.run_id
        assert {t for t, r in run.tasks.items() if r.reused} == set(second.reused)
        # the resumed run is itself resumable: everything is reused now
        third = await orchestra.run(_pipeline(flaky), journal=journal, resume=second.run_id)
        assert third.reused == set(third.states)

    @pytest.mark.anyio
    async def test_a_changed_function_reruns_and_so_does_everything_downstream(
        self, journal: Journal
    ) -> None:
        first = await orchestra.run(_chain(_two, _double), journal=journal)
        assert first.outputs == {"source": 2, "extra": 3, "middle": 4, "sink": 5}
        second = await orchestra.run(_chain(_two, _triple), journal=journal, resume="last")
        assert second.reused == {"source", "extra"}
        assert second.outputs == {"source": 2, "extra": 3, "middle": 6, "sink": 7}
        third = await orchestra.run(_chain(_three, _triple), journal=journal, resume="last")
        assert third.reused == {"extra"}  # the source changed: nothing downstream is kept
        assert third.outputs == {"source": 3, "extra": 3, "middle": 9, "sink": 10}

    @pytest.mark.anyio
    async def test_changed_inputs_rerun_a_task(self, journal: Journal) -> None:
        await orchestra.run(_chain(_two, _double), journal=journal)
        # middle's body is the same and both its upstreams are reused, but it now takes
        # the extra one too: its inputs changed, so it runs again (and sink after it)
        changed = _chain(_two, _double, extra_dep=True)
        second = await orchestra.run(changed, journal=journal, resume="last")
        assert second.reused == {"source", "extra"}
        assert second.attempts["middle"] == 1
        assert second.attempts["sink"] == 1
        assert second.outputs["sink"] == 5

    @pytest.mark.anyio
    async def test_changed_task_ids_resume_what_matches(self, journal: Journal) -> None:
        flaky = {"load": False}
        await orchestra.run(_pipeline(flaky), journal=journal)
        dag = _pipeline(flaky)
        renamed = DAG("pipeline")
        for task in dag.tasks.values():
            new_id = "summary" if task.id == "report" else task.id
            renamed.add(Task(id=new_id, fn=task.fn, deps=list(task.deps)))
        second = await orchestra.run(renamed, journal=journal, resume="last")
        assert second.ok
        assert second.reused == {"extract", "transform", "load"}
        assert second.attempts["summary"] == 1

    @pytest.mark.anyio
    async def test_a_cancelled_run_journals_what_settled_and_resumes(
        self, journal: Journal
    ) -> None:
        import anyio

        started = anyio.Event()
        dag = DAG("stuck")

        @dag.task
        def first() -> int:
            return 1

        @dag.task(deps=[first])
        async def second(first: int) -> int:
            started.set()
            await anyio.sleep_forever()
            return first

        result: RunResult | None = None
        async with anyio.create_task_group() as tg:

            async def go() -> None:
                nonlocal result
                result = await orchestra.run(dag, journal=journal)

            tg.start_soon(go)
            await started.wait()
            tg.cancel_scope.cancel()
        assert result is None
        (latest,) = journal.list_runs("stuck")
        assert latest.states == {"succeeded": 1, "cancelled": 1}
        again = DAG("stuck")
        again.add(Task(id="first", fn=first.fn))
        again.add(Task(id="second", fn=lambda first: first + 1, deps=["first"]))
        resumed = await orchestra.run(again, journal=journal, resume="last")
        assert resumed.reused == {"first"}
        assert resumed.outputs == {"first": 1, "second": 2}

    @pytest.mark.anyio
    async def test_resume_of_an_unknown_run_lists_the_latest_ids(self, journal: Journal) -> None:
        flaky = {"load": False}
        runs = [await orchestra.run(_pipeline(flaky), journal=journal) for _ in range(2)]
        with pytest.raises(JournalError) as info:
            await orchestra.run(_pipeline(flaky), journal=journal, resume="nope")
        message = str(info.value)
        assert "'nope'" in message
        assert all(r.run_id in message for r in runs)
        with pytest.raises(JournalError, match="no run of DAG 'other'"):
            await orchestra.run(_pipeline(flaky, name="other"), journal=journal, resume="last")
        with pytest.raises(JournalError, match="it is a run of DAG 'pipeline'"):
            await orchestra.run(
                _pipeline(flaky, name="other"), journal=journal, resume=runs[0].run_id
            )

    # -- processes ------------------------------------------------------------------------

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
