"""A worker killed in the middle of a task: the failure reaches on_failure, a Retry recovers."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import dask
import pytest
from distributed import Client, LocalCluster
from distributed.scheduler import KilledWorker
from orchestra_dask import DaskExecutor

import orchestra
from orchestra import DAG, Retry, TaskHookContext, TaskHooks, TaskState

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def client() -> Iterator[Client]:
    # No second chance from dask itself: the first death of a worker running the task
    # raises KilledWorker, so the decision is orchestra's.
    with (
        dask.config.set({"distributed.scheduler.allowed-failures": 0}),
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
        ) as cluster,
        Client(cluster) as client,
    ):
        yield client


class RetryKilledWorkers(TaskHooks):
    def __init__(self) -> None:
        self.failures: list[tuple[str, int, BaseException]] = []

    def on_failure(self, ctx: TaskHookContext, error: BaseException) -> Retry | None:
        self.failures.append((ctx.task.id, ctx.attempt, error))
        return Retry() if isinstance(error, KilledWorker) else None


async def test_killed_worker_reaches_on_failure_and_retry_completes(
    client: Client, tmp_path: Path
) -> None:
    marker = tmp_path / "killed-pid"
    dag = DAG("fragile")

    @dag.task
    def prepare() -> int:
        return 20

    @dag.task(deps=[prepare])
    def fragile(prepare: int) -> tuple[int, int]:
        if not marker.exists():
            marker.write_text(str(os.getpid()))
            os.kill(os.getpid(), signal.SIGKILL)
        return prepare + 1, os.getpid()

    @dag.task(deps=[fragile])
    def report(fragile: tuple[int, int]) -> int:
        return fragile[0] * 2

    hooks = RetryKilledWorkers()
    result = await orchestra.run(dag, executor=DaskExecutor(client), hooks=[hooks])

    assert result.ok, result.errors
    assert result.states["report"] is TaskState.SUCCEEDED
    assert result.outputs["report"] == 42
    killed_pid = int(marker.read_text())
    assert result.outputs["fragile"][1] != killed_pid  # completed on a live worker
    [(tid, attempt, error)] = hooks.failures
    assert (tid, attempt) == ("fragile", 1)
    assert isinstance(error, KilledWorker)
    assert result.attempts == {"prepare": 1, "fragile": 2, "report": 1}


async def test_killed_worker_without_a_retry_fails_the_task(client: Client) -> None:
    dag = DAG("fragile-no-retry")

    @dag.task
    def doomed() -> None:
        os.kill(os.getpid(), signal.SIGKILL)

    # After the death: a task queued on the same worker at that moment would have died
    # with it (dask counts it as suspicious too).
    @dag.task(deps=[doomed], trigger="all_done")
    def fine(doomed: None) -> str:
        return "fine"

    result = await orchestra.run(dag, executor=DaskExecutor(client))

    assert result.states == {"doomed": TaskState.FAILED, "fine": TaskState.SUCCEEDED}
    assert isinstance(result.errors["doomed"], KilledWorker)
