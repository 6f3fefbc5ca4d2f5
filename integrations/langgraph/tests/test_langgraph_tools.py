"""A prebuilt ToolNode's calls through YAML tool hooks, with langchain-core's fake chat model."""

from __future__ import annotations

import asyncio
import json
import shlex
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from orchestra_langgraph import with_hooks

import orchestra.skills


def write_config(
    tmp_path: Path, hooks: dict[str, list[dict[str, Any]]]
) -> orchestra.skills.HookRegistry:
    path = tmp_path / "orchestra.yaml"
    path.write_text(json.dumps({"hooks": hooks}))  # JSON is YAML
    return orchestra.skills.load(path)


def command(matcher: str, script: str, **fields: Any) -> dict[str, Any]:
    return {"matcher": matcher, "hooks": [{"type": "command", "command": script, **fields}]}


def log_to(log: Path) -> dict[str, Any]:
    """A hook writing each event it reads to a file of its own in the folder ``log``."""
    log.mkdir(exist_ok=True)
    return command("*", f'cat > "$(mktemp -p {shlex.quote(str(log))})"')


def logged(log: Path) -> list[dict[str, Any]]:
    return [json.loads(path.read_text()) for path in sorted(log.iterdir())]


def agent_graph(calls: list[dict[str, Any]], ran: list[str]) -> StateGraph[Any]:
    """model -> tools -> model: the fake model asks for ``calls``, then answers "done"."""

    @tool
    def delete(path: str) -> str:
        """Delete a file."""
        ran.append(path)
        if path == "/boom":
            raise OSError("disk on fire")
        return f"deleted {path}"

    return tool_graph(delete, calls)


def tool_graph(one_tool: Any, calls: list[dict[str, Any]]) -> StateGraph[Any]:
    """model -> tools (a ToolNode of ``one_tool``) -> model, the fake model asking ``calls``."""
    model = GenericFakeChatModel(
        messages=iter([AIMessage(content="", tool_calls=calls), AIMessage(content="done")])
    )

    def call_model(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    def route(state: MessagesState) -> str:
        last = state["messages"][-1]
        return "tools" if isinstance(last, AIMessage) and last.tool_calls else END

    builder = StateGraph(MessagesState)
    builder.add_node("model", call_model)
    builder.add_node("tools", ToolNode([one_tool], handle_tool_errors=True))
    builder.add_edge(START, "model")
    builder.add_conditional_edges("model", route, ["tools", END])
    builder.add_edge("tools", "model")
    return builder


def call(path: str, call_id: str = "c1") -> dict[str, Any]:
    return {"name": "delete", "args": {"path": path}, "id": call_id, "type": "tool_call"}


def run(builder: Any, registry: Any, how: str) -> list[Any]:
    app = with_hooks(builder, registry=registry).compile()
    start = {"messages": [HumanMessage("clean up")]}
    if how == "invoke":
        return list(app.invoke(start)["messages"])
    return list(asyncio.run(app.ainvoke(start))["messages"])


def tool_messages(messages: list[Any]) -> list[ToolMessage]:
    return [m for m in messages if isinstance(m, ToolMessage)]


HOW = pytest.mark.parametrize("how", ["invoke", "ainvoke"])
DENY_ROOT = {
    "PreToolUse": [
        {
            "matcher": "delete",
            "hooks": [{"type": "permission", "decision": "deny", "reason": "never delete /"}],
        }
    ]
}


@HOW
def test_a_denied_call_is_the_tool_message_the_model_reads(tmp_path: Path, how: str) -> None:
    ran: list[str] = []
    registry = write_config(tmp_path, DENY_ROOT)
    messages = run(agent_graph([call("/")], ran), registry, how)

    assert ran == []
    (answer,) = tool_messages(messages)
    assert answer.content == "never delete /"
    assert answer.status == "error"
    assert answer.tool_call_id == "c1"
    assert messages[-1].content == "done"  # the model read it and the run went on


@HOW
def test_a_modified_input_is_what_the_tool_gets(tmp_path: Path, how: str) -> None:
    ran: list[str] = []
    rewrite = json.dumps({"modified_input": {"path": "/tmp/sandbox"}})
    registry = write_config(
        tmp_path, {"PreToolUse": [command("delete", f"echo {shlex.quote(rewrite)}")]}
    )
    messages = run(agent_graph([call("/etc")], ran), registry, how)

    assert ran == ["/tmp/sandbox"]
    assert tool_messages(messages)[0].content == "deleted /tmp/sandbox"


@HOW
def test_post_tool_use_and_failure_see_each_call(tmp_path: Path, how: str) -> None:
    ran: list[str] = []
    log = tmp_path / "events"
    registry = write_config(
        tmp_path,
        {
            "PreToolUse": [log_to(log)],
            "PostToolUse": [log_to(log)],
            "PostToolUseFailure": [log_to(log)],
        },
    )
    messages = run(agent_graph([call("/a", "c1"), call("/boom", "c2")], ran), registry, how)

    assert sorted(ran) == ["/a", "/boom"]
    events = logged(log)
    by_call = {(e["hook_event_name"], e["tool_use_id"]) for e in events}
    assert by_call == {
        ("PreToolUse", "c1"),
        ("PreToolUse", "c2"),
        ("PostToolUse", "c1"),
        ("PostToolUseFailure", "c2"),
    }
    post = next(e for e in events if e["hook_event_name"] == "PostToolUse")
    assert post["tool_response"] == "deleted /a"
    assert post["tool_input"] == {"path": "/a"}
    failure = next(e for e in events if e["hook_event_name"] == "PostToolUseFailure")
    assert "disk on fire" in failure["error"]
    contents = {m.tool_call_id: m.status for m in tool_messages(messages)}
    assert contents == {"c1": "success", "c2": "error"}


def test_a_post_tool_use_rewrite_is_what_the_model_reads(tmp_path: Path) -> None:
    ran: list[str] = []
    redact = json.dumps({"output": "[redacted]"})
    registry = write_config(
        tmp_path, {"PostToolUse": [command("delete", f"echo {shlex.quote(redact)}")]}
    )
    messages = run(agent_graph([call("/a")], ran), registry, "invoke")
    assert ran == ["/a"]
    assert tool_messages(messages)[0].content == "[redacted]"


BROKEN = pytest.mark.parametrize(
    "script",
    ["exit 1", "echo 'not json {'", "sleep 5"],
    ids=["crashes", "garbage", "times-out"],
)


@BROKEN
def test_a_broken_pre_tool_use_hook_blocks_and_the_run_goes_on(tmp_path: Path, script: str) -> None:
    # PreToolUse is a guard event: a hook error blocks unless the hook says on_error: continue
    ran: list[str] = []
    registry = write_config(tmp_path, {"PreToolUse": [command("delete", script, timeout=1)]})
    messages = run(agent_graph([call("/a")], ran), registry, "invoke")
    assert ran == []
    (answer,) = tool_messages(messages)
    assert answer.status == "error"
    assert "hook error" in str(answer.content)
    assert messages[-1].content == "done"


@BROKEN
def test_a_broken_hook_with_on_error_continue_fails_open(tmp_path: Path, script: str) -> None:
    ran: list[str] = []
    registry = write_config(
        tmp_path,
        {
            "PreToolUse": [command("delete", script, timeout=1, on_error="continue")],
            "PostToolUse": [command("delete", script, timeout=1)],
        },
    )
    messages = run(agent_graph([call("/a")], ran), registry, "ainvoke")
    assert ran == ["/a"]
    assert tool_messages(messages)[0].content == "deleted /a"
    assert messages[-1].content == "done"


def test_a_broken_guard_fails_closed(tmp_path: Path) -> None:
    ran: list[str] = []
    registry = write_config(
        tmp_path, {"PreToolUse": [command("delete", "echo 'not json {'", phase="guard")]}
    )
    messages = run(agent_graph([call("/a")], ran), registry, "invoke")
    assert ran == []  # a guard fails closed
    assert tool_messages(messages)[0].status == "error"
    assert messages[-1].content == "done"


def test_a_tool_node_with_no_tool_hooks_is_left_alone(tmp_path: Path) -> None:
    registry = write_config(tmp_path, {"SessionStart": [log_to(tmp_path / "x")]})
    builder = agent_graph([call("/a")], [])
    hooked = with_hooks(builder, registry=registry)
    assert hooked.nodes["tools"].runnable is builder.nodes["tools"].runnable


def test_tool_spans_nest_in_the_run(tmp_path: Path, exporter: InMemorySpanExporter) -> None:
    registry = write_config(tmp_path, DENY_ROOT)
    run(agent_graph([call("/")], []), registry, "invoke")
    spans = exporter.get_finished_spans()
    tool_span = next(s for s in spans if s.name == "execute_tool delete")
    assert tool_span.attributes is not None
    assert tool_span.attributes["orchestra.tool.decision"] == "deny"
    assert len({s.context.trace_id for s in spans}) == 1


def test_yaml_task_events_fire_around_nodes(tmp_path: Path) -> None:
    log = tmp_path / "events"
    deny = {"type": "permission", "decision": "deny", "reason": "no model calls today"}
    registry = write_config(
        tmp_path,
        {"TaskCreated": [{"hooks": [deny]}], "TaskCompleted": [log_to(log)]},
    )
    ran: list[str] = []
    app = with_hooks(agent_graph([call("/a")], ran), registry=registry).compile()

    with pytest.raises(orchestra.TaskFailed, match="no model calls today"):
        app.invoke({"messages": [HumanMessage("clean up")]})

    (completed,) = logged(log)
    assert (completed["task_id"], completed["state"]) == ("model", "failed")
    assert ran == []


@HOW
def test_a_graph_built_inside_a_hooked_node_follows_its_policy(tmp_path: Path, how: str) -> None:
    """The ambient policy: a ToolNode graph hooked without a registry, inside a node."""
    ran: list[str] = []
    registry = write_config(tmp_path, DENY_ROOT)
    read: list[str] = []

    def outer(state: MessagesState) -> dict[str, Any]:
        inner = with_hooks(agent_graph([call("/")], ran)).compile()  # no registry of its own
        messages = inner.invoke({"messages": [HumanMessage("clean up")]})["messages"]
        read.extend(str(m.content) for m in tool_messages(messages))
        return {"messages": [AIMessage(content="outer done")]}

    builder = StateGraph(MessagesState)
    builder.add_node("outer", outer)
    builder.add_edge(START, "outer")
    messages = run(builder, registry, how)

    assert ran == []
    assert read == ["never delete /"]
    assert messages[-1].content == "outer done"
    alone = with_hooks(agent_graph([call("/")], ran)).compile()  # outside: nothing guards
    alone.invoke({"messages": [HumanMessage("clean up")]})
    assert ran == ["/"]
