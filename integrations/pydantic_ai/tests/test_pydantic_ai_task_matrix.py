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


class _Script:
    """Call ``work(job="j")`` once, then answer with what the tool returned.

    ``read`` keeps the tool returns the model was sent (what the model reads).
    """

    def __init__(self) -> None:
        self.read: list[ToolReturnPart] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.read = [
            p
            for m in messages
            if isinstance(m, ModelRequest)
            for p in m.parts
            if isinstance(p, ToolReturnPart)
        ]
        if self.read:
            return ModelResponse(parts=[TextPart(repr(self.read[-1].content))])
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

    def __init__(self) -> None:
        self.script = _Script()  # the last run's model

    def run(self, hooks: Sequence[object], body: Callable[[], Any], tags: Sequence[str]) -> TaskRun:
        def work(job: str) -> Any:
            """Do the work."""
            return body()

        end = EndRecorder()
        self.script = _Script()
        agent: Agent[None, str] = Agent(
            FunctionModel(self.script),
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


class SkipTagged(orchestra.TaskHooks):
    """The skip-by-tag rule: a tool tagged ``optional`` is not called."""

    def before_execute(self, ctx: orchestra.TaskHookContext) -> orchestra.Skip | None:
        if "optional" in ctx.task.metadata.get("tags", ()):
            return orchestra.Skip("optional work")
        return None


def test_a_skip_by_tag_is_the_refusal_the_model_reads() -> None:
    """The skip_by_tags cell, and what the scripted model was sent for the skipped call."""
    calls: list[str] = []
    engine = PydanticAIEngine()

    run = engine.run([SkipTagged()], lambda: calls.append("ran"), ("optional",))

    assert run.state is orchestra.TaskState.SKIPPED
    assert calls == []
    (told,) = engine.script.read
    assert (told.tool_name, told.tool_call_id) == ("work", "c1")
    assert told.content == "Tool call skipped: optional work"


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
        FunctionModel(_Script()), tools=[work], capabilities=[OrchestraCapability([No()])]
    )
    assert asyncio.run(agent.run("work")).output == repr("not allowed")
    assert calls == []
