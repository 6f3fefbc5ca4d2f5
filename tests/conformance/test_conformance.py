"""The same TaskHooks scripts give the same outcomes on every engine.

Each test is one script: a small DAG, hooks, and the outcome orchestra's contract says
(states, outputs, how often each body ran, what each hook saw per task). It runs on
orchestra's scheduler, the Dask executor, Hamilton (``orchestra_hamilton.HookAdapter``)
and Prefect (``orchestra_prefect.hooked``). The graphs keep to what every engine does
alike: Hamilton stops at the first failure, so no script has a failure beside an
independent branch still to run.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from engine_drivers import (
    DaskEngine,
    Engine,
    HamiltonEngine,
    Node,
    OrchestraEngine,
    PrefectEngine,
)

import orchestra
from orchestra import TaskState

# The engines' fixtures live here, not in a conftest.py: a second module named
# ``conftest`` would shadow the one other test folders import helpers from.


@pytest.fixture(scope="module")
def dask_engine() -> Iterator[DaskEngine]:
    """orchestra's scheduler on a Dask ``LocalCluster`` in this process, for this module.

    Not kept for the session: the cluster's threads draw from ``random`` and read
    ``/proc`` while they live, which other tests (hypothesis, leak checks) would see.
    """
    from dask.distributed import Client, LocalCluster
    from orchestra_dask import DaskExecutor

    with (
        LocalCluster(
            n_workers=1, threads_per_worker=4, processes=False, dashboard_address=":0"
        ) as cluster,
        Client(cluster) as client,
    ):
        yield DaskEngine(DaskExecutor(client, outputs="all"))


@pytest.fixture(scope="session")
def prefect_engine() -> Iterator[PrefectEngine]:
    """Prefect on its local API server, started at most once per session."""
    from orchestra_prefect.testing import local_api

    with local_api():
        yield PrefectEngine()


@pytest.fixture(params=["orchestra", "dask", "hamilton", "prefect"])
def engine(request: pytest.FixtureRequest) -> Engine:
    if request.param == "orchestra":
        return OrchestraEngine()
    if request.param == "hamilton":
        return HamiltonEngine()
    fixture: Engine = request.getfixturevalue(f"{request.param}_engine")
    return fixture


class Recorder(orchestra.TaskHooks):
    """Records what each task's hooks saw, per task (engines interleave tasks freely)."""

    def __init__(self) -> None:
        self.seen: dict[str, list[tuple[Any, ...]]] = defaultdict(list)

    def before_execute(self, ctx: orchestra.TaskHookContext) -> None:
        self.seen[ctx.task.id].append(("before", ctx.attempt))

    def after_execute(self, ctx: orchestra.TaskHookContext, result: Any) -> None:
        self.seen[ctx.task.id].append(("after", ctx.attempt, result))

    def on_failure(self, ctx: orchestra.TaskHookContext, error: BaseException) -> None:
        self.seen[ctx.task.id].append(("failure", ctx.attempt, type(error).__name__))


class Counter:
    """Counts a body's runs in a file: real across threads, processes and engines."""

    def __init__(self, folder: Path, name: str) -> None:
        self.path = folder / f"{name}.runs"

    def tick(self) -> int:
        with self.path.open("a") as f:
            f.write("x")
        return len(self.path.read_text())

    @property
    def runs(self) -> int:
        return len(self.path.read_text()) if self.path.exists() else 0


def test_retry_twice_then_succeed(engine: Engine, tmp_path: Path) -> None:
    flaky_runs = Counter(tmp_path, "flaky")

    def flaky(source: int) -> int:
        if flaky_runs.tick() < 3:
            raise ConnectionError("flaky source")
        return source + 1

    class RetryConnection(orchestra.TaskHooks):
        def on_failure(self, ctx: orchestra.TaskHookContext, error: BaseException) -> Any:
            if isinstance(error, ConnectionError) and ctx.attempt < 3:
                return orchestra.Retry(delay=0.01)
            return None

    recorder = Recorder()
    nodes = [
        Node("source", lambda: 1),
        Node("flaky", flaky, ("source",)),
        Node("report", lambda flaky: flaky * 10, ("flaky",)),
    ]
    outcome = engine.run(nodes, [recorder, RetryConnection()])

    assert outcome.states == dict.fromkeys(["source", "flaky", "report"], TaskState.SUCCEEDED)
    assert outcome.outputs == {"source": 1, "flaky": 2, "report": 20}
    assert flaky_runs.runs == 3
    assert recorder.seen["flaky"] == [
        ("before", 1),
        ("failure", 1, "ConnectionError"),
        ("before", 2),
        ("failure", 2, "ConnectionError"),
        ("before", 3),
        ("after", 3, 2),
    ]


def test_skip_optional(engine: Engine, tmp_path: Path) -> None:
    optional_runs = Counter(tmp_path, "optional")

    def optional(source: int) -> int:
        optional_runs.tick()
        return source

    class SkipOptional(orchestra.TaskHooks):
        def before_execute(self, ctx: orchestra.TaskHookContext) -> Any:
            return orchestra.Skip("not needed today") if ctx.task.id == "optional" else None

    recorder = Recorder()
    nodes = [
        Node("source", lambda: 3),
        Node("optional", optional, ("source",)),
        Node("main", lambda source: source * 2, ("source",)),
    ]
    outcome = engine.run(nodes, [recorder, SkipOptional()])

    assert outcome.states == {
        "source": TaskState.SUCCEEDED,
        "optional": TaskState.SKIPPED,
        "main": TaskState.SUCCEEDED,
    }
    assert outcome.outputs == {"source": 3, "main": 6}
    assert optional_runs.runs == 0
    assert recorder.seen["optional"] == [("before", 1)]


def test_skip_after_a_failure(engine: Engine) -> None:
    def broken(source: int) -> int:
        raise LookupError("no such record")

    class SkipMissing(orchestra.TaskHooks):
        def on_failure(self, ctx: orchestra.TaskHookContext, error: BaseException) -> Any:
            return orchestra.Skip("missing is fine") if isinstance(error, LookupError) else None

    recorder = Recorder()
    nodes = [Node("source", lambda: 1), Node("broken", broken, ("source",))]
    outcome = engine.run(nodes, [recorder, SkipMissing()])

    assert outcome.states == {"source": TaskState.SUCCEEDED, "broken": TaskState.SKIPPED}
    assert recorder.seen["broken"] == [("before", 1), ("failure", 1, "LookupError")]


def test_fail_on_a_given_exception(engine: Engine, tmp_path: Path) -> None:
    bad_runs = Counter(tmp_path, "bad")

    def bad(source: int) -> int:
        bad_runs.tick()
        raise KeyError("corrupt row")

    class FailOnKeyError(orchestra.TaskHooks):
        def on_failure(self, ctx: orchestra.TaskHookContext, error: BaseException) -> Any:
            if isinstance(error, KeyError):
                return orchestra.Fail("corrupt data: retrying won't help")
            return orchestra.Retry()

    recorder = Recorder()
    nodes = [
        Node("source", lambda: 1),
        Node("bad", bad, ("source",)),
        Node("downstream", lambda bad: bad, ("bad",)),
    ]
    outcome = engine.run(nodes, [recorder, FailOnKeyError()])

    assert outcome.states == {
        "source": TaskState.SUCCEEDED,
        "bad": TaskState.FAILED,
        "downstream": TaskState.UPSTREAM_FAILED,
    }
    assert outcome.outputs == {"source": 1}
    assert bad_runs.runs == 1  # Fail outranks the Retry of the same hook chain: no retry
    assert recorder.seen["bad"] == [("before", 1), ("failure", 1, "KeyError")]
    assert "downstream" not in recorder.seen


def test_fail_before_execute(engine: Engine, tmp_path: Path) -> None:
    gated_runs = Counter(tmp_path, "gated")

    def gated(source: int) -> int:
        gated_runs.tick()
        return source

    class Gate(orchestra.TaskHooks):
        def before_execute(self, ctx: orchestra.TaskHookContext) -> Any:
            return orchestra.Fail("closed") if ctx.task.id == "gated" else None

    nodes = [Node("source", lambda: 1), Node("gated", gated, ("source",))]
    outcome = engine.run(nodes, [Gate()])

    assert outcome.states == {"source": TaskState.SUCCEEDED, "gated": TaskState.FAILED}
    assert gated_runs.runs == 0


def test_no_opinion_leaves_a_failure_failed(engine: Engine) -> None:
    def broken() -> int:
        raise ValueError("plain failure")

    recorder = Recorder()
    outcome = engine.run([Node("broken", broken)], [recorder])

    assert outcome.states == {"broken": TaskState.FAILED}
    assert recorder.seen["broken"] == [("before", 1), ("failure", 1, "ValueError")]


def test_replace_output_and_recover(engine: Engine) -> None:

    def broken(source: int) -> int:
        raise TimeoutError("slow source")

    class Rewrite(orchestra.TaskHooks):
        def after_execute(self, ctx: orchestra.TaskHookContext, result: Any) -> Any:
            return orchestra.Replace(result * 100) if ctx.task.id == "source" else None

        def on_failure(self, ctx: orchestra.TaskHookContext, error: BaseException) -> Any:
            return orchestra.Replace(-1) if ctx.task.id == "broken" else None

    nodes = [
        Node("source", lambda: 2),
        Node("broken", broken, ("source",)),
        Node("total", lambda source, broken: source + broken, ("source", "broken")),
    ]
    outcome = engine.run(nodes, [Rewrite()])

    assert outcome.states == dict.fromkeys(["source", "broken", "total"], TaskState.SUCCEEDED)
    assert outcome.outputs == {"source": 200, "broken": -1, "total": 199}


def test_replace_inputs(engine: Engine) -> None:

    class NewInputs(orchestra.TaskHooks):
        # New values, not computed from ctx.inputs: on Dask those are handles to data that
        # stays on the cluster (before_execute never sees outputs there).
        def before_execute(self, ctx: orchestra.TaskHookContext) -> Any:
            return orchestra.Replace({"source": 10}) if ctx.task.id == "total" else None

    nodes = [Node("source", lambda: 5), Node("total", lambda source: source + 1, ("source",))]
    outcome = engine.run(nodes, [NewInputs()])

    assert outcome.outputs == {"source": 5, "total": 11}


def test_on_end_once_per_task_with_its_state(engine: Engine) -> None:
    ended: dict[str, list[tuple[TaskState, int]]] = defaultdict(list)

    def bad(source: int) -> int:
        raise KeyError("corrupt row")

    class Ends(orchestra.TaskHooks):
        def before_execute(self, ctx: orchestra.TaskHookContext) -> Any:
            return orchestra.Skip() if ctx.task.id == "optional" else None

        def on_end(self, ctx: orchestra.TaskHookContext, state: TaskState) -> None:
            ended[ctx.task.id].append((state, ctx.attempt))

    nodes = [
        Node("source", lambda: 1),
        Node("optional", lambda source: source, ("source",)),  # a leaf, skipped
        Node("bad", bad, ("source",)),
        Node("downstream", lambda bad: bad, ("bad",)),  # never starts
    ]
    engine.run(nodes, [Ends()])

    assert dict(ended) == {
        "source": [(TaskState.SUCCEEDED, 1)],
        "optional": [(TaskState.SKIPPED, 1)],
        "bad": [(TaskState.FAILED, 1)],
        "downstream": [(TaskState.UPSTREAM_FAILED, 0)],
    }
