"""The task matrix (``orchestra.bridge.testing``) on a pydantic-ai tool call, ``Agent.run``."""

from __future__ import annotations

import ast
import asyncio
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

import pytest
from orchestra_pydantic_ai import OrchestraCapability
from pydantic_ai import Agent, Tool
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

import orchestra
from orchestra.bridge.testing import TASK_CELLS, EndRecorder, TaskRun, check_task_cell


def _script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Call ``work(job="j")`` once, then answer with what the tool returned."""
    returns = [
        p.content
        for m in messages
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, ToolReturnPart)
    ]
    if returns:
        return ModelResponse(parts=[TextPart(repr(returns[-1]))])
    return ModelResponse(parts=[ToolCallPart("work", {"job": "j"}, tool_call_id="c1")])


class PydanticAIEngine:
    """One tool call ``work`` of an agent; its output is what the model read.

    Its tags are the tool's ``Tool(metadata={"tags": ...})``; its end state is what
    ``on_end`` heard (pydantic-ai raises nothing for a refused call).
    """

    name = "pydantic-ai (OrchestraCapability)"
    cannot: Mapping[str, str] = MappingProxyType(
        {"fail": "a Fail refuses the tool call (ToolDenied) and the model reads why: no error"}
    )

    def run(self, hooks: Sequence[object], body: Callable[[], Any], tags: Sequence[str]) -> TaskRun:
        def work(job: str) -> Any:
            """Do the work."""
            return body()

        end = EndRecorder()
        agent: Agent[None, str] = Agent(
            FunctionModel(_script),
            tools=[Tool(work, metadata={"tags": tuple(tags)})],
            capabilities=[OrchestraCapability([*hooks, end])],
        )
        read = asyncio.run(agent.run("work")).output
        try:
            output = ast.literal_eval(read)
        except (ValueError, SyntaxError):
            output = read
        return TaskRun(end.state, output if isinstance(output, dict) else None)


@pytest.mark.parametrize("cell", TASK_CELLS)
def test_task_matrix_on_a_pydantic_ai_tool_call(cell: str) -> None:
    reason = check_task_cell(PydanticAIEngine(), cell)
    if reason is not None:
        pytest.skip(reason)


def test_a_fail_is_the_refusal_the_model_reads() -> None:
    class No(orchestra.TaskHooks):
        def before_execute(self, ctx: Any) -> orchestra.Fail:
            return orchestra.Fail("not allowed")

    calls: list[str] = []

    def work(job: str) -> str:
        """Do the work."""
        calls.append(job)
        return "done"

    agent: Agent[None, str] = Agent(
        FunctionModel(_script), tools=[work], capabilities=[OrchestraCapability([No()])]
    )
    assert asyncio.run(agent.run("work")).output == repr("not allowed")
    assert calls == []
