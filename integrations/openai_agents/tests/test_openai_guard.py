"""No way around the guard: every tool call the SDK makes goes through PreToolUse."""

from __future__ import annotations

import copy
import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest
from agents import (
    Agent,
    FunctionTool,
    Handoff,
    Runner,
    UserError,
    WebSearchTool,
    function_tool,
    handoff,
)
from agents.mcp import MCPServerStdio
from agents.testing import ScriptedModel, assistant_message, function_call
from bridge_helpers import drive, events, log_hook, permission, tool_outputs, write_config
from orchestra_openai_agents import OrchestraRunHooks, guard_agent, guard_tool, is_guarded

from orchestra import Fail, SubagentHookContext, SubagentHooks, ToolDenied

pytestmark = pytest.mark.anyio

MCP_SERVER = Path(__file__).with_name("mcp_ops_server.py")
DENY_SHELL = {"PreToolUse": [permission("deny", "no shell today", matcher="run_shell")]}


def shell_tool(ran: list[str]) -> FunctionTool:
    @function_tool
    def run_shell(command: str) -> str:
        """Run a shell command."""
        ran.append(command)
        return "done"

    return run_shell


async def test_an_agent_used_as_a_tool_runs_guarded(tmp_path: Path, mode: str) -> None:
    registry = write_config(tmp_path, DENY_SHELL)
    ran: list[str] = []
    inner = ScriptedModel(
        [
            [function_call("run_shell", {"command": "rm -rf /var/data"}, call_id="s1")],
            [assistant_message("the shell is closed")],
        ]
    )
    ops = Agent(name="ops", model=inner, tools=[shell_tool(ran)])
    outer = ScriptedModel(
        [
            [function_call("ops", {"input": "clean /var/data"}, call_id="t1")],
            [assistant_message("ops could not do it")],
        ]
    )
    triage = Agent(
        name="triage",
        model=outer,
        tools=[ops.as_tool(tool_name="ops", tool_description="Runs operations.")],
    )

    result = await drive(OrchestraRunHooks(registry=registry), triage, "clean up", mode)

    assert ran == []  # the nested agent's tool never ran
    assert tool_outputs(inner) == {"s1": "Tool call denied: no shell today"}
    assert tool_outputs(outer) == {"t1": "the shell is closed"}
    assert result.final_output == "ops could not do it"
    assert not is_guarded(ops.tools[0])  # the user's agents are left as they were
    inner.assert_complete()


async def test_a_handoff_object_leads_to_a_guarded_agent(tmp_path: Path, mode: str) -> None:
    registry = write_config(tmp_path, DENY_SHELL)
    ran: list[str] = []
    model = ScriptedModel(
        [
            [function_call("transfer_to_ops", {}, call_id="h1")],
            [function_call("run_shell", {"command": "reboot"}, call_id="s1")],
            [assistant_message("I may not reboot")],
        ]
    )
    ops = Agent(name="ops", model=model, tools=[shell_tool(ran)])
    triage = Agent(name="triage", model=model, handoffs=[handoff(ops)])

    result = await drive(OrchestraRunHooks(registry=registry), triage, "reboot", mode)

    assert ran == []
    assert tool_outputs(model)["s1"] == "Tool call denied: no shell today"  # told, not raised
    assert result.final_output == "I may not reboot"
    assert result.last_agent.name == "ops"
    assert is_guarded(result.last_agent)


async def test_a_custom_handoff_object_is_guarded_when_invoked(tmp_path: Path) -> None:
    registry = write_config(tmp_path, DENY_SHELL)
    ran: list[str] = []
    model = ScriptedModel(
        [
            [function_call("escalate", {}, call_id="h1")],
            [function_call("run_shell", {"command": "reboot"}, call_id="s1")],
            [assistant_message("no")],
        ]
    )
    ops = Agent(name="ops", model=model, tools=[shell_tool(ran)])

    async def pick(context: Any, arguments: str) -> Agent[Any]:
        return ops  # a hand-built Handoff returns the agent itself

    escalate: Handoff[Any, Any] = Handoff(
        tool_name="escalate",
        tool_description="Escalate to ops.",
        input_json_schema={},
        on_invoke_handoff=pick,
        agent_name="ops",
    )
    triage = Agent(name="triage", model=model, handoffs=[escalate])

    await OrchestraRunHooks(registry=registry).run(triage, "reboot")

    assert ran == []
    assert tool_outputs(model)["s1"] == "Tool call denied: no shell today"


def test_a_hosted_tool_the_hooks_match_is_refused(tmp_path: Path) -> None:
    registry = write_config(tmp_path, {"PreToolUse": [permission("deny", "no")]})  # matches all
    agent = Agent(name="research", tools=[WebSearchTool()])

    with pytest.raises(ValueError, match=r"hosted tool 'web_search'.*hosted_tools='allow'"):
        OrchestraRunHooks(registry=registry).guard(agent)
    with pytest.raises(ValueError, match="hosted tool 'web_search'"):
        guard_agent(Agent(name="boss", handoffs=[agent]), registry)  # reached by a handoff too

    allowed = OrchestraRunHooks(registry=registry, hosted_tools="allow").guard(agent)
    assert isinstance(allowed.tools[0], WebSearchTool)
    narrow = write_config(tmp_path, DENY_SHELL)  # hooks that cannot match web_search
    assert isinstance(OrchestraRunHooks(registry=narrow).guard(agent).tools[0], WebSearchTool)
    with pytest.raises(ValueError, match="hosted_tools must be"):
        OrchestraRunHooks(registry=registry, hosted_tools="ignore")  # type: ignore[arg-type]


async def test_a_hosted_tool_runs_when_allowed(tmp_path: Path, mode: str) -> None:
    registry = write_config(tmp_path, {"PreToolUse": [permission("deny", "no")]})
    model = ScriptedModel([[assistant_message("searched")]])
    agent = Agent(name="research", model=model, tools=[WebSearchTool()])
    bridge = OrchestraRunHooks(registry=registry, hosted_tools="allow")

    result = await drive(bridge, agent, "search", mode)

    assert result.final_output == "searched"
    assert [type(t).__name__ for t in model.calls[0].tools] == ["WebSearchTool"]


async def test_a_registry_guard_inside_a_function_tool_keeps_its_reason(
    tmp_path: Path, mode: str
) -> None:
    registry = write_config(tmp_path, DENY_SHELL)
    ran: list[str] = []

    @function_tool
    @registry.guard("run_shell")
    def run_shell(command: str) -> str:
        """Run a shell command."""
        ran.append(command)
        return "done"

    model = ScriptedModel(
        [
            [function_call("run_shell", {"command": "ls"}, call_id="s1")],
            [assistant_message("denied")],
        ]
    )
    agent = Agent(name="ops", model=model, tools=[run_shell])

    await drive(OrchestraRunHooks(), agent, "ls", mode)  # only the inner guard has hooks

    assert ran == []
    assert tool_outputs(model) == {"s1": "Tool call denied: no shell today"}


async def test_a_deny_can_end_the_run(tmp_path: Path, mode: str) -> None:
    registry = write_config(tmp_path, DENY_SHELL)
    ran: list[str] = []
    model = ScriptedModel([[function_call("run_shell", {"command": "ls"}, call_id="s1")]])
    agent = Agent(name="ops", model=model, tools=[shell_tool(ran)])

    with pytest.raises(ToolDenied, match="no shell today") as caught:
        await drive(OrchestraRunHooks(registry=registry, on_deny="raise"), agent, "ls", mode)

    assert caught.value.tool == "run_shell"
    assert ran == []


@pytest.mark.parametrize(
    "result",
    [
        {"modified_input": {"command": "ls -l"}},
        {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "updatedInput": {"command": "ls -l"},
            }
        },
    ],
    ids=["orchestra-shape", "claude-code-shape"],
)
async def test_a_rewrite_is_what_the_tool_receives(tmp_path: Path, result: dict[str, Any]) -> None:
    log = tmp_path / "events.jsonl"
    script = tmp_path / "rewrite.sh"
    script.write_text(f"#!/bin/sh\ncat > /dev/null\necho {shlex.quote(json.dumps(result))}\n")
    script.chmod(0o755)
    registry = write_config(
        tmp_path,
        {
            "PreToolUse": [{"hooks": [{"type": "command", "command": str(script)}]}],
            "PostToolUse": [log_hook(log)],
        },
    )
    ran: list[str] = []
    model = ScriptedModel(
        [
            [function_call("run_shell", {"command": "ls"}, call_id="s1")],
            [assistant_message("listed")],
        ]
    )
    agent = Agent(name="ops", model=model, tools=[shell_tool(ran)])

    await OrchestraRunHooks(registry=registry).run(agent, "ls")

    assert ran == ["ls -l"]
    [post] = events(log)
    assert (post["tool_input"], post["tool_response"]) == ({"command": "ls -l"}, "done")


@pytest.mark.parametrize(
    ("hook", "refusal"),
    [
        ({"type": "permission", "decision": "deny", "reason": "unguarded no"}, "unguarded no"),
        ({"type": "command", "command": """echo '{"modified_input": {"a": 0}}'"""}, "rewrote"),
    ],
    ids=["deny", "rewrite"],
)
async def test_a_tool_the_guard_could_not_wrap_fails_closed(
    tmp_path: Path, hook: dict[str, Any], refusal: str
) -> None:
    registry = write_config(tmp_path, {"PreToolUse": [{"hooks": [hook]}]})
    ran: list[str] = []
    model = ScriptedModel([[function_call("run_shell", {"command": "ls"}, call_id="s1")]])
    agent = Agent(name="ops", model=model, tools=[shell_tool(ran)])

    # Not guarded (the SDK's runner, not the bridge's): PreToolUse fires from on_tool_start,
    # where the SDK cannot skip the call, so the run ends.
    with pytest.raises(UserError) as caught:
        await Runner.run(agent, "ls", hooks=OrchestraRunHooks(registry=registry))

    assert isinstance(caught.value.__cause__, ToolDenied)
    assert refusal in str(caught.value.__cause__)
    assert ran == []


def test_guard_tool_copies_and_survives_sdk_copies(tmp_path: Path) -> None:
    registry = write_config(tmp_path, {})
    tool = shell_tool([])

    guarded = guard_tool(tool, registry)

    assert isinstance(guarded, FunctionTool)
    assert is_guarded(guarded)
    assert not is_guarded(tool)
    assert is_guarded(copy.copy(guarded))  # the SDK copies tools; the guard goes along
    assert guarded.name == tool.name
    assert guarded.params_json_schema == tool.params_json_schema
    with pytest.raises(TypeError, match="FunctionTool"):
        guard_tool(lambda: None, registry)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="on_deny"):
        guard_tool(tool, registry, on_deny="ignore")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="neither a TaskHooks"):
        guard_tool(tool, registry, hooks=[object()])


def test_guard_agent_follows_handoff_cycles(tmp_path: Path) -> None:
    registry = write_config(tmp_path, {})
    a = Agent(name="a", tools=[shell_tool([])])
    b = Agent(name="b", tools=[shell_tool([])], handoffs=[a])
    a.handoffs = [b]

    ga = guard_agent(a, registry)

    gb = ga.handoffs[0]
    assert isinstance(gb, Agent)
    assert gb.handoffs[0] is ga
    assert [is_guarded(x) for x in (ga, gb, ga.tools[0], gb.tools[0])] == [True] * 4
    assert [is_guarded(x) for x in (a, a.tools[0])] == [False, False]
    assert a.handoffs[0] is b


def test_the_bridge_keeps_its_clones(tmp_path: Path) -> None:
    bridge = OrchestraRunHooks(registry=write_config(tmp_path, {}))
    agent = Agent(name="a", tools=[shell_tool([])])

    first = bridge.guard(agent)

    assert bridge.guard(agent) is first  # a paused run resumes on the same agents
    agent.tools = [*agent.tools, shell_tool([])]
    assert bridge.guard(agent) is not first  # changed: guarded afresh


async def test_the_tools_of_an_mcp_server_are_guarded(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    registry = write_config(
        tmp_path,
        {
            "PreToolUse": [permission("deny", "no shell today", matcher="run_shell")],
            "PostToolUse": [log_hook(log)],
        },
    )
    ran = tmp_path / "ran.txt"
    params = {"command": sys.executable, "args": [str(MCP_SERVER), str(ran)]}
    model = ScriptedModel(
        [
            [function_call("run_shell", {"command": "reboot"}, call_id="s1")],
            [function_call("read_page", {"page": 2}, call_id="f1")],
            [assistant_message("page 2, no reboot")],
        ]
    )
    async with MCPServerStdio(params, name="ops", client_session_timeout_seconds=30) as server:
        agent = Agent(name="ops", model=model, mcp_servers=[server])
        bridge = OrchestraRunHooks(registry=registry)

        result = await bridge.run(agent, "reboot, then read page 2")

    assert result.final_output == "page 2, no reboot"
    assert not ran.exists()  # run_shell never ran on the server
    outputs = tool_outputs(model)
    assert outputs["s1"] == "Tool call denied: no shell today"
    assert "page 2" in outputs["f1"]
    [post] = events(log)
    assert (post["tool_name"], post["tool_input"]) == ("read_page", {"page": 2})


def answering(result: dict[str, Any], matcher: str | None = None) -> dict[str, Any]:
    """A command hook group that answers ``result`` as its JSON output."""
    group: dict[str, Any] = {
        "hooks": [{"type": "command", "command": f"echo {shlex.quote(json.dumps(result))}"}]
    }
    if matcher is not None:
        group["matcher"] = matcher
    return group


async def test_a_mock_output_and_a_rewritten_output(tmp_path: Path, mode: str) -> None:
    registry = write_config(
        tmp_path,
        {
            "PreToolUse": [answering({"output": "pretend it ran"}, matcher="run_shell")],
            "PostToolUse": [answering({"output": "redacted"}, matcher="read_file")],
        },
    )
    ran: list[str] = []

    @function_tool
    def read_file(path: str) -> str:
        """Read a file."""
        return "secret contents"

    model = ScriptedModel(
        [
            [
                function_call("run_shell", {"command": "make"}, call_id="s1"),
                function_call("read_file", {"path": ".env"}, call_id="r1"),
            ],
            [assistant_message("done")],
        ]
    )
    agent = Agent(name="ops", model=model, tools=[shell_tool(ran), read_file])

    await drive(OrchestraRunHooks(registry=registry), agent, "build", mode)

    assert ran == []  # mocked: the tool was not called
    assert tool_outputs(model) == {"s1": "pretend it ran", "r1": "redacted"}


async def test_permission_denied_may_let_the_model_try_again(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    retry = {"hookSpecificOutput": {"hookEventName": "PermissionDenied", "retry": True}}
    registry = write_config(
        tmp_path,
        {**DENY_SHELL, "PermissionDenied": [log_hook(log), answering(retry)]},
    )
    model = ScriptedModel(
        [
            [function_call("run_shell", {"command": "ls"}, call_id="s1")],
            [assistant_message("ok")],
        ]
    )
    agent = Agent(name="ops", model=model, tools=[shell_tool([])])

    await OrchestraRunHooks(registry=registry).run(agent, "ls")

    assert tool_outputs(model) == {
        "s1": "Tool call denied: no shell today (you may try the call again)"
    }
    [denied] = events(log)
    assert (denied["tool_name"], denied["reason"]) == ("run_shell", "no shell today")


DENY_TRANSFER = {
    "PreToolUse": [permission("deny", "ops is on call only", matcher="transfer_to_ops")]
}


@pytest.mark.parametrize("wrap", [lambda a: a, handoff], ids=["agent", "handoff-object"])
async def test_a_denied_handoff_tells_the_model_and_the_run_goes_on(
    tmp_path: Path, mode: str, wrap: Any
) -> None:
    registry = write_config(tmp_path, DENY_TRANSFER)
    ops_model = ScriptedModel([])  # never called: the handoff never happens
    ops = Agent(name="ops", model=ops_model)
    model = ScriptedModel(
        [
            [function_call("transfer_to_ops", {}, call_id="h1")],
            [assistant_message("I will handle it myself")],
        ]
    )
    triage = Agent(name="triage", model=model, handoffs=[wrap(ops)])

    result = await drive(OrchestraRunHooks(registry=registry), triage, "restart prod", mode)

    assert tool_outputs(model) == {"h1": "Tool call denied: ops is on call only"}
    assert result.final_output == "I will handle it myself"
    assert result.last_agent.name == "triage"
    assert ops_model.calls == ()
    model.assert_complete()


async def test_an_allowed_handoff_fires_pre_tool_use_and_hands_off(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    registry = write_config(tmp_path, {"PreToolUse": [log_hook(log)]})
    ops = Agent(name="ops", model=ScriptedModel([[assistant_message("restarted")]]))
    model = ScriptedModel([[function_call("transfer_to_ops", {}, call_id="h1")]])
    triage = Agent(name="triage", model=model, handoffs=[ops])

    result = await OrchestraRunHooks(registry=registry).run(triage, "restart prod")

    assert result.final_output == "restarted"
    assert result.last_agent.name == "ops"
    (pre,) = events(log)
    assert (pre["tool_name"], pre["agent_name"], pre["handoff_to"]) == (
        "transfer_to_ops",
        "triage",
        "ops",
    )


async def test_a_python_fail_at_a_handoff_target_tells_the_model(mode: str) -> None:
    class NoOps(SubagentHooks):
        def before_dispatch(self, ctx: SubagentHookContext) -> Fail | None:
            return Fail("ops is frozen") if ctx.subagent_name == "ops" else None

    ops = Agent(name="ops", model=ScriptedModel([]))
    model = ScriptedModel(
        [
            [function_call("transfer_to_ops", {}, call_id="h1")],
            [assistant_message("ops is frozen, waiting")],
        ]
    )
    triage = Agent(name="triage", model=model, handoffs=[ops])

    result = await drive(OrchestraRunHooks([NoOps()]), triage, "restart prod", mode)

    assert tool_outputs(model) == {"h1": "Tool call denied: ops is frozen"}
    assert result.final_output == "ops is frozen, waiting"


async def test_a_denied_handoff_raises_with_on_deny_raise(tmp_path: Path) -> None:
    registry = write_config(tmp_path, DENY_TRANSFER)
    ops = Agent(name="ops", model=ScriptedModel([]))
    model = ScriptedModel([[function_call("transfer_to_ops", {}, call_id="h1")]])
    triage = Agent(name="triage", model=model, handoffs=[ops])

    with pytest.raises(ToolDenied, match="ops is on call only"):
        await OrchestraRunHooks(registry=registry, on_deny="raise").run(triage, "restart prod")


async def test_a_nested_run_inside_a_function_tool_follows_the_runs_policy(
    tmp_path: Path, mode: str
) -> None:
    """The ambient policy: a bridge made inside a guarded tool, given no registry."""
    registry = write_config(tmp_path, DENY_SHELL)
    ran: list[str] = []
    inner = ScriptedModel(
        [
            [function_call("run_shell", {"command": "rm -rf /"}, call_id="s1")],
            [assistant_message("the shell is closed")],
        ]
    )
    ops = Agent(name="ops", model=inner, tools=[shell_tool(ran)])

    @function_tool
    async def delegate(task: str) -> str:
        """Hand a task to the ops agent."""
        nested = await OrchestraRunHooks().run(ops, task)  # no registry of its own
        return str(nested.final_output)

    outer = ScriptedModel(
        [
            [function_call("delegate", {"task": "wipe"}, call_id="d1")],
            [assistant_message("ops said no")],
        ]
    )
    triage = Agent(name="triage", model=outer, tools=[delegate])
    await drive(OrchestraRunHooks(registry=registry), triage, "clean up", mode)

    assert ran == []
    assert tool_outputs(inner) == {"s1": "Tool call denied: no shell today"}
    assert tool_outputs(outer) == {"d1": "the shell is closed"}
