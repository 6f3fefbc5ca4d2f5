"""The way around the guard in Dask, as a cell of the conformance matrix: a guarded tool
called in a task body runs on a worker, and is judged there on its real input."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from distributed import Client
from orchestra_dask import DaskExecutor

import orchestra
from orchestra import ToolDenied
from orchestra.bridge.testing import WAY_CELLS, ToolBody, ToolRun, check_way_cell, way_matrix_rows
from orchestra.skills import HookRegistry

PAGE = Path(__file__).resolve().parents[3] / "docs" / "howto" / "one-policy.md"
BODIES: dict[str, ToolBody] = {}
"""The bodies by key: a task reaches the test's own body by name (a pickled copy would
record its calls where no one reads them; the workers are threads of this process)."""


def record(key: str, path: str) -> str:
    """The body of the call keyed ``key`` (pickled by reference: this module's own)."""
    return BODIES[key](path)


class DaskWays:
    name = "Dask"
    ways: Mapping[str, str] = {
        "task_body_on_a_worker": "a `@registry.guard` tool called in a task body on a worker"
    }
    cannot: Mapping[str, str] = {}

    def __init__(self, client: Client) -> None:
        self.client = client

    def call(self, way: str, registry: HookRegistry, body: ToolBody) -> ToolRun:
        key = str(id(body))
        BODIES[key] = body

        @registry.guard("fetch")
        def fetch(path: str) -> str:
            return record(key, path)

        dag = orchestra.DAG("ways")

        @dag.task
        def work() -> Any:
            try:
                return fetch(path="/data")
            except ToolDenied as denied:
                return f"denied: {denied.reason}"

        result = orchestra.run_sync(dag, executor=DaskExecutor(self.client))
        return ToolRun(read=str(result.outputs.get("work", "")))


@pytest.mark.parametrize("cell", WAY_CELLS)
def test_way_cell(client: Client, cell: str) -> None:
    reason = check_way_cell(DaskWays(client), "task_body_on_a_worker", cell)
    if reason is not None:
        pytest.skip(reason)


def test_the_page_shows_this_row(client: Client) -> None:
    assert way_matrix_rows(DaskWays(client)) in PAGE.read_text()
