"""The tool matrix on orchestra's own engines: a ``@registry.guard`` tool called in a DAG
task body and in a subagent of the dispatcher (each integration runs it in its tests).

docs/howto/one-policy.md's table is checked here against every engine's row, the
integrations' included, so the page cannot drift from what the matrix runs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest

import orchestra
from orchestra import ToolDenied
from orchestra.agents import AgentContext
from orchestra.bridge.testing import (
    TOOL_CELLS,
    ToolBody,
    ToolRun,
    check_tool_cell,
    tool_matrix_header,
    tool_matrix_row,
)
from orchestra.skills import HookRegistry

PAGE = Path(__file__).resolve().parent.parent / "docs" / "howto" / "one-policy.md"
NO_PAUSE = (
    "a guarded Python function has no one to ask: an unanswered ask is refused "
    "(ToolDenied), unless the guard is given an ask= callback"
)


async def _guarded(registry: HookRegistry, body: ToolBody) -> str:
    fetch = registry.guard("fetch")(body)
    try:
        return str(await fetch(path="/data"))
    except ToolDenied as denied:
        return f"denied: {denied.reason}"


class DagEngine:
    """A DAG task whose body calls the guarded tool ``fetch``."""

    name = "orchestra DAG (task body)"
    cannot: Mapping[str, str] = MappingProxyType({"ask": NO_PAUSE})

    def call(self, registry: HookRegistry, body: ToolBody) -> ToolRun:
        dag = orchestra.DAG("tool-matrix")

        @dag.task
        async def work() -> str:
            return await _guarded(registry, body)

        result = orchestra.run_sync(dag, hooks=[registry.as_task_hooks()])  # opens budget:
        return ToolRun(read=str(result.outputs.get("work")))


class _Agent:
    name = "fetcher"

    def __init__(self, registry: HookRegistry, body: ToolBody) -> None:
        self.registry, self.body = registry, body

    async def run(self, task: str, ctx: AgentContext) -> str:
        return await _guarded(self.registry, self.body)


class DispatcherEngine:
    """A subagent of the dispatcher whose run calls the guarded tool ``fetch``."""

    name = "orchestra dispatcher (subagent)"
    cannot: Mapping[str, str] = MappingProxyType({"ask": NO_PAUSE})

    def call(self, registry: HookRegistry, body: ToolBody) -> ToolRun:
        hooks = [registry.as_subagent_hooks()]  # its budget: opens in each dispatch
        dispatcher = orchestra.Dispatcher([_Agent(registry, body)], hooks=hooks)
        result = asyncio.run(dispatcher.dispatch("fetcher", "fetch /data"))
        return ToolRun(read=str(result.output))


ENGINES = (DagEngine(), DispatcherEngine())


@pytest.mark.parametrize("cell", TOOL_CELLS)
@pytest.mark.parametrize("engine", ENGINES, ids=lambda e: e.name.split()[1])
def test_tool_matrix_on_orchestras_engines(engine: Any, cell: str) -> None:
    reason = check_tool_cell(engine, cell)
    if reason is not None:
        pytest.skip(reason)


def test_a_cell_the_engine_does_not_do_fails_naming_engine_and_cell() -> None:
    class Unguarded(DagEngine):
        name = "unguarded engine"

        def call(self, registry: HookRegistry, body: ToolBody) -> ToolRun:
            return ToolRun(read=body("/data"))  # calls the tool without the guard

    with pytest.raises(AssertionError, match=r"unguarded engine, tool cell 'deny'"):
        check_tool_cell(Unguarded(), "deny")
    with pytest.raises(KeyError, match="typo"):
        check_tool_cell(type("Typo", (DagEngine,), {"cannot": {"typo": "?"}})(), "deny")


def test_the_one_policy_page_has_each_engines_row() -> None:
    """The page's table is the matrix's: this file's engines here, each integration's in
    its own tests (``tool_matrix_row`` renders the row, ``pass`` or ``cannot: why``)."""
    page = PAGE.read_text()
    assert tool_matrix_header() in page
    for engine in ENGINES:
        assert tool_matrix_row(engine) in page, f"{engine.name}: its row is not on {PAGE.name}"
