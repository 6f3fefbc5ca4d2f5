"""The tool matrix (``orchestra.bridge.testing``) on CrewAI: a crew's agent calls ``fetch``.

A scripted ``BaseLLM`` drives a real agent of a real crew (``Crew.kickoff``) through
CrewAI's text tool calls; what the caller read is the observation CrewAI showed the model
after the call (the tool's result, ``Tool call denied: {reason}``, a mock, a rewrite).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
from crewai import Agent, Crew, Task
from crewai.llms.base_llm import BaseLLM
from crewai.tools import tool
from orchestra_crewai import with_hooks
from pydantic import Field

from orchestra.bridge.testing import TOOL_CELLS, ToolBody, ToolRun, check_tool_cell, tool_matrix_row
from orchestra.skills import HookRegistry, load

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:crewai")

PAGE = Path(__file__).resolve().parents[3] / "docs" / "howto" / "one-policy.md"


class _Model(BaseLLM):
    """Calls ``fetch`` once with ``{"path": "/data"}``, then answers; keeps what it was sent."""

    sent: list[list[Any]] = Field(default_factory=list)

    def call(self, messages: Any, *args: Any, **kwargs: Any) -> str:
        self.sent.append(list(messages) if isinstance(messages, list) else [messages])
        if len(self.sent) == 1:
            return 'Thought: go\nAction: fetch\nAction Input: {"path": "/data"}'
        return "Thought: done\nFinal Answer: done"

    def supports_function_calling(self) -> bool:
        return False  # CrewAI's text tool calls (ReAct): Action / Action Input

    def observation(self) -> str:
        """What the model was shown after its call: the ``Observation:`` CrewAI added."""
        if len(self.sent) < 2:
            return ""
        added = self.sent[-1][len(self.sent[0]) :]
        text = "\n".join(m["content"] if isinstance(m, dict) else str(m) for m in added)
        return text.partition("Observation:")[2]


class CrewAIEngine:
    """One agent of one crew whose one tool is ``fetch``, guarded by ``with_hooks``."""

    name = "CrewAI (with_hooks)"
    cannot: Mapping[str, str] = MappingProxyType(
        {
            "ask": (
                "CrewAI's before-tool-call hooks allow or block a call and nothing in CrewAI"
                " pauses one: an unanswered ask is refused (the agent reads"
                " `Tool call denied: {reason}`)"
            ),
        }
    )

    def call(self, registry: HookRegistry, body: ToolBody) -> ToolRun:
        @tool("fetch")
        def fetch(path: str) -> str:
            """Fetch a path."""
            return body(path)

        model = _Model(model="scripted")
        agent = Agent(role="fetcher", goal="g", backstory="b", llm=model, tools=[fetch])
        task = Task(description="fetch it", expected_output="x", agent=agent)
        with_hooks(Crew(agents=[agent], tasks=[task]), registry=registry).kickoff()
        return ToolRun(read=model.observation())


@pytest.mark.parametrize("cell", TOOL_CELLS)
def test_tool_matrix_on_crewai(cell: str) -> None:
    reason = check_tool_cell(CrewAIEngine(), cell)
    if reason is not None:
        pytest.skip(reason)


def test_the_one_policy_page_has_crewais_row() -> None:
    assert tool_matrix_row(CrewAIEngine()) in PAGE.read_text()


def test_an_ask_is_refused_and_the_agent_reads_why(tmp_path: Path) -> None:
    """What the ``ask`` cell's ``cannot`` says: the tool never runs, the agent reads why."""
    ask = {"type": "permission", "decision": "ask", "reason": "a person decides"}
    path = tmp_path / "orchestra.yaml"
    path.write_text(json.dumps({"hooks": {"PreToolUse": [{"matcher": "fetch", "hooks": [ask]}]}}))
    body = ToolBody()
    run = CrewAIEngine().call(load(path, project_dir=tmp_path), body)
    assert body.paths == []
    assert run.read.strip().startswith("Tool call denied: a person decides")
