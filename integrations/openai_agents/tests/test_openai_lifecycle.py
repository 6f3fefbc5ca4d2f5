"""The run's lifecycle: agents, handoffs, tools and the session-level events, in order."""

from __future__ import annotations

import asyncio
import logging
import warnings
from pathlib import Path
from typing import Any

import anyio
import pytest
from agents import Agent, FunctionTool, RunHooks, Runner, function_tool
from agents.testing import ScriptedModel, assistant_message, function_call
from bridge_helpers import drive, events, log_hook, names, permission, write_config
from orchestra_openai_agents import OrchestraRunHooks

from orchestra import DispatchError, SubagentHookContext, SubagentHooks, SubagentResult

pytestmark = pytest.mark.anyio


class Agents(SubagentHooks):
    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def before_dispatch(self, ctx: SubagentHookContext) -> None:
        self.calls.append(
            ("before", ctx.subagent_name, ctx.parent_agent, ctx.delegated_from, ctx.task)
        )

    def after_dispatch(self, ctx: SubagentHookContext, result: SubagentResult) -> None:
        self.calls.append(("after", ctx.subagent_name, result.output))


def adder(ran: list[tuple[int, int]]) -> FunctionTool:
    @function_tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        ran.append((a, b))
        return a + b

    return add


def triage_and_math(
    model: ScriptedModel, ran: list[tuple[int, int]]
) -> tuple[Agent[Any], Agent[Any]]:
    math = Agent(name="math", instructions="Answer.", model=model)
    triage = Agent(
        name="triage", instructions="Route.", model=model, tools=[adder(ran)], handoffs=[math]
    )
    return triage, math


EVERY_EVENT = (
    "SessionStart",
    "UserPromptSubmit",
    "SubagentStart",
    "SubagentStop",
    "PreToolUse",
    "PostToolUse",
    "Stop",
    "SessionEnd",
)


async def test_agents_handoffs_and_tools_fire_hooks_in_order(tmp_path: Path, mode: str) -> None:
    log = tmp_path / "events.jsonl"
    registry = write_config(tmp_path, {event: [log_hook(log)] for event in EVERY_EVENT})
    ran: list[tuple[int, int]] = []
    model = ScriptedModel(
        [
            [function_call("add", {"a": 1, "b": 2}, call_id="c1")],
            [function_call("transfer_to_math", {}, call_id="c2")],
            [assistant_message("the sum is 3")],
        ]
    )
    triage, _ = triage_and_math(model, ran)
    agents = Agents()
    bridge = OrchestraRunHooks([agents], registry=registry, parent="caller")

    result = await drive(bridge, triage, "what is 1 + 2?", mode)

    assert result.final_output == "the sum is 3"
    assert ran == [(1, 2)]
    assert agents.calls == [  # math is asked at the handoff, before triage hands off
        ("before", "triage", "caller", (), "what is 1 + 2?"),
        ("before", "math", "triage", ("triage",), "what is 1 + 2?"),
        ("after", "triage", None),
        ("after", "math", "the sum is 3"),
    ]
    assert names(log) == [
        "SessionStart",
        "UserPromptSubmit",
        "SubagentStart",
        "PreToolUse",
        "PostToolUse",
        "PreToolUse",  # transfer_to_math: a handoff is a tool call the guard sees
        "SubagentStart",
        "SubagentStop",
        "SubagentStop",
        "Stop",
        "SessionEnd",
    ]
    by_name = {e["hook_event_name"]: e for e in events(log)}
    assert by_name["SessionStart"]["source"] == "startup"
    assert by_name["UserPromptSubmit"]["prompt"] == "what is 1 + 2?"
    pre, transfer = (e for e in events(log) if e["hook_event_name"] == "PreToolUse")
    assert (transfer["tool_name"], transfer["handoff_to"]) == ("transfer_to_math", "math")
    assert transfer["agent_name"] == "triage"
    assert (pre["tool_name"], pre["tool_input"]) == ("add", {"a": 1, "b": 2})
    assert pre["tool_use_id"] == "c1"
    assert pre["agent_name"] == "triage"
    assert by_name["PostToolUse"]["tool_response"] == 3
    first_stop = events(log)[7]
    assert (first_stop["state"], first_stop["handoff_to"]) == ("handoff", "math")
    assert by_name["Stop"]["last_assistant_message"] == "the sum is 3"
    assert by_name["SessionEnd"]["reason"] == "completed"
    # every field, against the hooks reference: the differences are the conformance page's
    common = {"session_id", "cwd", "hook_event_name", "timestamp", "event", "agent_name"}
    tool = common | {"tool_name", "tool_input", "tool_use_id"}
    dispatch = common | {"agent_type", "parent_agent", "execution_mode", "task", "attempt"}
    ended = {"stop_hook_active", "last_assistant_message", "output", "state", "error"}
    fields = {
        "SessionStart": common | {"source"},
        "UserPromptSubmit": common | {"prompt"},
        "SubagentStart": dispatch | {"delegated_from"},
        "PreToolUse": tool,
        "PostToolUse": tool | {"tool_response"},
        "SubagentStop": dispatch | {"delegated_from", "error_type"} | ended,
        "Stop": common | {"stop_hook_active", "last_assistant_message", "output"},
        "SessionEnd": common | {"reason"},
    }
    for event in events(log):
        name = event["hook_event_name"]
        handoff = {"handoff_to"} if name in ("PreToolUse", "SubagentStop") else set()
        assert set(event) - handoff == fields[name], name
    assert transfer.keys() - pre.keys() == {"handoff_to"}


async def test_a_prompt_can_be_refused(tmp_path: Path, mode: str) -> None:
    registry = write_config(
        tmp_path, {"UserPromptSubmit": [permission("deny", "no secrets in prompts")]}
    )
    model = ScriptedModel([[assistant_message("never said")]])
    agent = Agent(name="solo", model=model)

    with pytest.raises(DispatchError, match="no secrets in prompts"):
        await drive(OrchestraRunHooks(registry=registry), agent, "the password is x", mode)

    assert model.calls == ()


async def test_context_from_session_start_and_the_prompt_reaches_the_model(
    tmp_path: Path, mode: str
) -> None:
    registry = write_config(
        tmp_path,
        {
            "SessionStart": [{"hooks": [{"type": "prompt", "prompt": "Today is Friday."}]}],
            "UserPromptSubmit": [{"hooks": [{"type": "prompt", "prompt": "Answer briefly."}]}],
        },
    )
    model = ScriptedModel([[assistant_message("ok")]])
    agent = Agent(name="solo", model=model)

    await drive(OrchestraRunHooks(registry=registry), agent, "what day is it?", mode)

    sent = model.calls[0].input
    assert isinstance(sent, list)
    assert [(item["role"], item["content"]) for item in sent] == [
        ("developer", "Today is Friday."),
        ("developer", "Answer briefly."),
        ("user", "what day is it?"),
    ]


STOP_UNTIL_TESTED = """
import json, sys
event = json.load(sys.stdin)
if not event["stop_hook_active"]:
    print("run the tests before you stop", file=sys.stderr)
    sys.exit(2)
"""


async def test_a_stop_block_continues_the_run(tmp_path: Path) -> None:
    script = tmp_path / "stop.py"
    script.write_text(STOP_UNTIL_TESTED)
    registry = write_config(
        tmp_path, {"Stop": [{"hooks": [{"type": "command", "command": f"python3 {script}"}]}]}
    )
    model = ScriptedModel([[assistant_message("done")], [assistant_message("tests pass")]])
    agent = Agent(name="dev", model=model)

    result = await OrchestraRunHooks(registry=registry).run(agent, "fix the bug")

    assert result.final_output == "tests pass"
    sent = model.calls[1].input
    assert isinstance(sent, list)
    assert sent[-1] == {"role": "user", "content": "run the tests before you stop"}


async def test_a_stop_block_continues_the_run_up_to_the_attempt_cap(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    registry = write_config(tmp_path, {"Stop": [permission("deny", "keep going")]})
    model = ScriptedModel([[assistant_message(f"done {n}")] for n in (1, 2, 3, 4)])
    agent = Agent(name="dev", model=model)

    with caplog.at_level(logging.WARNING, "orchestra"):
        result = await OrchestraRunHooks(registry=registry, max_attempts=3).run(agent, "fix it")

    assert result.final_output == "done 3"  # three segments, the last one's output
    assert len(model.calls) == 3
    assert "a Stop block (keep going) was not carried out: " in caplog.text
    assert "the run was continued 2 time(s) already (max_attempts)" in caplog.text


async def test_a_stop_block_is_not_carried_out_in_a_stream(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    registry = write_config(tmp_path, {"Stop": [permission("deny", "keep going")]})
    model = ScriptedModel([[assistant_message("done")]])
    agent = Agent(name="dev", model=model)

    with caplog.at_level(logging.WARNING, "orchestra"):
        result = await drive(OrchestraRunHooks(registry=registry), agent, "fix it", "streamed")

    assert result.final_output == "done"
    assert "a Stop block (keep going) was not carried out: the run was streamed" in caplog.text


class Mine(RunHooks[Any]):
    def __init__(self) -> None:
        self.seen: list[str] = []

    async def on_agent_start(self, context: Any, agent: Any) -> None:
        self.seen.append(f"start {agent.name}")

    async def on_tool_end(self, context: Any, agent: Any, tool: Any, result: Any) -> None:
        self.seen.append(f"tool {tool.name} -> {result}")

    async def on_agent_end(self, context: Any, agent: Any, output: Any) -> None:
        self.seen.append(f"end {agent.name}")


async def test_your_own_run_hooks_run_beside_the_bridge(mode: str) -> None:
    ran: list[tuple[int, int]] = []
    model = ScriptedModel(
        [[function_call("add", {"a": 2, "b": 2}, call_id="c1")], [assistant_message("4")]]
    )
    agent = Agent(name="calc", model=model, tools=[adder(ran)])
    mine, agents = Mine(), Agents()

    await drive(OrchestraRunHooks([agents]), agent, "2 + 2?", mode, hooks=mine)

    assert mine.seen == ["start calc", "tool add -> 4", "end calc"]
    assert [c[0] for c in agents.calls] == ["before", "after"]


async def test_the_hooks_work_with_the_sdk_runner_directly(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    registry = write_config(tmp_path, {"PreToolUse": [log_hook(log)]})
    ran: list[tuple[int, int]] = []
    model = ScriptedModel(
        [[function_call("add", {"a": 2, "b": 2}, call_id="c1")], [assistant_message("4")]]
    )
    agent = Agent(name="calc", model=model, tools=[adder(ran)])
    agents = Agents()
    bridge = OrchestraRunHooks([agents], registry=registry)

    result = await Runner.run(bridge.guard(agent), "2 + 2?", hooks=bridge)

    assert result.final_output == "4"
    assert ran == [(2, 2)]
    assert [e["tool_name"] for e in events(log)] == ["add"]  # fired once: the tool is guarded
    assert [c[0] for c in agents.calls] == ["before", "after"]


async def test_one_hooks_object_serves_concurrent_runs() -> None:
    agents = Agents()
    bridge = OrchestraRunHooks([agents])
    first = Agent(name="first", model=ScriptedModel([[assistant_message("1")]]))
    second = Agent(name="second", model=ScriptedModel([[assistant_message("2")]]))
    outputs: dict[str, Any] = {}

    async def run(agent: Agent[Any]) -> None:
        outputs[agent.name] = (await bridge.run(agent, f"to {agent.name}")).final_output

    async with anyio.create_task_group() as tg:
        tg.start_soon(run, first)
        tg.start_soon(run, second)

    assert outputs == {"first": "1", "second": "2"}
    assert sorted(c for c in agents.calls if c[0] == "after") == [
        ("after", "first", "1"),
        ("after", "second", "2"),
    ]
    assert sorted(c[4] for c in agents.calls if c[0] == "before") == ["to first", "to second"]


def test_run_sync(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    registry = write_config(tmp_path, {"SessionEnd": [log_hook(log)]})
    model = ScriptedModel([[assistant_message("hello")]])
    agent = Agent(name="solo", model=model)

    try:
        result = OrchestraRunHooks(registry=registry).run_sync(agent, "hi")
    finally:  # as Runner.run_sync, it leaves the thread's default loop open for reuse
        policy = asyncio.get_event_loop_policy()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            policy.get_event_loop().close()
        policy.set_event_loop(None)

    assert result.final_output == "hello"
    assert names(log) == ["SessionEnd"]


async def test_run_sync_refuses_a_running_loop() -> None:
    agent = Agent(name="solo", model=ScriptedModel([]))

    with pytest.raises(RuntimeError, match=r"use await bridge\.run"):
        OrchestraRunHooks().run_sync(agent, "hi")
