"""The approval round trip in a real pydantic-ai agent (FunctionModel): pause, approve
once, deny, an edit judged again, an answer for another call refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from orchestra_pydantic_ai import OrchestraCapability, answer_deferred
from pydantic_ai import Agent, DeferredToolRequests
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

import orchestra.skills
from orchestra.bridge import args_sha256
from orchestra.bridge.testing import check_pending_request

pytestmark = pytest.mark.anyio

DENY_PROD = {"type": "command", "command": "grep -q prod && { echo 'not prod' >&2; exit 2; }; true"}
ASK = {"type": "permission", "decision": "ask", "reason": "a person decides"}


def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Call delete(/data) once, then say what the tool returned."""
    returns = [
        str(p.content)
        for m in messages
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, ToolReturnPart)
    ]
    if returns:
        return ModelResponse(parts=[TextPart(" | ".join(returns))])
    return ModelResponse(parts=[ToolCallPart("delete", {"path": "/data"}, tool_call_id="c1")])


def agent(tmp_path: Path, ran: list[str]) -> Agent[None, Any]:
    path = tmp_path / "orchestra.yaml"
    hooks = {"PreToolUse": [{"matcher": "delete", "hooks": [DENY_PROD, ASK]}]}
    path.write_text(json.dumps({"hooks": hooks}))
    capability = OrchestraCapability(registry=orchestra.skills.load(path))
    ops: Agent[None, Any] = Agent(
        FunctionModel(model), capabilities=[capability], output_type=[str, DeferredToolRequests]
    )

    @ops.tool_plain
    def delete(path: str) -> str:
        """Delete a file."""
        ran.append(path)
        return f"deleted {path}"

    return ops


async def paused(ops: Agent[None, Any], ran: list[str]) -> Any:
    first = await ops.run("clean")
    assert isinstance(first.output, DeferredToolRequests)
    assert ran == []
    return first


async def test_the_pending_request_is_the_one_shape(tmp_path: Path) -> None:
    ran: list[str] = []
    first = await paused(agent(tmp_path, ran), ran)
    pending = first.output.metadata["c1"]
    check_pending_request(
        pending, tool_name="delete", tool_input={"path": "/data"}, reason="a person decides"
    )


async def test_approve_runs_the_tool_exactly_once(tmp_path: Path) -> None:
    ran: list[str] = []
    ops = agent(tmp_path, ran)
    first = await paused(ops, ran)
    digest = first.output.metadata["c1"]["args_sha256"]
    results = answer_deferred(first.output, {"c1": {"decision": "approve", "args_sha256": digest}})
    second = await ops.run(message_history=first.all_messages(), deferred_tool_results=results)
    assert ran == ["/data"]
    assert second.output == "deleted /data"


async def test_deny_tells_the_model(tmp_path: Path) -> None:
    ran: list[str] = []
    ops = agent(tmp_path, ran)
    first = await paused(ops, ran)
    results = answer_deferred(first.output, {"c1": {"decision": "deny", "reason": "keep /data"}})
    second = await ops.run(message_history=first.all_messages(), deferred_tool_results=results)
    assert ran == []
    assert second.output == "keep /data"


async def test_an_edit_is_judged_again(tmp_path: Path) -> None:
    ran: list[str] = []
    ops = agent(tmp_path, ran)
    first = await paused(ops, ran)
    to_prod = {"decision": "edit", "tool_input": {"path": "/prod"}}
    second = await ops.run(
        message_history=first.all_messages(),
        deferred_tool_results=answer_deferred(first.output, {"c1": to_prod}),
    )
    assert ran == []
    assert "not prod" in second.output
    # an edit the deny guard lets through meets the ask guard again: paused anew
    to_qa = {"decision": "edit", "tool_input": {"path": "/qa"}}
    third = await ops.run(
        message_history=first.all_messages(),
        deferred_tool_results=answer_deferred(first.output, {"c1": to_qa}),
    )
    assert ran == []
    assert isinstance(third.output, DeferredToolRequests)
    assert third.output.metadata["c1"]["args_sha256"] == args_sha256({"path": "/qa"})


async def test_an_answer_for_another_call_is_refused(tmp_path: Path) -> None:
    ran: list[str] = []
    ops = agent(tmp_path, ran)
    first = await paused(ops, ran)
    other = args_sha256({"path": "/prod"})
    results = answer_deferred(first.output, {"c1": {"decision": "approve", "args_sha256": other}})
    second = await ops.run(message_history=first.all_messages(), deferred_tool_results=results)
    assert ran == []
    assert "is not the pending call's" in second.output
    with pytest.raises(ValueError, match="no pending request for tool call 'c9'"):
        answer_deferred(first.output, {"c9": {"decision": "approve"}})
