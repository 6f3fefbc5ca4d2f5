from __future__ import annotations

import pytest

import orchestra

pytestmark = pytest.mark.anyio


async def test_chain_passes_outputs() -> None:
    dag = orchestra.DAG("smoke")

    @dag.task
    def a() -> int:
        return 1

    @dag.task(deps=[a])
    async def b(a: int) -> int:
        return a + 1

    result = await orchestra.run(dag)
    assert result.ok
    assert result.outputs == {"a": 1, "b": 2}
