"""The task matrix on orchestra's own DAG scheduler (each integration runs it in its tests)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

import pytest

import orchestra
from orchestra.bridge.testing import TASK_CELLS, TaskRun, check_task_cell


class DagEngine:
    """One task ``work`` in a DAG run by ``orchestra.run_sync``."""

    name = "orchestra DAG"
    cannot: Mapping[str, str] = MappingProxyType({})

    def run(self, hooks: Sequence[object], body: Callable[[], Any], tags: Sequence[str]) -> TaskRun:
        dag = orchestra.DAG("matrix")
        metadata = MappingProxyType({"tags": tuple(tags)})
        dag.add(orchestra.Task(id="work", fn=body, metadata=metadata))
        result = orchestra.run_sync(dag, hooks=list(hooks))
        return TaskRun(result.states["work"], result.outputs.get("work"), result.errors.get("work"))


@pytest.mark.parametrize("cell", TASK_CELLS)
def test_task_matrix_on_the_dag(cell: str) -> None:
    reason = check_task_cell(DagEngine(), cell)
    if reason is not None:
        pytest.skip(reason)


def test_a_cell_the_engine_does_not_do_fails_naming_engine_and_cell() -> None:
    class Ignores(DagEngine):
        name = "broken engine"

        def run(
            self, hooks: Sequence[object], body: Callable[[], Any], tags: Sequence[str]
        ) -> TaskRun:
            return super().run((), body, tags)  # drops the hooks

    with pytest.raises(AssertionError, match=r"broken engine, cell 'fail'"):
        check_task_cell(Ignores(), "fail")


def test_cannot_names_its_reason_and_only_known_cells() -> None:
    class Cannot(DagEngine):
        cannot = MappingProxyType({"one_trace": "no spans here"})

    assert check_task_cell(Cannot(), "one_trace") == "no spans here"

    class Typo(DagEngine):
        cannot = MappingProxyType({"one_trace_": "?"})

    with pytest.raises(KeyError, match="one_trace_"):
        check_task_cell(Typo(), "retry")
