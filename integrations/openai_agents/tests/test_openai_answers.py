"""The approval round trip in the OpenAI Agents SDK (its ScriptedModel): an ``ask`` is an
interruption with the one pending request; ``answer_approval`` approves once, denies,
has an edit judged again, and refuses an answer for another call."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from agents import Agent, FunctionTool, function_tool
from agents.testing import ScriptedModel, assistant_message, function_call
from bridge_helpers import drive, tool_outputs, write_config
from orchestra_openai_agents import OrchestraRunHooks, answer_approval, pending_request

from orchestra.bridge import args_sha256
from orchestra.bridge.testing import check_pending_request

pytestmark = pytest.mark.anyio

DENY_PROD = {"type": "command", "command": "grep -q prod && { echo 'not prod' >&2; exit 2; }; true"}
ASK = {"type": "permission", "decision": "ask", "reason": "a person decides"}


class Ops:
    """An agent whose scripted model calls delete(/data) once, then says "done"."""

    def __init__(self, tmp_path: Path) -> None:
        hooks = {"PreToolUse": [{"matcher": "delete", "hooks": [DENY_PROD, ASK]}]}
        self.bridge = OrchestraRunHooks(registry=write_config(tmp_path, hooks))
        self.ran: list[str] = []
        self.model = ScriptedModel(
            [
                [function_call("delete", {"path": "/data"}, call_id="c1")],
                [assistant_message("done")],
            ]
        )
        self.agent = Agent(name="ops", model=self.model, tools=[self.tool()])

    def tool(self) -> FunctionTool:
        @function_tool
        def delete(path: str) -> str:
            """Delete a file."""
            self.ran.append(path)
            return f"deleted {path}"

        return delete

    async def pause(self, mode: str) -> tuple[Any, Any]:
        paused = await drive(self.bridge, self.agent, "clean up", mode)
        (item,) = paused.interruptions
        assert self.ran == []
        return paused.to_state(), item

    async def answer(self, answer: dict[str, Any], mode: str) -> str:
        state, item = await self.pause(mode)
        answer_approval(self.bridge, state, item, answer)
        resumed = await drive(self.bridge, self.agent, state, mode)
        assert resumed.interruptions == []
        return str(tool_outputs(self.model)["c1"])


async def test_an_ask_is_an_interruption_with_the_one_request_shape(
    tmp_path: Path, mode: str
) -> None:
    ops = Ops(tmp_path)
    _, item = await ops.pause(mode)
    pending = pending_request(ops.bridge, item)
    check_pending_request(
        pending, tool_name="delete", tool_input={"path": "/data"}, reason="a person decides"
    )


async def test_approve_runs_the_tool_exactly_once(tmp_path: Path, mode: str) -> None:
    ops = Ops(tmp_path)
    digest = args_sha256({"path": "/data"})
    told = await ops.answer({"decision": "approve", "args_sha256": digest}, mode)
    assert ops.ran == ["/data"]
    assert told == "deleted /data"


async def test_deny_tells_the_model(tmp_path: Path, mode: str) -> None:
    ops = Ops(tmp_path)
    told = await ops.answer({"decision": "deny", "reason": "keep /data"}, mode)
    assert ops.ran == []
    assert told == "Tool call denied: keep /data"


async def test_an_edit_is_judged_again(tmp_path: Path, mode: str) -> None:
    ops = Ops(tmp_path)
    told = await ops.answer({"decision": "edit", "tool_input": {"path": "/prod"}}, mode)
    assert ops.ran == []
    assert told.startswith("Tool call denied: ")
    assert "not prod" in told
    # an edit the deny guard lets through meets the ask guard again: the SDK cannot pause a
    # resumed call twice, so it is refused with the ask's reason
    again = Ops(tmp_path)
    told = await again.answer({"decision": "edit", "tool_input": {"path": "/qa"}}, mode)
    assert again.ran == []
    assert told == "Tool call denied: a person decides"


async def test_an_answer_for_another_call_is_refused(tmp_path: Path, mode: str) -> None:
    ops = Ops(tmp_path)
    other = args_sha256({"path": "/prod"})
    told = await ops.answer({"decision": "approve", "args_sha256": other}, mode)
    assert ops.ran == []
    assert "is not the pending call's" in told


async def test_a_bad_answer_is_a_clear_error_and_the_call_stays_paused(
    tmp_path: Path, mode: str
) -> None:
    ops = Ops(tmp_path)
    state, item = await ops.pause(mode)
    with pytest.raises(ValueError, match="unknown decision 'ok'"):
        answer_approval(ops.bridge, state, item, {"decision": "ok"})
    answer_approval(ops.bridge, state, item, {"decision": "approve"})
    await drive(ops.bridge, ops.agent, state, mode)
    assert ops.ran == ["/data"]
    with pytest.raises(ValueError, match="no pending request for tool call 'c1'"):
        pending_request(ops.bridge, item)
