"""The ways around the guard and the ask round trip of the conformance matrix, in LangGraph.

Each way calls ``fetch`` as a LangGraph user would without a hooked ``ToolNode``: a
hand-written tool node (LangGraph's quickstart), a plain ``ToolNode`` or a compiled
graph called inside a node function (LangGraph's subgraph-streaming test), the
functional API, LangChain v1's ``create_agent`` (alone, and beside LangChain's own
``HumanInTheLoopMiddleware`` and ``ToolRetryMiddleware``). Real graphs, langchain-core's
fake model.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import (
    AgentMiddleware,
    HumanInTheLoopMiddleware,
    ToolRetryMiddleware,
)
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.func import entrypoint, task
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode
from langgraph.types import Command
from orchestra_langgraph import OrchestraMiddleware, guard_tools, with_hooks
from test_langchain_middleware import model as scripted
from test_langgraph_tools import tool_graph

from orchestra.bridge.testing import (
    ASK_CELLS,
    WAY_CELLS,
    Paused,
    ToolBody,
    ToolRun,
    ask_matrix_row,
    check_ask_cell,
    check_way_cell,
    way_matrix_rows,
)
from orchestra.skills import HookRegistry

PAGE = Path(__file__).resolve().parents[3] / "docs" / "howto" / "one-policy.md"
CALL = {"name": "fetch", "args": {"path": "/data"}, "id": "f1", "type": "tool_call"}


def fetch_tool(body: ToolBody) -> BaseTool:
    @tool
    def fetch(path: str) -> str:
        """Fetch a path."""
        return body(path)

    return fetch


def fake_model() -> GenericFakeChatModel:
    return GenericFakeChatModel(
        messages=iter([AIMessage("", tool_calls=[CALL]), AIMessage("done")]),
        disable_streaming=True,
    )


def read(messages: list[BaseMessage]) -> str:
    return "\n".join(str(m.content) for m in messages if isinstance(m, ToolMessage))


def agent_loop(node: Callable[[MessagesState], dict[str, Any]]) -> StateGraph[Any]:
    """model -> ``node`` (the user's own tool node) -> model."""
    chat = fake_model()

    def call_model(state: MessagesState) -> dict[str, Any]:
        return {"messages": [chat.invoke(state["messages"])]}

    def route(state: MessagesState) -> str:
        last = state["messages"][-1]
        return "tools" if isinstance(last, AIMessage) and last.tool_calls else END

    builder = StateGraph(MessagesState)
    builder.add_node("model", call_model)
    builder.add_node("tools", node)
    builder.add_edge(START, "model")
    builder.add_conditional_edges("model", route, ["tools", END])
    builder.add_edge("tools", "model")
    return builder


def hand_written(registry: HookRegistry, body: ToolBody) -> list[BaseMessage]:
    tools = {t.name: t for t in guard_tools([fetch_tool(body)])}

    def tool_node(state: MessagesState) -> dict[str, Any]:
        last = state["messages"][-1]
        assert isinstance(last, AIMessage)
        out = [
            ToolMessage(tools[c["name"]].invoke(c["args"]), tool_call_id=c["id"])
            for c in last.tool_calls
        ]
        return {"messages": out}

    app = with_hooks(agent_loop(tool_node), registry=registry).compile()
    return list(app.invoke({"messages": [HumanMessage("go")]})["messages"])


def tool_node_in_a_node(registry: HookRegistry, body: ToolBody) -> list[BaseMessage]:
    plain = ToolNode([fetch_tool(body)])

    def tool_node(state: MessagesState) -> dict[str, Any]:
        return dict(plain.invoke(state))

    app = with_hooks(agent_loop(tool_node), registry=registry).compile()
    return list(app.invoke({"messages": [HumanMessage("go")]})["messages"])


def subgraph_in_a_node(registry: HookRegistry, body: ToolBody) -> list[BaseMessage]:
    compiled_subgraph = agent_loop(ToolNode([fetch_tool(body)])).compile()
    seen: list[BaseMessage] = []

    def parent_node(state: MessagesState, config: RunnableConfig) -> dict[str, Any]:
        for chunk, _ in compiled_subgraph.stream(state, config, stream_mode="messages"):
            seen.append(chunk)
        return {}

    builder = StateGraph(MessagesState)
    builder.add_node("subgraph", parent_node)
    builder.add_edge(START, "subgraph")
    with_hooks(builder, registry=registry).compile().invoke({"messages": [HumanMessage("go")]})
    return seen


def functional(registry: HookRegistry, body: ToolBody) -> list[BaseMessage]:
    tools = {t.name: t for t in guard_tools([fetch_tool(body)])}
    chat = fake_model()

    @task
    def call_model(messages: list[BaseMessage]) -> Any:
        return chat.invoke(messages)

    @task
    def call_tool(tool_call: dict[str, Any]) -> Any:
        return tools[tool_call["name"]].invoke(tool_call)

    @entrypoint()
    def agent(messages: list[BaseMessage]) -> list[BaseMessage]:
        response = call_model(messages).result()
        while response.tool_calls:
            results = [call_tool(c).result() for c in response.tool_calls]
            messages = add_messages(messages, [response, *results])
            response = call_model(messages).result()
        return add_messages(messages, response)

    return list(with_hooks(agent, registry=registry).invoke([HumanMessage("go")]))


@tool
def publish(text: str) -> str:
    """Publish a text (a person approves each call: HumanInTheLoopMiddleware)."""
    raise AssertionError("the scripted model never calls publish")


def middleware_stack(registry: HookRegistry, beside: bool) -> list[AgentMiddleware]:
    """``OrchestraMiddleware`` alone, or last after LangChain's own approval and retry."""
    ours = OrchestraMiddleware(registry=registry)
    if not beside:
        return [ours]
    return [
        HumanInTheLoopMiddleware(interrupt_on={"publish": True}),
        ToolRetryMiddleware(max_retries=2, initial_delay=0),
        ours,
    ]


def langchain_agent(registry: HookRegistry, body: ToolBody, beside: bool) -> list[BaseMessage]:
    app = create_agent(
        scripted([CALL]),
        tools=[fetch_tool(body), publish],
        middleware=middleware_stack(registry, beside),
        checkpointer=InMemorySaver(),  # HumanInTheLoopMiddleware's interrupts need one
    )
    config: RunnableConfig = {"configurable": {"thread_id": "w1"}}
    return list(app.invoke({"messages": [HumanMessage("go")]}, config)["messages"])


WAYS: dict[str, tuple[str, Callable[[HookRegistry, ToolBody], list[BaseMessage]]]] = {
    "hand_written_tool_node": ("a node calling `guard_tools` tools itself", hand_written),
    "tool_node_in_a_node": ("a plain `ToolNode` a node function invokes", tool_node_in_a_node),
    "subgraph_in_a_node": ("a plain compiled graph a node function streams", subgraph_in_a_node),
    "entrypoint": ("an `@entrypoint` agent of `guard_tools` tools", functional),
    "create_agent": (
        "LangChain v1 `create_agent` + `OrchestraMiddleware`",
        lambda registry, body: langchain_agent(registry, body, beside=False),
    ),
    "create_agent_beside_middleware": (
        "`create_agent` + `HumanInTheLoopMiddleware`, `ToolRetryMiddleware`, then "
        "`OrchestraMiddleware`",
        lambda registry, body: langchain_agent(registry, body, beside=True),
    ),
}


class LangGraphWays:
    name = "LangGraph"
    ways: Mapping[str, str] = {way: what for way, (what, _) in WAYS.items()}
    cannot: Mapping[str, str] = {}

    def call(self, way: str, registry: HookRegistry, body: ToolBody) -> ToolRun:
        return ToolRun(read=read(WAYS[way][1](registry, body)))


class Pausing:
    """A hooked ToolNode graph with a checkpointer, or create_agent with the middleware
    (alone, or after LangChain's own ``HumanInTheLoopMiddleware`` and ``ToolRetryMiddleware``)."""

    def __init__(self, name: str, kind: str) -> None:
        self.name = name
        self.kind = kind
        self.cannot: Mapping[str, str] = {}

    def pause(self, registry: HookRegistry, body: ToolBody) -> Paused:
        saver = InMemorySaver()
        if self.kind.startswith("create_agent"):
            app: Any = create_agent(
                scripted([CALL]),
                tools=[fetch_tool(body), publish],
                middleware=middleware_stack(registry, beside=self.kind != "create_agent"),
                checkpointer=saver,
            )
        else:
            app = with_hooks(tool_graph(fetch_tool(body), [CALL]), registry=registry).compile(saver)
        config = {"configurable": {"thread_id": "t1"}}

        def go(given: Any) -> ToolRun:
            out = app.invoke(given, config)
            asked = out.get("__interrupt__") or ()
            request = dict(asked[0].value) if asked else None
            return ToolRun(read=read(out["messages"]), paused=bool(asked), request=request)

        first = go({"messages": [HumanMessage("go")]})
        assert first.request is not None, f"not paused: read {first.read!r}"
        return Paused(request=first.request, answer=lambda answer: go(Command(resume=answer)))


ASKERS = [
    Pausing("LangGraph (ToolNode)", "tool_node"),
    Pausing("LangChain create_agent", "create_agent"),
    Pausing(
        "LangChain create_agent beside HumanInTheLoopMiddleware, ToolRetryMiddleware",
        "create_agent_beside_middleware",
    ),
]


@pytest.mark.parametrize("cell", WAY_CELLS)
@pytest.mark.parametrize("way", list(WAYS))
def test_way_cell(way: str, cell: str) -> None:
    reason = check_way_cell(LangGraphWays(), way, cell)
    if reason is not None:
        pytest.skip(reason)


@pytest.mark.parametrize("cell", ASK_CELLS)
@pytest.mark.parametrize("engine", ASKERS, ids=lambda e: e.kind)
def test_ask_cell(engine: Pausing, cell: str) -> None:
    reason = check_ask_cell(engine, cell)
    if reason is not None:
        pytest.skip(reason)


def test_the_page_shows_these_rows() -> None:
    page = PAGE.read_text()
    assert way_matrix_rows(LangGraphWays()) in page
    for engine in ASKERS:
        assert ask_matrix_row(engine) in page
