"""OrchestraMiddleware: orchestra's policy in a LangChain v1 ``create_agent`` agent.

The agent is LangChain's own ``create_agent`` with langchain-core's fake chat model; the
YAML hooks are real command and permission hooks.
"""

from __future__ import annotations

import asyncio
import json
import shlex
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware, ToolRetryMiddleware
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from orchestra_langgraph import OrchestraMiddleware, with_hooks
from test_langgraph_guard_tools import make_delete
from test_langgraph_tools import DENY_ROOT, call, command, write_config

import orchestra
from orchestra.bridge import args_sha256

HOW = pytest.mark.parametrize("how", ["invoke", "ainvoke"])
APPEND = {"type": "command", "command": 'line=$(cat); printf "%s\\n" "$line" >> events.jsonl'}


class Reading(FakeMessagesListChatModel):
    """A scripted chat model that keeps what it was sent (what the model reads)."""

    read: list[list[BaseMessage]]

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        self.read.append(list(messages))
        return super()._generate(messages, *args, **kwargs)

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self


def model(calls: list[dict[str, Any]]) -> Reading:
    return Reading(
        responses=[AIMessage(content="", tool_calls=calls), AIMessage(content="done")], read=[]
    )


def run(agent: Any, how: str, **config: Any) -> list[BaseMessage]:
    start = {"messages": [HumanMessage("clean up")]}
    if how == "invoke":
        return list(agent.invoke(start, config or None)["messages"])
    return list(asyncio.run(agent.ainvoke(start, config or None))["messages"])


def last_tool_message(read: list[list[BaseMessage]]) -> ToolMessage:
    message = read[-1][-1]
    assert isinstance(message, ToolMessage)
    return message


@HOW
def test_a_denied_call_is_what_the_model_reads_and_the_tool_never_runs(
    tmp_path: Path, how: str
) -> None:
    ran: list[str] = []
    chat = model([call("/")])
    registry = write_config(tmp_path, DENY_ROOT)
    agent = create_agent(
        chat, tools=[make_delete(ran)], middleware=[OrchestraMiddleware(registry=registry)]
    )

    messages = run(agent, how)

    assert ran == []
    refusal = last_tool_message(chat.read)  # the model's second call reads the refusal
    assert (refusal.content, refusal.status) == ("never delete /", "error")
    assert messages[-1].content == "done"


@HOW
def test_a_modified_input_is_what_the_tool_gets(tmp_path: Path, how: str) -> None:
    ran: list[str] = []
    rewrite = json.dumps({"modified_input": {"path": "/tmp/sandbox"}})
    registry = write_config(
        tmp_path, {"PreToolUse": [command("delete", f"echo {shlex.quote(rewrite)}")]}
    )
    chat = model([call("/etc")])
    agent = create_agent(
        chat, tools=[make_delete(ran)], middleware=[OrchestraMiddleware(registry=registry)]
    )

    run(agent, how)

    assert ran == ["/tmp/sandbox"]
    assert last_tool_message(chat.read).content == "deleted /tmp/sandbox"


@HOW
def test_each_model_call_is_a_step(tmp_path: Path, how: str, monkeypatch: Any) -> None:
    monkeypatch.chdir(tmp_path)
    every = [{"hooks": [APPEND]}]
    registry = write_config(tmp_path, {"StepStart": every, "StepEnd": every, "PreToolUse": every})
    ran: list[str] = []
    agent = create_agent(
        model([call("/tmp/x")]),
        tools=[make_delete(ran)],
        middleware=[OrchestraMiddleware(registry=registry)],
        name="ops",
    )

    run(agent, how)

    seen = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert [(e["hook_event_name"], e.get("step")) for e in seen] == [
        ("StepStart", 1),
        ("StepEnd", 1),
        ("PreToolUse", None),
        ("StepStart", 2),
        ("StepEnd", 2),
    ]
    assert {k: seen[0][k] for k in ("agent_name", "node", "message_count")} == {
        "agent_name": "ops",
        "node": "model",
        "message_count": 1,
    }
    assert seen[1]["tool_calls"] == ["delete"]
    assert seen[4]["content"] == "done"
    assert ran == ["/tmp/x"]


class Flaky(orchestra.TaskHooks):
    """Retry a tool call once when it fails; skip ``delete`` of /."""

    def __init__(self) -> None:
        self.ends: list[str] = []

    def before_execute(self, ctx: orchestra.TaskContext) -> Any:
        if ctx.inputs.get("path") == "/":
            return orchestra.Skip(reason="not the root")
        return None

    def on_failure(self, ctx: orchestra.TaskContext, error: BaseException) -> Any:
        return orchestra.Retry(delay=0) if ctx.attempt < 2 else None

    def on_end(self, ctx: orchestra.TaskContext, result: Any) -> None:
        self.ends.append(ctx.task.id)


def flaky_fetch(tries: list[str]) -> Any:
    """The tool ``fetch(url)``: records each try in ``tries``; the first raises."""

    @tool
    def fetch(url: str) -> str:
        """Fetch a page."""
        tries.append(url)
        if len(tries) == 1:
            raise ConnectionError("503")
        return "page"

    return fetch


FETCH_U = {"name": "fetch", "args": {"url": "u"}, "id": "c1", "type": "tool_call"}


@HOW
def test_task_hooks_retry_and_skip_a_tool_call(how: str) -> None:
    tries: list[str] = []
    fetch = flaky_fetch(tries)

    ran: list[str] = []
    hooks = Flaky()
    calls = [FETCH_U, call("/", "c2")]
    chat = model(calls)
    agent = create_agent(
        chat, tools=[fetch, make_delete(ran)], middleware=[OrchestraMiddleware(hooks=[hooks])]
    )

    run(agent, how)

    assert tries == ["u", "u"]
    assert ran == []
    answers = {m.tool_call_id: (m.content, m.status) for m in chat.read[-1][-2:]}  # type: ignore[attr-defined]
    assert answers["c1"] == ("page", "success")
    assert answers["c2"][1] == "error"
    assert "not the root" in str(answers["c2"][0])
    assert sorted(hooks.ends) == ["delete", "fetch"]


def test_it_works_beside_human_in_the_loop_and_tool_retry(tmp_path: Path) -> None:
    """LangChain's own middleware keeps working; the policy still refuses."""
    ran: list[str] = []
    chat = model([call("/")])
    agent = create_agent(
        chat,
        tools=[make_delete(ran)],
        middleware=[
            HumanInTheLoopMiddleware(interrupt_on={"other": True}),
            ToolRetryMiddleware(max_retries=2, initial_delay=0),
            OrchestraMiddleware(registry=write_config(tmp_path, DENY_ROOT)),
        ],
        checkpointer=InMemorySaver(),
    )

    messages = run(agent, "invoke", configurable={"thread_id": "t"})

    assert ran == []
    assert last_tool_message(chat.read).content == "never delete /"
    assert messages[-1].content == "done"


def test_each_retry_of_tool_retry_middleware_before_it_is_judged_again(tmp_path: Path) -> None:
    """ToolRetryMiddleware listed first retries through the policy: every try is a call."""
    from test_langgraph_tools import log_to

    tries: list[str] = []
    fetch = flaky_fetch(tries)

    chat = model([FETCH_U])
    registry = write_config(tmp_path, {"PreToolUse": [log_to(tmp_path / "log")]})
    agent = create_agent(
        chat,
        tools=[fetch],
        middleware=[
            ToolRetryMiddleware(max_retries=2, initial_delay=0),
            OrchestraMiddleware(registry=registry),
        ],
    )

    run(agent, "invoke")

    assert tries == ["u", "u"]
    judged = [json.loads(f.read_text()) for f in (tmp_path / "log").iterdir()]
    assert [(e["tool_name"], e["tool_input"]) for e in judged] == [("fetch", {"url": "u"})] * 2
    assert last_tool_message(chat.read).content == "page"


def test_an_agent_inside_a_hooked_graph_follows_its_policy(tmp_path: Path) -> None:
    """With no registry of its own, the middleware follows the ambient policy."""
    from langgraph.graph import END, START, MessagesState, StateGraph

    ran: list[str] = []
    chat = model([call("/")])
    agent = create_agent(chat, tools=[make_delete(ran)], middleware=[OrchestraMiddleware()])

    def node(state: MessagesState) -> dict[str, Any]:
        return {"messages": agent.invoke(state)["messages"][len(state["messages"]) :]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", node)
    builder.add_edge(START, "agent")
    builder.add_edge("agent", END)
    app = with_hooks(builder, registry=write_config(tmp_path, DENY_ROOT)).compile()

    app.invoke({"messages": [HumanMessage("clean up")]})

    assert ran == []
    assert last_tool_message(chat.read).content == "never delete /"


ASK = {"type": "permission", "decision": "ask", "reason": "a person decides"}


@HOW
def test_an_ask_pauses_the_agent_and_approve_runs_the_tool_once(tmp_path: Path, how: str) -> None:
    ran: list[str] = []
    chat = model([call("/data")])
    registry = write_config(tmp_path, {"PreToolUse": [{"matcher": "delete", "hooks": [ASK]}]})
    agent = create_agent(
        chat,
        tools=[make_delete(ran)],
        middleware=[OrchestraMiddleware(registry=registry)],
        checkpointer=InMemorySaver(),
    )
    config: Any = {"configurable": {"thread_id": "t"}}

    def go(given: Any) -> dict[str, Any]:
        if how == "invoke":
            return dict(agent.invoke(given, config))
        return dict(asyncio.run(agent.ainvoke(given, config)))

    (paused,) = go({"messages": [HumanMessage("clean up")]})["__interrupt__"]
    assert ran == []
    assert paused.value["tool_input"] == {"path": "/data"}
    assert paused.value["args_sha256"] == args_sha256({"path": "/data"})

    out = go(Command(resume={"decision": "approve", "args_sha256": paused.value["args_sha256"]}))

    assert ran == ["/data"]
    assert last_tool_message(chat.read).content == "deleted /data"
    assert out["messages"][-1].content == "done"


class Ends(orchestra.TaskHooks):
    def __init__(self) -> None:
        self.failures: list[BaseException] = []

    def on_failure(self, ctx: orchestra.TaskContext, error: BaseException) -> Any:
        self.failures.append(error)
        return orchestra.Retry(delay=0)


def test_an_ask_is_no_failure_of_the_task_hooks(tmp_path: Path) -> None:
    """The pause (LangGraph's interrupt) passes the TaskHooks: no on_failure, no retry."""
    ran: list[str] = []
    hooks = Ends()
    registry = write_config(tmp_path, {"PreToolUse": [{"matcher": "delete", "hooks": [ASK]}]})
    agent = create_agent(
        model([call("/data")]),
        tools=[make_delete(ran)],
        middleware=[OrchestraMiddleware(hooks=[hooks], registry=registry)],
        checkpointer=InMemorySaver(),
    )

    out = agent.invoke({"messages": [HumanMessage("go")]}, {"configurable": {"thread_id": "t"}})

    assert len(out["__interrupt__"]) == 1
    assert hooks.failures == []
    assert ran == []


def test_with_hooks_refuses_what_is_not_a_builder_in_one_clear_error() -> None:
    agent = create_agent(model([]), tools=[])
    for given, kind in ((agent, "CompiledStateGraph"), (object(), "object")):
        with pytest.raises(TypeError, match=f"StateGraph builder .* got a {kind}"):
            with_hooks(given)  # type: ignore[call-overload]
    with pytest.raises(TypeError, match="use OrchestraMiddleware"):
        with_hooks(agent)
