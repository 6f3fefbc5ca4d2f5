"""The way around the guard in Dask, as a cell of the conformance matrix: a guarded tool
called in a task body runs on a worker process of a real ``LocalCluster``, and is judged
there on its real input (the registry reaches the worker as its sources and options)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import pytest
from distributed import Client
from orchestra_dask import DaskExecutor
from process_cluster import ProcessCluster

import orchestra
from orchestra import ToolDenied
from orchestra.bridge.testing import WAY_CELLS, ToolBody, ToolRun, check_way_cell, way_matrix_rows
from orchestra.skills import HookRegistry

PAGE = Path(__file__).resolve().parents[3] / "docs" / "howto" / "one-policy.md"

# Under load a cluster of processes takes minutes to start.
pytestmark = pytest.mark.timeout(600)


@pytest.fixture
def client(process_cluster: ProcessCluster) -> Client:
    """Two worker processes (not the in-process cluster of conftest's ``client``)."""
    return process_cluster.up()


class DaskWays:
    name = "Dask"
    ways: Mapping[str, str] = {
        "task_body_on_a_worker": "a `@registry.guard` tool called in a task body on a worker"
    }
    cannot: Mapping[str, str] = {}

    def __init__(self, client: Client) -> None:
        self.client = client

    def call(self, way: str, registry: HookRegistry, body: ToolBody) -> ToolRun:
        here = ToolBody()  # pickled with the task: on the worker, its calls are the worker's

        @registry.guard("fetch")
        def fetch(path: str) -> str:
            return here(path)

        dag = orchestra.DAG("ways")

        @dag.task
        def work() -> tuple[str, list[str], int]:
            try:
                read = fetch(path="/data")
            except ToolDenied as denied:
                read = f"denied: {denied.reason}"
            return read, here.paths, os.getpid()

        result = orchestra.run_sync(dag, executor=DaskExecutor(self.client))
        read, paths, pid = result.outputs["work"]
        assert pid != os.getpid(), "the task body ran in the driver, not on a worker"
        body.paths.extend(paths)  # what the tool's body did on the worker
        return ToolRun(read=read)


@pytest.mark.parametrize("cell", WAY_CELLS)
def test_way_cell(client: Client, cell: str) -> None:
    reason = check_way_cell(DaskWays(client), "task_body_on_a_worker", cell)
    if reason is not None:
        pytest.skip(reason)


def test_the_page_shows_this_row(client: Client) -> None:
    assert way_matrix_rows(DaskWays(client)) in PAGE.read_text()
