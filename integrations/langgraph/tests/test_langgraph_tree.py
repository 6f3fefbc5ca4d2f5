"""Tools called anywhere in a hooked run: a plain ToolNode or graph inside a node function.

LangGraph's own ``test_subgraph_streaming_sync`` (tests/test_pregel.py) streams a compiled
subgraph from inside a node function, ``compiled_subgraph.stream(msgs, config,
stream_mode="messages")``; hooked with ``with_hooks``, none of the subgraph's calls went
through the hooks (0 events). Here the subgraph's model asks for a tool its plain
``ToolNode`` runs, as in that test's words (``call_model_node``, ``parent_node``,
``SomeCustomState``), and the hooked parent's policy judges the call.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, NotRequired, TypedDict

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langchain_core.tools import BaseTool, tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from orchestra_langgraph import guard_tools, with_hooks
from test_langgraph_guard_tools import make_delete
from test_langgraph_tools import command, log_to, logged, write_config

import orchestra.skills

HOW = pytest.mark.parametrize("how", ["invoke", "ainvoke"])
REASON = "deleting is not allowed"
DENY_DELETE = {
    "matcher": "delete",
    "hooks": [{"type": "permission", "decision": "deny", "reason": REASON}],
}


def deny(tmp_path: Path, *more: dict[str, Any]) -> orchestra.skills.HookRegistry:
    return write_config(tmp_path, {"PreToolUse": [DENY_DELETE, *more]})


def weather_subgraph(tools: list[BaseTool], read: list[list[BaseMessage]], **node: Any) -> Any:
    """The test's subgraph, with a plain ToolNode: the model asks ``delete``, then answers."""
    call = {"name": "delete", "args": {"path": "/tmp/x"}, "id": "call-1", "type": "tool_call"}
    model = GenericFakeChatModel(
        messages=iter([AIMessage("", tool_calls=[call]), AIMessage("The weather is sunny today.")]),
        disable_streaming=True,  # the fake model streams no tool calls: whole messages
    )

    def call_model_node(state: MessagesState, config: RunnableConfig) -> MessagesState:
        """Node that calls the model with the messages so far."""
        read.append(list(state["messages"]))  # what the model reads
        return {"messages": [model.invoke(state["messages"], config)]}

    def route(state: MessagesState) -> str:
        last = state["messages"][-1]
        return "tools" if isinstance(last, AIMessage) and last.tool_calls else END

    subgraph = StateGraph(MessagesState)
    subgraph.add_node("call_model", call_model_node)
    subgraph.add_node("tools", ToolNode(tools, **node))
    subgraph.add_edge(START, "call_model")
    subgraph.add_conditional_edges("call_model", route, ["tools", END])
    subgraph.add_edge("tools", "call_model")
    return subgraph.compile()


class SomeCustomState(TypedDict):
    last_chunk: NotRequired[str]
    num_chunks: NotRequired[int]


def workflow_of(compiled_subgraph: Any) -> StateGraph[Any]:
    """The test's parent: a node function that streams the compiled subgraph."""

    def parent_node(state: SomeCustomState, config: RunnableConfig) -> dict[str, Any]:
        """Node that runs the subgraph."""
        msgs = {"messages": [("user", "What is the weather in Tokyo?")]}
        events = list(compiled_subgraph.stream(msgs, config, stream_mode="messages"))
        ai_msg_chunks = [chunk for chunk, _ in events if isinstance(chunk, AIMessage)]
        return {"last_chunk": ai_msg_chunks[-1].content, "num_chunks": len(ai_msg_chunks)}

    async def aparent_node(state: SomeCustomState, config: RunnableConfig) -> dict[str, Any]:
        msgs = {"messages": [("user", "What is the weather in Tokyo?")]}
        events = [e async for e in compiled_subgraph.astream(msgs, config, stream_mode="messages")]
        ai_msg_chunks = [chunk for chunk, _ in events if isinstance(chunk, AIMessage)]
        return {"last_chunk": ai_msg_chunks[-1].content, "num_chunks": len(ai_msg_chunks)}

    workflow = StateGraph(SomeCustomState)
    workflow.add_node("subgraph", RunnableLambda(parent_node, aparent_node))
    workflow.add_edge(START, "subgraph")
    return workflow


def run(app: Any, how: str, start: Any = None) -> Any:
    start = {} if start is None else start
    if how == "invoke":
        return app.invoke(start)
    return asyncio.run(app.ainvoke(start))


def tool_messages(read: list[list[BaseMessage]]) -> list[ToolMessage]:
    return [m for m in read[-1] if isinstance(m, ToolMessage)]


@HOW
def test_a_deny_refuses_a_call_of_a_plain_tool_node_in_a_subgraph_streamed_by_a_node(
    tmp_path: Path, how: str
) -> None:
    ran: list[str] = []
    read: list[list[BaseMessage]] = []
    workflow = workflow_of(weather_subgraph([make_delete(ran)], read))
    result = run(with_hooks(workflow, registry=deny(tmp_path)).compile(), how)
    assert ran == []  # the body never ran
    [refusal] = tool_messages(read)
    assert refusal.content == REASON
    assert refusal.status == "error"
    assert refusal.tool_call_id == "call-1"
    assert "today." in result["last_chunk"]  # the run went on to the model's answer


@HOW
def test_an_allowed_call_runs_once_and_the_hooks_see_its_real_input(
    tmp_path: Path, how: str
) -> None:
    ran: list[str] = []
    read: list[list[BaseMessage]] = []
    registry = write_config(tmp_path, {"PreToolUse": [log_to(tmp_path / "log")]})
    workflow = workflow_of(weather_subgraph([make_delete(ran)], read))
    run(with_hooks(workflow, registry=registry).compile(), how)
    assert ran == ["/tmp/x"]
    [event] = logged(tmp_path / "log")  # before: 0 events
    assert event["hook_event_name"] == "PreToolUse"
    assert (event["tool_name"], event["tool_input"]) == ("delete", {"path": "/tmp/x"})
    assert event["tool_use_id"] == "call-1"
    assert tool_messages(read)[0].content == "deleted /tmp/x"


def test_the_graph_unhooked_runs_the_tool_as_langgraph_does(tmp_path: Path) -> None:
    ran: list[str] = []
    read: list[list[BaseMessage]] = []
    run(workflow_of(weather_subgraph([make_delete(ran)], read)).compile(), "invoke")
    assert ran == ["/tmp/x"]  # the reproduction's baseline: nothing judged it


@HOW
def test_a_tool_node_invoked_by_a_node_function_without_its_config_is_judged(
    tmp_path: Path, how: str
) -> None:
    """LangChain reads the run's config from its context: no ``config`` to pass along."""
    ran: list[str] = []
    nodes = ToolNode([make_delete(ran)])
    call = {"name": "delete", "args": {"path": "/"}, "id": "c9", "type": "tool_call"}
    seen: list[Any] = []
    asking = {"messages": [AIMessage("", tool_calls=[call])]}

    def tools_by_hand(state: MessagesState) -> dict[str, Any]:
        seen.extend(nodes.invoke(asking)["messages"])
        return {}

    async def atools_by_hand(state: MessagesState) -> dict[str, Any]:
        seen.extend((await nodes.ainvoke(asking))["messages"])
        return {}

    builder = StateGraph(MessagesState)
    builder.add_node("work", RunnableLambda(tools_by_hand, atools_by_hand))
    builder.add_edge(START, "work")
    run(with_hooks(builder, registry=deny(tmp_path)).compile(), how, {"messages": []})
    assert ran == []
    [message] = seen
    assert message.content == REASON
    assert message.status == "error"


@HOW
def test_a_rewrite_it_cannot_carry_out_refuses_the_call(tmp_path: Path, how: str) -> None:
    ran: list[str] = []
    read: list[list[BaseMessage]] = []
    answer = json.dumps({"modified_input": {"path": "/sandbox/x"}})
    registry = write_config(tmp_path, {"PreToolUse": [command("delete", f"echo '{answer}'")]})
    workflow = workflow_of(weather_subgraph([make_delete(ran)], read))
    run(with_hooks(workflow, registry=registry).compile(), how)
    assert ran == []  # never with the input the hook did not want
    [refusal] = tool_messages(read)
    assert "modified_input" in str(refusal.content)
    assert "guard_tools" in str(refusal.content)


@HOW
def test_handle_tool_errors_true_still_tells_the_model_the_reason(tmp_path: Path, how: str) -> None:
    ran: list[str] = []
    read: list[list[BaseMessage]] = []
    subgraph = weather_subgraph([make_delete(ran)], read, handle_tool_errors=True)
    run(with_hooks(workflow_of(subgraph), registry=deny(tmp_path)).compile(), how)
    assert ran == []
    assert REASON in str(tool_messages(read)[0].content)


@HOW
def test_a_call_a_guarded_path_judged_is_not_judged_again(tmp_path: Path, how: str) -> None:
    """The hooked graph's own ToolNode and a guard_tools tool: one PreToolUse per call."""
    ran: list[str] = []
    read: list[list[BaseMessage]] = []
    registry = write_config(tmp_path, {"PreToolUse": [log_to(tmp_path / "log")]})
    inner = weather_subgraph(guard_tools([make_delete(ran)]), read)
    run(with_hooks(workflow_of(inner), registry=registry).compile(), how)
    assert ran == ["/tmp/x"]
    assert [e["tool_name"] for e in logged(tmp_path / "log")] == ["delete"]


@HOW
def test_a_tool_a_judged_tool_starts_inside_is_judged(tmp_path: Path, how: str) -> None:
    """The mark covers the judged call only: a tool its body calls is judged itself."""
    ran: list[str] = []
    delete = make_delete(ran)

    @tool
    def tidy(path: str) -> str:
        """Tidy a folder."""
        return str(delete.invoke({"path": path}))

    [guarded] = guard_tools([tidy])
    seen: list[str] = []

    def work(state: MessagesState) -> dict[str, Any]:
        try:
            seen.append(guarded.invoke({"path": "/"}))
        except Exception as exc:  # the refusal raised out of the inner call
            seen.append(f"{type(exc).__name__}: {exc}")
        return {}

    builder = StateGraph(MessagesState)
    builder.add_node("work", work)
    builder.add_edge(START, "work")
    run(with_hooks(builder, registry=deny(tmp_path)).compile(), "invoke", {"messages": []})
    assert ran == []
    assert seen == [f"ToolRefused: {REASON}"]
