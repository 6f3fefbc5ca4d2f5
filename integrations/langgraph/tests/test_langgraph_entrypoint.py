"""with_hooks on the functional API: an ``@entrypoint``'s Pregel, LangGraph's own agent."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool
from langgraph.func import entrypoint, task
from langgraph.graph.message import add_messages
from orchestra_langgraph import HookedEntrypoint, guard_tools, with_hooks
from test_langgraph_tools import log_to, logged, write_config
from test_langgraph_tree import DENY_DELETE, REASON, make_delete

import orchestra

HOW = pytest.mark.parametrize("how", ["invoke", "ainvoke"])


def run(app: Any, how: str, given: Any) -> Any:
    if how == "invoke":
        return app.invoke(given)
    return asyncio.run(app.ainvoke(given))


def functional_agent(tools: list[BaseTool], read: list[list[BaseMessage]]) -> Any:
    """LangGraph's functional-API agent: a model task and a tool task in a loop."""
    calls = [{"name": "delete", "args": {"path": "/"}, "id": "c1", "type": "tool_call"}]
    model = GenericFakeChatModel(
        messages=iter([AIMessage("", tool_calls=calls), AIMessage("done")])
    )
    tools_by_name = {t.name: t for t in tools}

    @task
    def call_model(messages: list[BaseMessage]) -> AIMessage:
        read.append(list(messages))  # what the model reads
        return model.invoke(messages)  # type: ignore[return-value]

    @task
    def call_tool(tool_call: dict[str, Any]) -> ToolMessage:
        return tools_by_name[tool_call["name"]].invoke(tool_call)  # type: ignore[no-any-return]

    @entrypoint()
    def agent(messages: list[BaseMessage]) -> list[BaseMessage]:
        response = call_model(messages).result()
        while response.tool_calls:
            futures = [call_tool(tool_call) for tool_call in response.tool_calls]
            messages = add_messages(messages, [response, *(f.result() for f in futures)])
            response = call_model(messages).result()
        return add_messages(messages, response)

    return agent


@HOW
def test_the_agent_s_guarded_tools_follow_the_entrypoint_s_policy(tmp_path: Path, how: str) -> None:
    ran: list[str] = []
    read: list[list[BaseMessage]] = []
    agent = functional_agent(guard_tools([make_delete(ran)]), read)  # no registry of their own
    hooked = with_hooks(agent, registry=write_config(tmp_path, {"PreToolUse": [DENY_DELETE]}))
    messages = run(hooked, how, [HumanMessage("clean up")])
    assert ran == []
    [refusal] = [m for m in read[-1] if isinstance(m, ToolMessage)]
    assert refusal.content == REASON  # what the model read
    assert refusal.status == "error"
    assert messages[-1].content == "done"  # the run went on


@HOW
def test_a_plain_tool_a_task_invokes_is_refused_before_its_body(tmp_path: Path, how: str) -> None:
    """A tool invoked by hand with a tool call: the refusal is the task's error (closed)."""
    ran: list[str] = []
    agent = functional_agent([make_delete(ran)], [])
    hooked = with_hooks(agent, registry=write_config(tmp_path, {"PreToolUse": [DENY_DELETE]}))
    with pytest.raises(Exception, match=REASON) as raised:
        run(hooked, how, [HumanMessage("clean up")])
    assert type(raised.value).__name__ == "ToolRefused"
    assert ran == []


@HOW
def test_an_allowed_call_in_a_task_is_seen_with_its_real_input(tmp_path: Path, how: str) -> None:
    ran: list[str] = []
    read: list[list[BaseMessage]] = []
    registry = write_config(tmp_path, {"PreToolUse": [log_to(tmp_path / "log")]})
    run(with_hooks(functional_agent([make_delete(ran)], read), registry=registry), how, [])
    assert ran == ["/"]
    [event] = logged(tmp_path / "log")
    assert (event["tool_name"], event["tool_input"], event["tool_use_id"]) == (
        "delete",
        {"path": "/"},
        "c1",
    )


class Seen(orchestra.TaskHooks):
    def __init__(self, skip: bool = False, retries: int = 0) -> None:
        self.moments: list[tuple[str, str]] = []
        self.skip = skip
        self.retries = retries

    def before_run(self, ctx: Any) -> None:
        self.moments.append(("before_run", ""))

    def before_execute(self, ctx: orchestra.TaskContext) -> Any:
        self.moments.append(("before_execute", f"{ctx.task.id}#{ctx.attempt}"))
        return orchestra.Skip("muted") if self.skip else None

    def on_failure(self, ctx: orchestra.TaskContext, error: BaseException) -> Any:
        return orchestra.Retry() if ctx.attempt <= self.retries else None

    def after_run(self, ctx: Any, result: Any) -> None:
        self.moments.append(("after_run", ""))


def flaky_flow(calls: list[int]) -> Any:
    @task
    def fetch(x: int) -> int:
        return x * 10

    @entrypoint()
    def flow(x: int) -> int:
        calls.append(x)
        if len(calls) == 1:
            raise ConnectionError("503 from upstream")
        return fetch(x).result() + 1

    return flow


@HOW
def test_the_body_is_a_task_its_moments_decide(how: str) -> None:
    calls: list[int] = []
    hooks = Seen(retries=1)
    hooked = with_hooks(flaky_flow(calls), [hooks])
    assert isinstance(hooked, HookedEntrypoint)
    assert run(hooked, how, 4) == 41
    assert calls == [4, 4]  # the first failure retried
    assert hooks.moments == [
        ("before_run", ""),
        ("before_execute", "flow#1"),
        ("before_execute", "flow#2"),
        ("after_run", ""),
    ]


@HOW
def test_a_skip_leaves_the_entrypoint_s_output_none(how: str) -> None:
    calls: list[int] = []
    assert run(with_hooks(flaky_flow(calls), [Seen(skip=True)]), how, 4) is None
    assert calls == []


def test_the_entrypoint_itself_is_left_as_it_is() -> None:
    calls: list[int] = []
    flow = flaky_flow(calls)
    with_hooks(flow, [Seen(skip=True)])
    assert not isinstance(flow, HookedEntrypoint)
    with pytest.raises(ConnectionError):
        flow.invoke(1)
    assert flow.invoke(1) == 11
