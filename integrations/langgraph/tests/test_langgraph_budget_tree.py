"""``Budget(scope="tree")`` across LangGraph subgraphs, with langchain-core's fake chat model.

A parent graph given a budget runs a subgraph given the same budget: as a node (a
compiled subgraph added with ``add_node``) or from a tool's body (``subgraph.invoke``).
With ``scope="tree"`` the subgraph's tool and model calls count toward the parent's
budget; with the default ``scope="run"`` the subgraph counts on its own.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from orchestra_langgraph import with_hooks
from test_langgraph_budget import USAGE, looping

from orchestra import Budget, BudgetExceeded

HOW = pytest.mark.parametrize("how", ["invoke", "ainvoke"])
SCOPES = pytest.mark.parametrize("scope", ["run", "tree"])


def agent_graph(model: GenericFakeChatModel, tools: list[Any], then: str = END) -> Any:
    """model -> tools -> model ... until the model answers, then ``then``."""

    def call_model(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    def route(state: MessagesState) -> str:
        last = state["messages"][-1]
        return "tools" if isinstance(last, AIMessage) and last.tool_calls else then

    builder = StateGraph(MessagesState)
    builder.add_node("model", call_model)
    builder.add_node("tools", ToolNode(tools))
    builder.add_edge(START, "model")
    builder.add_conditional_edges("model", route, ["tools", then])
    builder.add_edge("tools", "model")
    return builder


def lookup_tool(ran: list[str]) -> Any:
    @tool
    def lookup(key: str) -> str:
        """Look a key up."""
        ran.append(key)
        return f"value of {key}"

    return lookup


def child_graph(budget: Budget, ran: list[str], made: list[int]) -> Any:
    """The subgraph, given the budget: asks for ``lookup`` twice, then answers."""
    return with_hooks(agent_graph(looping(2, made), [lookup_tool(ran)]), hooks=[budget]).compile(
        name="child"
    )


def invoke(compiled: Any, how: str) -> Any:
    state = {"messages": [HumanMessage("go")]}
    if how == "invoke":
        return compiled.invoke(state)
    return asyncio.run(compiled.ainvoke(state))


def refusals(messages: list[Any]) -> list[str]:
    return [str(m.content) for m in messages if "budget:" in str(getattr(m, "content", ""))]


def parent_with_subgraph_node(budget: Budget, ran: list[str], child: Any) -> Any:
    """The parent asks for ``lookup`` once, then runs the compiled ``child`` as a node."""
    builder = agent_graph(looping(1, []), [lookup_tool(ran)], then="child")
    builder.add_node("child", child)
    builder.add_edge("child", END)
    return with_hooks(builder, hooks=[budget]).compile(name="parent")


@HOW
@SCOPES
def test_a_subgraph_node_counts_its_tool_calls_toward_the_parent_with_scope_tree(
    how: str, scope: str
) -> None:
    budget = Budget(max_tool_calls=2, scope=scope)  # type: ignore[arg-type]
    ran: list[str] = []
    child_made: list[int] = []
    out = invoke(parent_with_subgraph_node(budget, ran, child_graph(budget, ran, child_made)), how)
    assert child_made == [1, 2, 3]  # the child's model ran its turns either way
    if scope == "tree":  # one count for the tree: the parent's call and the child's first
        assert ran == ["k1", "k1"]
        assert refusals(out["messages"]) == ["budget: tool calls 2/2"]
    else:  # the child's two calls count on their own
        assert ran == ["k1", "k1", "k2"]
        assert refusals(out["messages"]) == []
    assert out["messages"][-1].content == "done"


@HOW
@SCOPES
def test_a_subgraph_node_counts_its_model_calls_toward_the_parent_with_scope_tree(
    how: str, scope: str
) -> None:
    budget = Budget(max_model_calls=3, scope=scope)  # type: ignore[arg-type]
    ran: list[str] = []
    child_made: list[int] = []
    compiled = parent_with_subgraph_node(budget, ran, child_graph(budget, ran, child_made))
    if scope == "tree":  # the parent's two turns, then the child's first: no fourth call
        with pytest.raises(BudgetExceeded, match=r"budget: model calls 3/3"):
            invoke(compiled, how)
        assert child_made == [1]
    else:  # the child has three calls of its own
        assert invoke(compiled, how)["messages"][-1].content == "done"
        assert child_made == [1, 2, 3]


def parent_calling_subgraph_from_a_tool(budget: Budget, child: Any) -> Any:
    """The parent asks its ``delegate`` tool twice; the tool's body invokes ``child``."""

    def ask(i: int) -> AIMessage:
        call = {"name": "delegate", "args": {"key": f"d{i}"}, "id": f"d{i}", "type": "tool_call"}
        return AIMessage(content="", tool_calls=[call], usage_metadata=USAGE)  # type: ignore[arg-type, list-item]

    model = GenericFakeChatModel(messages=iter([ask(1), AIMessage(content="parent done")]))

    @tool
    async def delegate(key: str) -> str:
        """Hand the key to the child graph."""
        out = await child.ainvoke({"messages": [HumanMessage(key)]})
        return " | ".join(str(m.content) for m in out["messages"][1:])

    @tool("delegate")
    def delegate_sync(key: str) -> str:
        """Hand the key to the child graph."""
        out = child.invoke({"messages": [HumanMessage(key)]})
        return " | ".join(str(m.content) for m in out["messages"][1:])

    return model, delegate, delegate_sync


@HOW
@SCOPES
def test_a_subgraph_invoked_from_a_tool_counts_toward_the_parent_with_scope_tree(
    how: str, scope: str
) -> None:
    budget = Budget(max_tool_calls=2, scope=scope)  # type: ignore[arg-type]
    ran: list[str] = []
    child = child_graph(budget, ran, [])
    model, delegate, delegate_sync = parent_calling_subgraph_from_a_tool(budget, child)
    tools = [delegate if how == "ainvoke" else delegate_sync]
    compiled = with_hooks(agent_graph(model, tools), hooks=[budget]).compile(name="parent")
    out = invoke(compiled, how)
    [told] = [str(m.content) for m in out["messages"] if getattr(m, "tool_call_id", "") == "d1"]
    if scope == "tree":  # the parent's delegate call is one of the two: the child gets one
        assert ran == ["k1"]
        assert "budget: tool calls 2/2" in told
    else:
        assert ran == ["k1", "k2"]
        assert "budget:" not in told
    assert out["messages"][-1].content == "parent done"


@HOW
def test_a_subgraph_not_given_the_budget_counts_toward_the_parent_whatever_its_scope(
    how: str,
) -> None:
    budget = Budget(max_tool_calls=2)  # scope="run": the child has no budget of its own
    ran: list[str] = []
    plain_child = agent_graph(looping(2, []), [lookup_tool(ran)]).compile(name="child")
    out = invoke(parent_with_subgraph_node(budget, ran, plain_child), how)
    assert ran == ["k1", "k1"]
    assert refusals(out["messages"]) == ["budget: tool calls 2/2"]
