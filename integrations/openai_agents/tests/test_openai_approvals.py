"""A hook's ``ask`` is an SDK interruption: the run pauses, a person decides, it resumes."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, FunctionTool, RunState, function_tool
from agents.testing import ScriptedModel, assistant_message, function_call
from bridge_helpers import (
    SpanLedger,
    drive,
    events,
    log_hook,
    names,
    permission,
    tool_outputs,
    write_config,
)
from orchestra_openai_agents import OrchestraRunHooks

from orchestra import SubagentHookContext, SubagentHooks, SubagentResult

pytestmark = pytest.mark.anyio

ASK = permission("ask", "deploys need a person", matcher="deploy")


class Agents(SubagentHooks):
    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def before_dispatch(self, ctx: SubagentHookContext) -> None:
        self.calls.append(("before", ctx.subagent_name))

    def after_dispatch(self, ctx: SubagentHookContext, result: SubagentResult) -> None:
        self.calls.append(("after", ctx.subagent_name, result.output))


def deploy_tool(ran: list[str]) -> FunctionTool:
    @function_tool
    def deploy(target: str) -> str:
        """Deploy to a target."""
        ran.append(target)
        return f"deployed to {target}"

    return deploy


def deploy_script() -> ScriptedModel:
    return ScriptedModel(
        [
            [function_call("deploy", {"target": "prod"}, call_id="d1")],
            [assistant_message("prod is live")],
        ]
    )


async def test_an_ask_pauses_the_run_and_it_resumes(
    tmp_path: Path, mode: str, spans: SpanLedger
) -> None:
    log = tmp_path / "events.jsonl"
    registry = write_config(
        tmp_path,
        {
            "PreToolUse": [ASK, log_hook(log)],
            "SubagentStop": [log_hook(log)],
            "SessionStart": [log_hook(log)],
        },
    )
    ran: list[str] = []
    model = deploy_script()
    agent = Agent(name="ops", model=model, tools=[deploy_tool(ran)])
    agents = Agents()
    bridge = OrchestraRunHooks([agents], registry=registry)

    paused = await drive(bridge, agent, "ship it", mode)

    assert ran == []
    [item] = paused.interruptions
    assert (item.tool_name, item.agent.name) == ("deploy", "ops")
    assert agents.calls == [("before", "ops"), ("after", "ops", None)]  # the pause ends it
    stop = events(log)[-1]
    assert (stop["state"], stop["pending_tools"]) == ("interrupted", ["deploy"])
    assert spans.open() == []

    state = paused.to_state()
    state.approve(item)
    resumed = await drive(bridge, agent, state, mode)

    assert ran == ["prod"]
    assert resumed.final_output == "prod is live"
    assert tool_outputs(model) == {"d1": "deployed to prod"}
    assert agents.calls[2:] == [("before", "ops"), ("after", "ops", "prod is live")]
    assert names(log) == [
        "SessionStart",
        "PreToolUse",  # the ask
        "SubagentStop",  # interrupted
        "SessionStart",  # source: resume
        "PreToolUse",  # the hooks judge the call again; the approval settles the ask
        "SubagentStop",  # succeeded
    ]
    assert events(log)[3]["source"] == "resume"
    assert spans.open() == []


async def test_a_rejected_call_tells_the_model(tmp_path: Path, mode: str) -> None:
    registry = write_config(tmp_path, {"PreToolUse": [ASK]})
    ran: list[str] = []
    model = ScriptedModel(
        [
            [function_call("deploy", {"target": "prod"}, call_id="d1")],
            [assistant_message("not deployed")],
        ]
    )
    agent = Agent(name="ops", model=model, tools=[deploy_tool(ran)])
    bridge = OrchestraRunHooks(registry=registry)

    paused = await drive(bridge, agent, "ship it", mode)
    state = paused.to_state()
    state.reject(paused.interruptions[0], rejection_message="not on a Friday")
    resumed = await drive(bridge, agent, state, mode)

    assert ran == []
    assert resumed.final_output == "not deployed"
    assert tool_outputs(model) == {"d1": "not on a Friday"}


@pytest.mark.parametrize(
    ("answer", "ran_after", "told"),
    [
        (True, ["prod"], "deployed to prod"),
        (False, [], "Tool call denied: deploys need a person"),
    ],
    ids=["approve", "refuse"],
)
async def test_the_ask_callback_settles_an_ask(
    tmp_path: Path, answer: bool, ran_after: list[str], told: str
) -> None:
    registry = write_config(tmp_path, {"PreToolUse": [ASK]})
    ran: list[str] = []
    model = deploy_script()
    agent = Agent(name="ops", model=model, tools=[deploy_tool(ran)])
    asked: list[tuple[str, Mapping[str, Any], str | None]] = []

    async def ask(tool: str, tool_input: Mapping[str, Any], reason: str | None) -> bool:
        asked.append((tool, tool_input, reason))
        return answer

    result = await OrchestraRunHooks(registry=registry, ask=ask).run(agent, "ship it")

    assert result.interruptions == []
    assert asked == [("deploy", {"target": "prod"}, "deploys need a person")]
    assert ran == ran_after
    assert tool_outputs(model) == {"d1": told}


async def test_an_ask_callback_answering_none_pauses(tmp_path: Path) -> None:
    registry = write_config(tmp_path, {"PreToolUse": [ASK]})
    ran: list[str] = []
    agent = Agent(name="ops", model=deploy_script(), tools=[deploy_tool(ran)])

    def ask(tool: str, tool_input: Mapping[str, Any], reason: str | None) -> None:
        return None  # not mine to decide: let a person approve it

    result = await OrchestraRunHooks(registry=registry, ask=ask).run(agent, "ship it")

    assert [item.tool_name for item in result.interruptions] == ["deploy"]
    assert ran == []


async def test_the_tools_own_needs_approval_still_pauses(mode: str) -> None:
    ran: list[str] = []

    @function_tool(needs_approval=True)
    def deploy(target: str) -> str:
        """Deploy to a target."""
        ran.append(target)
        return "ok"

    agent = Agent(name="ops", model=deploy_script(), tools=[deploy])
    bridge = OrchestraRunHooks()

    paused = await drive(bridge, agent, "ship it", mode)
    state = paused.to_state()
    state.approve(paused.interruptions[0])
    await drive(bridge, agent, state, mode)

    assert ran == ["prod"]


async def test_a_state_restored_with_unguarded_agents_is_refused(tmp_path: Path) -> None:
    registry = write_config(tmp_path, {"PreToolUse": [ASK]})
    agent = Agent(name="ops", model=deploy_script(), tools=[deploy_tool([])])
    bridge = OrchestraRunHooks(registry=registry)
    paused = await bridge.run(agent, "ship it")
    saved = paused.to_state().to_string()

    restored = await RunState.from_string(agent, saved)  # the user's own, unguarded agent
    with pytest.raises(ValueError, match=r"RunState\.from_string\(bridge\.guard\(agent\)"):
        await bridge.run(agent, restored)

    restored = await RunState.from_string(bridge.guard(agent), saved)
    restored.approve(restored.get_interruptions()[0])
    assert (await bridge.run(agent, restored)).final_output == "prod is live"
