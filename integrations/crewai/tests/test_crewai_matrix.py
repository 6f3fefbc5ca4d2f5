"""The task matrix (``orchestra.bridge.testing``) on a CrewAI tool call, ``Crew.kickoff``."""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

import pytest
from crewai import Agent, Crew, Task
from crewai.llms.base_llm import BaseLLM
from crewai.tools import tool
from orchestra_crewai import with_hooks
from pydantic import Field

import orchestra
from orchestra.bridge.testing import TASK_CELLS, TaskRun, check_task_cell

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:crewai")

_READ = re.compile(r"\{\\*'out\\*': \\*'(\w+)\\*'\}")


class _Model(BaseLLM):
    """Calls the tool ``work`` once, then answers; keeps what it was shown."""

    prompts: list[str] = Field(default_factory=list)

    def call(self, messages: Any, *args: Any, **kwargs: Any) -> str:
        self.prompts.append(json.dumps(messages))
        if len(self.prompts) == 1:
            return 'Thought: go\nAction: work\nAction Input: {"job": "j"}'
        return "Thought: done\nFinal Answer: done"

    def supports_function_calling(self) -> bool:
        return False


class _End(orchestra.TaskHooks):
    def __init__(self) -> None:
        self.state: orchestra.TaskState | None = None

    def on_end(self, ctx: Any, state: orchestra.TaskState) -> None:
        self.state = state


class CrewAIEngine:
    """One tool call ``work`` of a crew's agent; its output is what the agent read.

    The ``retry`` cell's body fails once: CrewAI's own retry of a raising tool runs it the
    second time (``test_crewai.py::test_retry_runs_the_tool_again`` shows orchestra's
    ``Retry`` once CrewAI gave up).
    """

    name = "CrewAI"
    cannot: Mapping[str, str] = MappingProxyType(
        {
            "skip_by_tags": "CrewAI tools carry no tags of their own",
            "fail": "a Fail refuses the tool call and the agent reads why; CrewAI raises nothing",
            "on_end_once": (
                "CrewAI's text tool calls retry a raising tool themselves (6 attempts) before"
                " any hook hears of it: the cell's body, failing 5 times, succeeds first"
            ),
        }
    )

    def run(self, hooks: Sequence[object], body: Callable[[], Any], tags: Sequence[str]) -> TaskRun:
        @tool("work")
        def work(job: str) -> Any:
            """Do the work."""
            return body()

        model = _Model(model="scripted")
        agent = Agent(role="worker", goal="g", backstory="b", llm=model, tools=[work])
        crew = Crew(agents=[agent], tasks=[Task(description="d", expected_output="x", agent=agent)])
        end = _End()
        with_hooks(crew, hooks=[*hooks, end])
        crew.kickoff()
        read = _READ.findall(model.prompts[-1])
        output = {"out": read[-1]} if read else None
        assert end.state is not None, "on_end was not called"
        return TaskRun(end.state, output)


def test_the_output_is_what_the_agent_read() -> None:
    assert ast.literal_eval("{'out': 'body'}") == {"out": "body"}
    assert _READ.findall(json.dumps("Observation: {'out': 'body'}")) == ["body"]


@pytest.mark.parametrize("cell", TASK_CELLS)
def test_task_matrix_on_a_crewai_tool_call(cell: str) -> None:
    reason = check_task_cell(CrewAIEngine(), cell)
    if reason is not None:
        pytest.skip(reason)
