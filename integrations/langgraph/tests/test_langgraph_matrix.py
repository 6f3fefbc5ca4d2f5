"""The task matrix (``orchestra.bridge.testing``) on a LangGraph node, sync ``invoke``."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph
from orchestra_langgraph import with_hooks

import orchestra
from orchestra.bridge.testing import TASK_CELLS, TaskRun, check_task_cell


class State(TypedDict, total=False):
    out: str


class _Result(orchestra.TaskHooks):
    def __init__(self) -> None:
        self.result: orchestra.RunResult | None = None

    def after_run(self, ctx: Any, result: orchestra.RunResult) -> None:
        self.result = result


class LangGraphEngine:
    """One node ``work`` (its tags in the node's metadata) of a compiled ``StateGraph``."""

    name = "LangGraph"
    cannot: Mapping[str, str] = MappingProxyType({})

    def run(self, hooks: Sequence[object], body: Callable[[], Any], tags: Sequence[str]) -> TaskRun:
        builder = StateGraph(State)
        builder.add_node("work", lambda state: body(), metadata={"tags": tuple(tags)})
        builder.add_edge(START, "work")
        builder.add_edge("work", END)
        seen = _Result()
        graph = with_hooks(builder, hooks=[*hooks, seen]).compile()
        error: BaseException | None = None
        final: dict[str, Any] = {}
        try:
            final = graph.invoke({}) or {}
        except Exception as exc:
            error = exc
        assert seen.result is not None
        output = {"out": final["out"]} if "out" in final else None
        return TaskRun(seen.result.states["work"], output, error)


@pytest.mark.parametrize("cell", TASK_CELLS)
def test_task_matrix_on_a_langgraph_node(cell: str) -> None:
    reason = check_task_cell(LangGraphEngine(), cell)
    if reason is not None:
        pytest.skip(reason)
