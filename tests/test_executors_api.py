"""``orchestra.executors``: the executor capabilities are public, and the scheduler uses them."""

from __future__ import annotations

from typing import Any

import pytest

import orchestra
from orchestra.executors import (
    AppliesTimeouts,
    ChainsSubmissions,
    Executor,
    KeepsOutputsRemote,
    LocalExecutor,
    ReleasesOutputs,
)


class Remote:
    """Outputs stay "remote" (boxed) until fetched; released boxes are counted."""

    def __init__(self) -> None:
        self.released: list[str] = []

    async def execute(self, task: orchestra.Task, kwargs: dict[str, Any]) -> Any:
        values = {k: v[0] if isinstance(v, list) else v for k, v in kwargs.items()}
        return [task.fn(**values)]

    async def fetch(self, task: orchestra.Task, output: Any) -> Any:
        return output[0]

    def release(self, task: orchestra.Task, output: Any) -> None:
        self.released.append(task.id)


def test_capabilities_are_checked_as_the_public_protocols() -> None:
    remote = Remote()
    assert isinstance(remote, Executor)
    assert isinstance(remote, KeepsOutputsRemote)
    assert isinstance(remote, ReleasesOutputs)
    assert not isinstance(remote, AppliesTimeouts)
    assert not isinstance(remote, ChainsSubmissions)
    assert isinstance(LocalExecutor(), Executor)


@pytest.mark.anyio
async def test_an_executor_built_on_the_public_protocols_runs_a_dag() -> None:
    dag = orchestra.DAG("remote")

    @dag.task
    def a() -> int:
        return 2

    @dag.task(deps=[a])
    def b(a: int) -> int:
        return a * 21

    remote = Remote()
    result = await orchestra.run(dag, executor=remote)
    assert result.ok
    assert result.outputs == {"a": 2, "b": 42}
    assert "a" in remote.released  # its handle, released once b no longer needed it
