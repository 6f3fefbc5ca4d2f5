"""The task matrix (``orchestra.bridge.testing``) on the DAG scheduler with a DaskExecutor.

Hooks and decisions stay in the driver; bodies run on the in-process cluster's worker.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

import pytest
from distributed import Client
from orchestra_dask import DaskExecutor

import orchestra
from orchestra.bridge.testing import TASK_CELLS, TaskRun, check_task_cell

# The matrix counts its body's calls: the body stays here, the worker (in this process)
# calls it by key, so the count is the one the matrix reads.
_BODIES: dict[str, Callable[[], Any]] = {}


def _call(key: str) -> Any:
    return _BODIES[key]()


class DaskEngine:
    """One task ``work`` whose body runs on a dask worker."""

    name = "Dask"
    cannot: Mapping[str, str] = MappingProxyType({})

    def __init__(self, client: Client) -> None:
        self.client = client

    def run(self, hooks: Sequence[object], body: Callable[[], Any], tags: Sequence[str]) -> TaskRun:
        key = uuid.uuid4().hex
        _BODIES[key] = body
        try:
            dag = orchestra.DAG("matrix")
            metadata = MappingProxyType({"tags": tuple(tags)})
            fn = functools.partial(_call, key)
            dag.add(orchestra.Task(id="work", fn=fn, metadata=metadata))
            result = orchestra.run_sync(dag, hooks=list(hooks), executor=DaskExecutor(self.client))
        finally:
            del _BODIES[key]
        return TaskRun(result.states["work"], result.outputs.get("work"), result.errors.get("work"))


@pytest.mark.parametrize("cell", TASK_CELLS)
def test_task_matrix_on_dask(client: Client, cell: str) -> None:
    reason = check_task_cell(DaskEngine(client), cell)
    if reason is not None:
        pytest.skip(reason)
