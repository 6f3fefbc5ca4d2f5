"""guard_tools: tools guarded wherever they are called (LangGraph's quickstart tool node)."""

from __future__ import annotations

import asyncio
import json
import shlex
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import BaseTool, tool
from langgraph.graph import END, START, MessagesState, StateGraph
from orchestra_langgraph import GuardedTool, guard_tools, with_hooks
from test_langgraph_tools import DENY_ROOT, call, command, write_config

import orchestra

HOW = pytest.mark.parametrize("how", ["invoke", "ainvoke"])


def make_delete(ran: list[str]) -> BaseTool:
    @tool
    def delete(path: str) -> str:
        """Delete a file."""
        ran.append(path)
        return f"deleted {path}"

    return delete


def quickstart(tools: list[BaseTool], calls: list[dict[str, Any]], read: list[Any]) -> Any:
    """LangGraph's quickstart agent: a model node and a hand-written tool node."""
    model = GenericFakeChatModel(
        messages=iter([AIMessage(content="", tool_calls=calls), AIMessage(content="done")])
    )
    tools_by_name = {t.name: t for t in tools}

    def llm_call(state: MessagesState) -> dict[str, Any]:
        read.append(list(state["messages"]))  # what the model reads
        return {"messages": [model.invoke(state["messages"])]}

    def tool_node(state: MessagesState) -> dict[str, Any]:
        result = []
        for tool_call in asked(state):
            observation = tools_by_name[tool_call["name"]].invoke(tool_call["args"])
            result.append(ToolMessage(content=observation, tool_call_id=tool_call["id"]))
        return {"messages": result}

    async def atool_node(state: MessagesState) -> dict[str, Any]:
        result = []
        for tool_call in asked(state):
            observation = await tools_by_name[tool_call["name"]].ainvoke(tool_call["args"])
            result.append(ToolMessage(content=observation, tool_call_id=tool_call["id"]))
        return {"messages": result}

    def should_continue(state: MessagesState) -> str:
        last = state["messages"][-1]
        return "tool_node" if isinstance(last, AIMessage) and last.tool_calls else END

    builder = StateGraph(MessagesState)
    builder.add_node("llm_call", llm_call)
    builder.add_node("tool_node", RunnableLambda(tool_node, atool_node))
    builder.add_edge(START, "llm_call")
    builder.add_conditional_edges("llm_call", should_continue, ["tool_node", END])
    builder.add_edge("tool_node", "llm_call")
    return builder


def asked(state: MessagesState) -> list[Any]:
    last = state["messages"][-1]
    assert isinstance(last, AIMessage)
    return list(last.tool_calls)


def run(app: Any, how: str) -> list[BaseMessage]:
    start = {"messages": [HumanMessage("clean up")]}
    if how == "invoke":
        return list(app.invoke(start)["messages"])
    return list(asyncio.run(app.ainvoke(start))["messages"])


def last_read(read: list[list[Any]]) -> ToolMessage:
    message = read[-1][-1]
    assert isinstance(message, ToolMessage)
    return message


@HOW
def test_a_denied_call_in_a_hand_written_tool_node_is_what_the_model_reads(
    tmp_path: Path, how: str
) -> None:
    ran: list[str] = []
    read: list[list[Any]] = []
    tools = guard_tools([make_delete(ran)], registry=write_config(tmp_path, DENY_ROOT))
    run(quickstart(tools, [call("/")], read).compile(), how)
    assert ran == []
    assert last_read(read).content == "never delete /"


@HOW
def test_an_allowed_call_runs_once_with_the_rewritten_input(tmp_path: Path, how: str) -> None:
    ran: list[str] = []
    read: list[list[Any]] = []
    rewrite = json.dumps({"modified_input": {"path": "/tmp/safe"}})
    registry = write_config(
        tmp_path, {"PreToolUse": [command("delete", f"echo {shlex.quote(rewrite)}")]}
    )
    tools = guard_tools([make_delete(ran)], registry=registry)
    run(quickstart(tools, [call("/etc")], read).compile(), how)
    assert ran == ["/tmp/safe"]
    assert last_read(read).content == "deleted /tmp/safe"


@HOW
def test_a_guarded_tool_follows_the_policy_of_the_hooked_graph_it_runs_in(
    tmp_path: Path, how: str
) -> None:
    """The ambient policy: tools guarded without a registry, in a node of a hooked graph."""
    ran: list[str] = []
    read: list[list[Any]] = []
    tools = guard_tools([make_delete(ran)])  # no registry of its own
    builder = quickstart(tools, [call("/")], read)
    run(with_hooks(builder, registry=write_config(tmp_path, DENY_ROOT)).compile(), how)
    assert ran == []
    assert last_read(read).content == "never delete /"
    ran.clear()
    unguarded = guard_tools([make_delete(ran)])  # outside any guarded work: runs as is
    assert unguarded[0].invoke({"path": "/"}) == "deleted /"
    assert ran == ["/"]


def test_a_whole_tool_call_is_answered_with_an_error_tool_message(tmp_path: Path) -> None:
    ran: list[str] = []
    [guarded] = guard_tools([make_delete(ran)], registry=write_config(tmp_path, DENY_ROOT))
    message = guarded.invoke(call("/", "c7"))
    assert isinstance(message, ToolMessage)
    assert (message.content, message.status, message.tool_call_id) == (
        "never delete /",
        "error",
        "c7",
    )
    assert ran == []
    ok = guard_tools([make_delete(ran)])[0].invoke(call("/a", "c8"))
    assert isinstance(ok, ToolMessage)
    assert (ok.content, ok.tool_call_id, ran) == ("deleted /a", "c8", ["/a"])


class SkipTagged(orchestra.TaskHooks):
    def before_execute(self, ctx: orchestra.TaskHookContext) -> orchestra.Skip | None:
        if "destructive" in ctx.task.metadata.get("tags", ()):
            return orchestra.Skip(reason=f"{ctx.task.id} is destructive")
        return None


@HOW
def test_task_hooks_decide_around_each_call_with_the_tools_tags(tmp_path: Path, how: str) -> None:
    ran: list[str] = []
    read: list[list[Any]] = []
    delete = make_delete(ran)
    delete.tags = ["destructive"]
    tools = guard_tools([delete], hooks=[SkipTagged()])
    run(quickstart(tools, [call("/")], read).compile(), how)
    assert ran == []
    assert last_read(read).content == "skipped by SkipTagged.before_execute: delete is destructive"


def test_guard_tools_refuses_what_is_not_a_tool() -> None:
    with pytest.raises(TypeError, match="LangChain tools"):
        guard_tools([print])  # type: ignore[list-item]


def test_a_guarded_tool_keeps_the_name_and_schema_the_model_is_shown(tmp_path: Path) -> None:
    delete = make_delete([])
    [guarded] = guard_tools([delete], registry=write_config(tmp_path, {}))
    assert (guarded.name, guarded.description) == (delete.name, delete.description)
    assert guarded.args == delete.args
    [twice] = guard_tools([guarded])
    assert isinstance(twice, GuardedTool)
    assert twice.inner is delete  # guarding twice wraps once
