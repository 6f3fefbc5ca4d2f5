"""lobehub's ``identifier/apiName`` matchers (seed 004) on an MCP server's tools.

The SDK names the MCP server each tool comes from (``MCPServerStdio(name="ops")``): that
is the identifier, so a hook matching ``ops/run_shell`` refuses that server's
``run_shell``; the server is a real one over stdio, the model the SDK's ``ScriptedModel``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from agents import Agent
from agents.mcp import MCPServerStdio
from agents.testing import ScriptedModel, assistant_message, function_call
from bridge_helpers import events, log_hook, permission, tool_outputs, write_config
from orchestra_openai_agents import OrchestraRunHooks

pytestmark = pytest.mark.anyio

MCP_SERVER = Path(__file__).with_name("mcp_ops_server.py")


@pytest.mark.parametrize(("server_name", "refused"), [("ops", True), ("lab", False)])
async def test_an_mcp_server_name_is_the_identifier(
    tmp_path: Path, server_name: str, refused: bool
) -> None:
    log = tmp_path / "events.jsonl"
    registry = write_config(
        tmp_path,
        {
            "PreToolUse": [
                log_hook(log, matcher="ops/run_shell"),
                permission("deny", "no shell today", matcher="ops/run_shell"),
            ]
        },
    )
    ran = tmp_path / "ran.txt"
    params = {"command": sys.executable, "args": [str(MCP_SERVER), str(ran)]}
    model = ScriptedModel(
        [
            [function_call("run_shell", {"command": "reboot"}, call_id="s1")],
            [assistant_message("done")],
        ]
    )
    async with MCPServerStdio(
        params, name=server_name, client_session_timeout_seconds=30
    ) as server:
        agent = Agent(name="ops", model=model, mcp_servers=[server])
        await OrchestraRunHooks(registry=registry).run(agent, "reboot")

    if refused:
        assert not ran.exists()  # run_shell never ran on the server
        assert tool_outputs(model)["s1"] == "Tool call denied: no shell today"
        [event] = events(log)
        assert (event["tool_identifier"], event["tool_name"]) == ("ops", "run_shell")
    else:
        assert ran.read_text() == "reboot\n"
        assert events(log) == []
