"""The task matrix (``orchestra.bridge.testing``) on a Hamilton node, synchronous driver."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

import pytest
from hamilton import ad_hoc_utils, driver
from hamilton.function_modifiers import tag
from orchestra_hamilton import HookAdapter

from orchestra.bridge.testing import TASK_CELLS, TaskRun, check_task_cell


class HamiltonEngine:
    """One node ``work``: its tags are Hamilton's ``@tag(tags=...)``."""

    name = "Hamilton"
    cannot: Mapping[str, str] = MappingProxyType({})

    def run(self, hooks: Sequence[object], body: Callable[[], Any], tags: Sequence[str]) -> TaskRun:
        def work() -> dict[str, Any]:
            return body()  # type: ignore[no-any-return]  # the matrix's body

        if tags:
            work = tag(tags=",".join(tags))(work)
        adapter = HookAdapter(*hooks)
        module = ad_hoc_utils.create_temporary_module(work)
        dr = driver.Builder().with_modules(module).with_adapters(adapter).build()
        error: BaseException | None = None
        output = None
        try:
            output = dr.execute(["work"])["work"]
        except Exception as exc:
            error = exc
        result = adapter.last_result
        assert result is not None
        return TaskRun(result.states["work"], output, error)


@pytest.mark.parametrize("cell", TASK_CELLS)
def test_task_matrix_on_a_hamilton_node(cell: str) -> None:
    reason = check_task_cell(HamiltonEngine(), cell)
    if reason is not None:
        pytest.skip(reason)
