"""lobehub's ``identifier/apiName`` matchers (seed 004) in a real pydantic-ai agent.

A toolset's ``id`` is the tool's identifier: ``FunctionToolset(id="lobe-web-browsing")``
holds ``search``, and a hook matching ``lobe-web-browsing/search`` refuses it; the same
function name in another toolset runs. ``FunctionModel`` is the scripted model.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from orchestra_pydantic_ai import OrchestraCapability
from pydantic_ai import Agent, FunctionToolset
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from orchestra.skills import load

pytestmark = pytest.mark.anyio

APPEND = {"type": "command", "command": 'line=$(cat); printf "%s\\n" "$line" >> events.jsonl'}


def search_then_answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    if len(messages) == 1:
        call = ToolCallPart("search", {"query": "orchestra"}, tool_call_id="c1")
        return ModelResponse(parts=[call])
    last = messages[-1].parts[-1]
    return ModelResponse(parts=[TextPart(f"read {getattr(last, 'content', '?')}")])


@pytest.mark.parametrize(("toolset_id", "refused"), [("lobe-web-browsing", True), ("docs", False)])
async def test_a_toolset_id_is_the_identifier(
    tmp_path: Path, toolset_id: str, refused: bool
) -> None:
    config = {
        "PreToolUse": [
            {"matcher": "lobe-web-browsing/search", "hooks": [APPEND]},
            {
                "matcher": "lobe-web-browsing/search",
                "hooks": [{"type": "permission", "decision": "deny", "reason": "no web today"}],
            },
        ]
    }
    (tmp_path / "orchestra.yaml").write_text(json.dumps({"hooks": config}))
    registry = load(tmp_path / "orchestra.yaml", project_dir=tmp_path)
    ran: list[str] = []
    toolset: FunctionToolset[None] = FunctionToolset(id=toolset_id)

    @toolset.tool_plain
    def search(query: str) -> str:
        """Search the web."""
        ran.append(query)
        return f"results for {query}"

    agent: Agent[None, str] = Agent(
        FunctionModel(search_then_answer),
        toolsets=[toolset],
        capabilities=[OrchestraCapability(registry=registry)],
    )
    result = await agent.run("find orchestra")

    log = tmp_path / "events.jsonl"
    if refused:
        assert ran == []
        assert "no web today" in result.output
        [event] = [json.loads(line) for line in log.read_text().splitlines()]
        assert (event["tool_identifier"], event["tool_name"]) == ("lobe-web-browsing", "search")
    else:
        assert ran == ["orchestra"]
        assert result.output == "read results for orchestra"
        assert not log.exists()
