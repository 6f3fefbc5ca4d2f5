"""The approval round trip in a real LangGraph graph (a ToolNode under ``with_hooks``, and
LangChain v1's ``create_agent`` with ``OrchestraMiddleware``; langchain-core's fake chat
models, an in-memory checkpointer): an ``ask`` is ``interrupt()``; resuming with
``Command(resume=answer)`` approves once, denies, or has an edit judged again."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from orchestra_langgraph import OrchestraMiddleware, with_hooks
from test_langchain_middleware import model
from test_langgraph_tools import tool_graph

import orchestra.skills
from orchestra.bridge import args_sha256
from orchestra.bridge.testing import check_pending_request

DENY_PROD = {"type": "command", "command": "grep -q prod && { echo 'not prod' >&2; exit 2; }; true"}
ASK = {"type": "permission", "decision": "ask", "reason": "a person decides"}
HOW = pytest.mark.parametrize(
    ("kind", "how"),
    [(k, h) for k in ("tool_node", "create_agent") for h in ("invoke", "ainvoke")],
)


class Graph:
    """model -> tools -> model asking ``delete(/data)`` once, with a checkpointer or not."""

    def __init__(self, tmp_path: Path, kind: str, *, checkpointer: bool = True) -> None:
        path = tmp_path / "orchestra.yaml"
        hooks = {"PreToolUse": [{"matcher": "delete", "hooks": [DENY_PROD, ASK]}]}
        path.write_text(json.dumps({"hooks": hooks}))
        self.ran: list[str] = []

        @tool
        def delete(path: str) -> str:
            """Delete a file."""
            self.ran.append(path)
            return f"deleted {path}"

        calls = [{"name": "delete", "args": {"path": "/data"}, "id": "c1", "type": "tool_call"}]
        registry = orchestra.skills.load(path)
        saver = InMemorySaver() if checkpointer else None
        if kind == "create_agent":
            middleware = [OrchestraMiddleware(registry=registry)]
            chat = model(calls)
            self.app = create_agent(chat, tools=[delete], middleware=middleware, checkpointer=saver)
        else:
            self.app = with_hooks(tool_graph(delete, calls), registry=registry).compile(saver)
        self.config: Any = {"configurable": {"thread_id": "t1"}} if checkpointer else {}

    def go(self, given: Any, how: str) -> dict[str, Any]:
        if how == "invoke":
            return dict(self.app.invoke(given, self.config))
        return dict(asyncio.run(self.app.ainvoke(given, self.config)))

    def pending(self, how: str) -> dict[str, Any]:
        out = self.go({"messages": [HumanMessage("clean up")]}, how)
        (paused,) = out["__interrupt__"]
        assert self.ran == []
        return dict(paused.value)

    def answer(self, answer: Any, how: str) -> dict[str, Any]:
        return self.go(Command(resume=answer), how)


def read(out: dict[str, Any]) -> list[str]:
    return [str(m.content) for m in out["messages"] if isinstance(m, ToolMessage)]


@HOW
def test_an_ask_is_an_interrupt_with_the_one_request_shape(
    tmp_path: Path, kind: str, how: str
) -> None:
    pending = Graph(tmp_path, kind).pending(how)
    check_pending_request(
        pending, tool_name="delete", tool_input={"path": "/data"}, reason="a person decides"
    )


@HOW
def test_approve_runs_the_tool_exactly_once(tmp_path: Path, kind: str, how: str) -> None:
    graph = Graph(tmp_path, kind)
    digest = graph.pending(how)["args_sha256"]
    out = graph.answer({"decision": "approve", "args_sha256": digest}, how)
    assert graph.ran == ["/data"]
    assert read(out) == ["deleted /data"]
    assert "__interrupt__" not in out


@HOW
def test_deny_tells_the_model(tmp_path: Path, kind: str, how: str) -> None:
    graph = Graph(tmp_path, kind)
    graph.pending(how)
    out = graph.answer({"decision": "deny", "reason": "keep /data"}, how)
    assert graph.ran == []
    assert read(out) == ["keep /data"]


@HOW
def test_an_edit_is_judged_again(tmp_path: Path, kind: str, how: str) -> None:
    graph = Graph(tmp_path, kind)
    graph.pending(how)
    out = graph.answer({"decision": "edit", "tool_input": {"path": "/prod"}}, how)
    assert graph.ran == []
    assert len(read(out)) == 1
    assert "not prod" in read(out)[0]

    again = Graph(tmp_path, kind)
    again.pending(how)
    paused = again.answer({"decision": "edit", "tool_input": {"path": "/qa"}}, how)
    (asked,) = paused["__interrupt__"]  # the ask guard asks about the new input
    assert asked.value["args_sha256"] == args_sha256({"path": "/qa"})
    out = again.answer({"decision": "approve"}, how)
    assert again.ran == ["/qa"]
    assert read(out) == ["deleted /qa"]


@HOW
def test_an_answer_for_another_call_is_refused(tmp_path: Path, kind: str, how: str) -> None:
    graph = Graph(tmp_path, kind)
    graph.pending(how)
    other = args_sha256({"path": "/prod"})
    out = graph.answer({"decision": "approve", "args_sha256": other}, how)
    assert graph.ran == []
    (message,) = read(out)
    assert "is not the pending call's" in message


@HOW
def test_without_a_checkpointer_an_ask_is_refused(tmp_path: Path, kind: str, how: str) -> None:
    graph = Graph(tmp_path, kind, checkpointer=False)
    out = graph.go({"messages": [HumanMessage("clean up")]}, how)
    assert graph.ran == []
    assert read(out) == ["a person decides"]
