"""The tool matrix on pydantic-ai: an agent with OrchestraCapability, driven by FunctionModel."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
from orchestra_pydantic_ai import OrchestraCapability
from pydantic_ai import Agent, DeferredToolRequests
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from orchestra.bridge.testing import TOOL_CELLS, ToolBody, ToolRun, check_tool_cell, tool_matrix_row
from orchestra.skills import HookRegistry

PAGE = Path(__file__).resolve().parents[3] / "docs" / "howto" / "one-policy.md"


def _script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Call ``fetch(path="/data")`` once, then answer with what the tool returned."""
    returns = [
        str(p.content)
        for m in messages
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, ToolReturnPart)
    ]
    if returns:
        return ModelResponse(parts=[TextPart(" | ".join(returns))])
    return ModelResponse(parts=[ToolCallPart("fetch", {"path": "/data"}, tool_call_id="c1")])


class PydanticAIEngine:
    """An agent whose one tool is ``fetch``; an ask ends the run with its approvals."""

    name = "pydantic-ai (OrchestraCapability)"
    cannot: Mapping[str, str] = MappingProxyType({})

    def call(self, registry: HookRegistry, body: ToolBody) -> ToolRun:
        agent: Agent[None, Any] = Agent(
            FunctionModel(_script),
            capabilities=[OrchestraCapability(registry=registry)],
            output_type=[str, DeferredToolRequests],
        )

        @agent.tool_plain
        def fetch(path: str) -> str:
            """Fetch a path."""
            return body(path)

        result = asyncio.run(agent.run("fetch it"))
        output = result.output
        if isinstance(output, DeferredToolRequests):
            (pending,) = output.approvals
            return ToolRun(paused=True, request=output.metadata[pending.tool_call_id])
        return ToolRun(read=str(output))


@pytest.mark.parametrize("cell", TOOL_CELLS)
def test_tool_matrix_on_pydantic_ai(cell: str) -> None:
    reason = check_tool_cell(PydanticAIEngine(), cell)
    if reason is not None:
        pytest.skip(reason)


def test_the_one_policy_page_has_pydantic_ais_row() -> None:
    assert tool_matrix_row(PydanticAIEngine()) in PAGE.read_text()
