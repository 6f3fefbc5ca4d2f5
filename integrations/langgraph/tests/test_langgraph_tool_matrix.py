"""The tool matrix on LangGraph: a prebuilt ToolNode driven by langchain-core's fake chat model
(compiled with an in-memory checkpointer: an ``ask`` is ``interrupt()``)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from orchestra_langgraph import with_hooks
from test_langgraph_tools import tool_graph

from orchestra.bridge.testing import TOOL_CELLS, ToolBody, ToolRun, check_tool_cell, tool_matrix_row
from orchestra.skills import HookRegistry

PAGE = Path(__file__).resolve().parents[3] / "docs" / "howto" / "one-policy.md"


class LangGraphEngine:
    """model -> tools -> model, the fake model asking for ``fetch(path="/data")`` once."""

    name = "LangGraph (ToolNode)"
    cannot: Mapping[str, str] = MappingProxyType({})

    def call(self, registry: HookRegistry, body: ToolBody) -> ToolRun:
        @tool
        def fetch(path: str) -> str:
            """Fetch a path."""
            return body(path)

        calls = [{"name": "fetch", "args": {"path": "/data"}, "id": "c1", "type": "tool_call"}]
        builder = tool_graph(fetch, calls)
        app = with_hooks(builder, registry=registry).compile(checkpointer=InMemorySaver())
        config: Any = {"configurable": {"thread_id": "matrix"}}
        out = app.invoke({"messages": [HumanMessage("fetch it")]}, config)
        read = [str(m.content) for m in out["messages"] if isinstance(m, ToolMessage)]
        paused = out.get("__interrupt__") or ()
        request = dict(paused[0].value) if paused else None
        return ToolRun(read=" | ".join(read), paused=bool(paused), request=request)


@pytest.mark.parametrize("cell", TOOL_CELLS)
def test_tool_matrix_on_langgraph(cell: str) -> None:
    reason = check_tool_cell(LangGraphEngine(), cell)
    if reason is not None:
        pytest.skip(reason)


def test_the_one_policy_page_has_langgraphs_row() -> None:
    assert tool_matrix_row(LangGraphEngine()) in PAGE.read_text()
