"""The task matrix (``orchestra.bridge.testing``) on an OpenAI Agents SDK function tool call."""

from __future__ import annotations

import ast
import asyncio
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

import pytest
from agents import Agent, function_tool
from agents.testing import ScriptedModel, assistant_message, function_call
from bridge_helpers import tool_outputs
from orchestra_openai_agents import OrchestraRunHooks

from orchestra.bridge.testing import TASK_CELLS, EndRecorder, TaskRun, check_task_cell


class OpenAIAgentsEngine:
    """One function tool call ``work`` of a guarded run; its output is what the model read.

    Its end state is what ``on_end`` heard (a refused call raises nothing).
    """

    name = "OpenAI Agents (OrchestraRunHooks)"
    cannot: Mapping[str, str] = MappingProxyType(
        {
            "skip_by_tags": "the SDK's function tools carry no tags of their own",
            "fail": "a Fail refuses the tool call and the model reads why: no error",
            "replace": "after_execute cannot change what the SDK sends the model (no answer)",
            "give_output": "before_execute carries out Skip and Fail only",
        }
    )

    def run(self, hooks: Sequence[object], body: Callable[[], Any], tags: Sequence[str]) -> TaskRun:
        @function_tool
        def work(job: str) -> Any:
            """Do the work."""
            return body()

        model = ScriptedModel(
            [[function_call("work", {"job": "j"}, call_id="c1")], [assistant_message("done")]]
        )
        end = EndRecorder()
        agent = Agent(name="worker", model=model, tools=[work])
        asyncio.run(OrchestraRunHooks([*hooks, end]).run(agent, "work"))
        read = tool_outputs(model).get("c1", "")
        try:
            output = ast.literal_eval(read)
        except (ValueError, SyntaxError):
            output = None
        return TaskRun(end.state, output if isinstance(output, dict) else None)


@pytest.mark.parametrize("cell", TASK_CELLS)
def test_task_matrix_on_an_openai_agents_tool_call(cell: str) -> None:
    reason = check_task_cell(OpenAIAgentsEngine(), cell)
    if reason is not None:
        pytest.skip(reason)
