"""docs/howto/one-policy.md has every table of the conformance matrix, each row an engine's.

Each engine's own tests check that its rows are on the page (``tool_matrix_row``,
``way_matrix_rows``, ``ask_matrix_row``); this checks the tables' headers are the
matrix's cells and that no engine's rows went missing from them.
"""

from __future__ import annotations

from pathlib import Path

from orchestra.bridge.testing import ask_matrix_header, tool_matrix_header, way_matrix_header

PAGE = Path(__file__).resolve().parent.parent / "docs" / "howto" / "one-policy.md"


def table(header: str) -> list[str]:
    """The first cells (the engines) of the rows of the table under ``header``."""
    text = PAGE.read_text()
    assert header in text, f"the page has no table with the header {header!r}"
    rows = text.split(header, 1)[1].split("\n\n", 1)[0].strip().splitlines()
    return [row.split(" | ")[0].removeprefix("| ") for row in rows]


def test_the_tool_table_has_every_engine() -> None:
    assert table(tool_matrix_header()) == [
        "orchestra DAG (task body)",
        "orchestra dispatcher (subagent)",
        "LangGraph (ToolNode)",
        "pydantic-ai (OrchestraCapability)",
        "OpenAI Agents (OrchestraRunHooks)",
        "Claude Agent SDK (with_hooks)",
        "CrewAI (with_hooks)",
    ]


def test_the_ways_table_has_every_engine_that_has_other_ways() -> None:
    engines = table(way_matrix_header())
    assert sorted(set(engines)) == ["Dask", "LangGraph", "OpenAI Agents", "pydantic-ai"]
    assert len(engines) == 17  # one row per way: 6 + 6 + 4 + 1


def test_the_ask_table_has_every_engine_that_can_pause() -> None:
    assert table(ask_matrix_header()) == [
        "OpenAI Agents (OrchestraRunHooks)",
        "pydantic-ai (OrchestraCapability)",
        "LangGraph (ToolNode)",
        "LangChain create_agent",
        "LangChain create_agent beside HumanInTheLoopMiddleware, ToolRetryMiddleware",
    ]
