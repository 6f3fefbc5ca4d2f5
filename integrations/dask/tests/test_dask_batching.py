"""Batched submissions: the attempts one driver pass starts reach dask's scheduler together."""

from __future__ import annotations

import uuid
from functools import partial
from typing import Any

import anyio.to_thread
import pytest
from distributed import Client
from distributed.diagnostics.plugin import SchedulerPlugin
from orchestra_dask import DaskExecutor

import orchestra
from orchestra import DAG, Task

pytestmark = pytest.mark.anyio

WIDTH = 40


class Graphs(SchedulerPlugin):
    """Records the keys of each ``update_graph`` message the scheduler gets."""

    name = "orchestra-test-graphs"

    def __init__(self) -> None:
        self.messages: list[list[str]] = []

    def update_graph(self, scheduler: Any, *, keys: Any, **kwargs: Any) -> None:
        self.messages.append(sorted(map(str, keys)))


def graphs_during(client: Client, run: Any) -> Any:
    """The ``update_graph`` messages sent while ``run()`` runs (in a thread)."""
    client.register_plugin(Graphs())
    try:
        run()
        return client.run_on_scheduler(
            lambda dask_scheduler: dask_scheduler.plugins[Graphs.name].messages
        )
    finally:
        client.unregister_scheduler_plugin(Graphs.name)


def wide_dag(tag: str) -> DAG:
    """``WIDTH`` independent tasks, half of them with a dask priority of their own."""
    dag = DAG(f"wide-{tag}")
    for n in range(WIDTH):
        metadata = {"dask": {"priority": 5}} if n % 2 else {}
        dag.add(Task(id=f"w{tag}_{n}", fn=partial(int, n), metadata=metadata))
    return dag


async def test_tasks_ready_together_are_submitted_together(
    client: Client, anyio_backend: str
) -> None:
    tag = uuid.uuid4().hex[:8]
    dag = wide_dag(tag)
    results: list[orchestra.RunResult] = []

    def run() -> None:
        executor = DaskExecutor(client, outputs="all")
        results.append(
            orchestra.run_sync(dag, executor=executor, max_concurrency=None, backend=anyio_backend)
        )

    messages = await anyio.to_thread.run_sync(graphs_during, client, run)

    [result] = results
    assert result.ok, result.errors
    assert result.outputs == {f"w{tag}_{n}": n for n in range(WIDTH)}
    ours = [m for m in messages if any(k.startswith(f"w{tag}_") for k in m)]
    submitted = [k for m in ours for k in m]
    assert sorted(k.rsplit("-", 1)[0] for k in submitted) == sorted(dag.tasks)
    # One message per set of dask options (two here) for the tasks one pass starts, not
    # one per task; a few passes at most.
    assert len(ours) <= 6, [len(m) for m in ours]
    for message in ours:  # a message never mixes tasks of different options
        assert len({int(k.split("_")[1].split("-")[0]) % 2 for k in message}) == 1
