"""The task matrix (``orchestra.bridge.testing``) on a hooked Prefect task in a flow."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import Any

import pytest

from orchestra.bridge.testing import TASK_CELLS, TaskRun, check_task_cell


@pytest.fixture(scope="module")
def prefect_api() -> Iterator[str]:
    """Prefect's local API (temporary PREFECT_HOME and database), once for the module."""
    from orchestra_prefect.testing import local_api

    with local_api() as url:
        yield url


class PrefectEngine:
    """One hooked ``@task`` ``work`` (its tags Prefect's ``tags``), run in a ``@flow``."""

    name = "Prefect"
    cannot: Mapping[str, str] = MappingProxyType(
        {
            "one_trace": "a hooked Prefect task makes no orchestra spans: Prefect's runs, "
            "states and logs are its record (hook calls are logged there)",
        }
    )

    def run(self, hooks: Sequence[object], body: Callable[[], Any], tags: Sequence[str]) -> TaskRun:
        import orchestra_prefect
        from prefect import flow, task

        @orchestra_prefect.hooked(*hooks)
        @task(tags=list(tags))
        def work() -> Any:
            return body()

        states: list[Any] = []

        @flow
        def main() -> None:
            states.append(work(return_state=True))  # the flow itself does not fail

        main()
        state = states[0]
        result = state.result(raise_on_failure=False)
        ended = orchestra_prefect.task_state(state)
        if isinstance(result, BaseException):
            return TaskRun(ended, None, result)
        return TaskRun(ended, result, None)


@pytest.mark.parametrize("cell", TASK_CELLS)
def test_task_matrix_on_a_prefect_task(prefect_api: str, cell: str) -> None:
    reason = check_task_cell(PrefectEngine(), cell)
    if reason is not None:
        pytest.skip(reason)
