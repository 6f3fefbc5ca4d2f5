"""Hooks that raise, time out or answer garbage inside a bridged run: the documented policy
holds (a Python hook's error counts as no opinion, a YAML PreToolUse hook's error blocks
unless it says on_error: continue) and the run goes on."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, FunctionTool, function_tool
from agents.testing import ScriptedModel, assistant_message, function_call
from bridge_helpers import drive, tool_outputs, write_config
from orchestra_openai_agents import OrchestraRunHooks

from orchestra import SubagentHookContext, SubagentHooks, SubagentResult, TaskHookContext, TaskHooks

pytestmark = pytest.mark.anyio


def counting_tool(ran: list[str]) -> FunctionTool:
    @function_tool
    def clean(path: str) -> str:
        """Clean a folder."""
        ran.append(path)
        return f"cleaned {path}"

    return clean


def script() -> ScriptedModel:
    return ScriptedModel(
        [
            [function_call("clean", {"path": "/tmp/build"}, call_id="c1")],
            [assistant_message("done")],
        ]
    )


class Raises(TaskHooks, SubagentHooks):
    def before_execute(self, ctx: TaskHookContext) -> None:
        raise RuntimeError("tool hook bug")

    def before_dispatch(self, ctx: SubagentHookContext) -> None:
        raise RuntimeError("agent hook bug")


class Slow(TaskHooks, SubagentHooks):
    timeout = 0.05

    async def before_execute(self, ctx: TaskHookContext) -> None:
        await asyncio.sleep(5)

    async def before_dispatch(self, ctx: SubagentHookContext) -> None:
        await asyncio.sleep(5)


class Garbage(TaskHooks, SubagentHooks):
    def before_execute(self, ctx: TaskHookContext) -> Any:
        return "not a decision"

    def before_dispatch(self, ctx: SubagentHookContext) -> Any:
        return 42


class Ends(SubagentHooks):
    def __init__(self) -> None:
        self.results: list[SubagentResult] = []

    def after_dispatch(self, ctx: SubagentHookContext, result: SubagentResult) -> None:
        self.results.append(result)


@pytest.mark.parametrize("bad", [Raises, Slow, Garbage])
async def test_a_bad_python_hook_counts_as_no_opinion(bad: type[Any], mode: str) -> None:
    ran: list[str] = []
    ends = Ends()
    model = script()
    agent = Agent(name="ops", model=model, tools=[counting_tool(ran)])

    result = await drive(OrchestraRunHooks([bad(), ends]), agent, "clean up", mode)

    assert ran == ["/tmp/build"]  # the tool ran: fail-open
    assert result.final_output == "done"
    (end,) = ends.results
    moments = sorted(e.moment for e in end.hook_errors)
    assert moments == ["before_dispatch", "before_execute"]  # both recorded


@pytest.mark.parametrize(
    "command", ["exit 1", "echo 'not json {'", "sleep 5"], ids=["crashes", "garbage", "times-out"]
)
async def test_a_broken_yaml_guard_follows_on_error(tmp_path: Path, command: str) -> None:
    hook = {"type": "command", "command": command, "timeout": 1}
    blocking = write_config(tmp_path, {"PreToolUse": [{"matcher": "clean", "hooks": [hook]}]})
    ran: list[str] = []
    model = script()
    agent = Agent(name="ops", model=model, tools=[counting_tool(ran)])

    result = await OrchestraRunHooks(registry=blocking).run(agent, "clean up")

    assert ran == []  # PreToolUse fails closed by default: the model is told
    assert tool_outputs(model)["c1"].startswith("Tool call denied: hook error")
    assert result.final_output == "done"

    lenient = {**hook, "on_error": "continue"}
    registry = write_config(tmp_path, {"PreToolUse": [{"matcher": "clean", "hooks": [lenient]}]})
    model = script()
    agent = Agent(name="ops", model=model, tools=[counting_tool(ran)])
    result = await OrchestraRunHooks(registry=registry).run(agent, "clean up")
    assert ran == ["/tmp/build"]
    assert result.final_output == "done"
