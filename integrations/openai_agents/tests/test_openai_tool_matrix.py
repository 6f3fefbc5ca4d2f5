"""The tool matrix on the OpenAI Agents SDK: a guarded run on the SDK's own scripted model."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

import pytest
from agents import Agent, function_tool
from agents.testing import ScriptedModel, assistant_message, function_call
from bridge_helpers import tool_outputs
from orchestra_openai_agents import OrchestraRunHooks

from orchestra.bridge.testing import TOOL_CELLS, ToolBody, ToolRun, check_tool_cell, tool_matrix_row
from orchestra.skills import HookRegistry

PAGE = Path(__file__).resolve().parents[3] / "docs" / "howto" / "one-policy.md"


class OpenAIAgentsEngine:
    """An agent whose one function tool is ``fetch``; an ask is the SDK's interruption."""

    name = "OpenAI Agents (OrchestraRunHooks)"
    cannot: Mapping[str, str] = MappingProxyType({})

    def call(self, registry: HookRegistry, body: ToolBody) -> ToolRun:
        @function_tool
        def fetch(path: str) -> str:
            """Fetch a path."""
            return body(path)

        model = ScriptedModel(
            [
                [function_call("fetch", {"path": "/data"}, call_id="c1")],
                [assistant_message("done")],
            ]
        )
        agent = Agent(name="fetcher", model=model, tools=[fetch])
        result = asyncio.run(OrchestraRunHooks(registry=registry).run(agent, "fetch it"))
        if result.interruptions:  # the SDK's own pending approval (no request of ours)
            return ToolRun(paused=True)
        return ToolRun(read=tool_outputs(model).get("c1", ""))


@pytest.mark.parametrize("cell", TOOL_CELLS)
def test_tool_matrix_on_openai_agents(cell: str) -> None:
    reason = check_tool_cell(OpenAIAgentsEngine(), cell)
    if reason is not None:
        pytest.skip(reason)


def test_the_one_policy_page_has_openai_agents_row() -> None:
    assert tool_matrix_row(OpenAIAgentsEngine()) in PAGE.read_text()
