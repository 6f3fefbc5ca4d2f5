"""Step events (``StepStart``/``StepEnd``) and mocked tool calls in a real LangGraph run.

A step is one chat-model call of the run; langchain-core's fake chat model is the model.
Every YAML hook is a real command hook appending the event JSON to ``events.jsonl``.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatResult
from langchain_core.tools import tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from orchestra_langgraph import with_hooks

from orchestra import RunContext, TaskHooks
from orchestra.skills import CriticalHookError, HookRegistry, load

APPEND = {"type": "command", "command": 'line=$(cat); printf "%s\\n" "$line" >> events.jsonl'}
HOW = pytest.mark.parametrize("how", ["invoke", "ainvoke"])
USAGE = {"input_tokens": 7, "output_tokens": 3, "total_tokens": 10}


def hooks(tmp_path: Path, config: dict[str, Any]) -> HookRegistry:
    (tmp_path / "orchestra.yaml").write_text(json.dumps({"hooks": config}))
    return load(tmp_path / "orchestra.yaml", project_dir=tmp_path)


def events(tmp_path: Path) -> list[dict[str, Any]]:
    log = tmp_path / "events.jsonl"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


class Down(GenericFakeChatModel):
    """A chat model whose endpoint is down."""

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        raise ConnectionError("model endpoint down")


def graph(ran: list[str], model: GenericFakeChatModel | None = None, **tool_node: Any) -> Any:
    """model -> tools -> model: ask for ``lookup``, then answer with what it read.

    ``tool_node``: the ``ToolNode``'s options (``handle_tool_errors``).
    """

    @tool
    def lookup(key: str) -> str:
        """Look a key up."""
        ran.append(key)
        return f"value of {key}"

    asks = AIMessage(
        content="",
        tool_calls=[{"name": "lookup", "args": {"key": "k"}, "id": "c1", "type": "tool_call"}],
        usage_metadata=USAGE,  # type: ignore[arg-type]  # a TypedDict, given as a dict
    )
    model = model or GenericFakeChatModel(messages=iter([asks, AIMessage(content="done")]))

    def call_model(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    def route(state: MessagesState) -> str:
        last = state["messages"][-1]
        return "tools" if isinstance(last, AIMessage) and last.tool_calls else END

    builder = StateGraph(MessagesState)
    builder.add_node("model", call_model)
    builder.add_node("tools", ToolNode([lookup], **tool_node))
    builder.add_edge(START, "model")
    builder.add_conditional_edges("model", route, ["tools", END])
    builder.add_edge("tools", "model")
    return builder


def run(builder: Any, registry: HookRegistry, how: str) -> list[Any]:
    app = with_hooks(builder, registry=registry).compile(name="ops")
    start = {"messages": [HumanMessage("find k")]}
    if how == "invoke":
        return list(app.invoke(start)["messages"])
    return list(asyncio.run(app.ainvoke(start))["messages"])


@HOW
def test_each_chat_model_call_is_one_step(tmp_path: Path, how: str) -> None:
    every = [{"hooks": [APPEND]}]
    registry = hooks(tmp_path, {"StepStart": every, "StepEnd": every, "PreToolUse": every})

    messages = run(graph(ran := []), registry, how)

    assert messages[-1].content == "done"
    assert ran == ["k"]
    seen = events(tmp_path)
    assert [(e["hook_event_name"], e.get("step")) for e in seen] == [
        ("StepStart", 1),
        ("StepEnd", 1),
        ("PreToolUse", None),
        ("StepStart", 2),
        ("StepEnd", 2),
    ]
    start, end = seen[0], seen[1]
    assert {k: start[k] for k in ("agent_name", "node", "message_count")} == {
        "agent_name": "ops",
        "node": "model",
        "message_count": 1,
    }
    assert "model" in start  # the fake model names none: None
    assert end["tool_calls"] == ["lookup"]
    assert end["usage"] == {"input_tokens": 7, "output_tokens": 3}
    assert end["error"] is None
    assert end["duration_ms"] >= 0
    assert seen[3]["message_count"] == 3  # the prompt, the tool call, the tool's answer
    assert seen[4]["tool_calls"] == []
    assert seen[4]["usage"] == {"input_tokens": None, "output_tokens": None}


@HOW
def test_a_failed_model_call_ends_its_step_with_the_error(tmp_path: Path, how: str) -> None:
    registry = hooks(tmp_path, {"StepEnd": [{"hooks": [APPEND]}]})

    with pytest.raises(ConnectionError, match="endpoint down"):
        run(graph([], Down(messages=iter([]))), registry, how)

    (end,) = events(tmp_path)
    assert (end["step"], end["error"], end["tool_calls"]) == (1, "model endpoint down", [])


@HOW
def test_a_step_hook_that_fails_or_times_out_is_recorded_and_the_run_goes_on(
    tmp_path: Path, how: str
) -> None:
    broken = [
        {"type": "command", "command": "exit 3"},
        {"type": "command", "command": "sleep 30", "timeout": 1},
        APPEND,
    ]
    registry = hooks(tmp_path, {"StepStart": [{"hooks": broken}]})

    messages = run(graph(ran := []), registry, how)

    assert messages[-1].content == "done"
    assert ran == ["k"]
    assert [e["step"] for e in events(tmp_path)] == [1, 2]  # the sibling hook still ran


@HOW
def test_a_mocked_call_skips_the_tool_and_still_fires_post_tool_use(
    tmp_path: Path, how: str
) -> None:
    mock = {"type": "command", "command": """echo '{"output": "cached value"}'"""}
    registry = hooks(
        tmp_path,
        {
            "PreToolUse": [{"matcher": "lookup", "hooks": [mock]}],
            "PostToolUse": [{"hooks": [APPEND]}],
        },
    )

    messages = run(graph(ran := []), registry, how)

    assert ran == []  # the tool was not called
    (answer,) = [m for m in messages if isinstance(m, ToolMessage)]
    assert answer.content == "cached value"
    (post,) = events(tmp_path)
    assert (post["tool_response"], post["mocked"]) == ("cached value", True)


@HOW
def test_a_post_tool_use_rewrite_of_a_mock_is_what_the_model_reads(
    tmp_path: Path, how: str
) -> None:
    mock = {"type": "command", "command": """echo '{"output": "cached value"}'"""}
    rewrite = {"type": "command", "command": """echo '{"output": "checked value"}'"""}
    registry = hooks(
        tmp_path, {"PreToolUse": [{"hooks": [mock]}], "PostToolUse": [{"hooks": [rewrite]}]}
    )

    messages = run(graph([]), registry, how)

    (answer,) = [m for m in messages if isinstance(m, ToolMessage)]
    assert answer.content == "checked value"


def test_a_call_the_tool_answered_has_no_mocked_field(tmp_path: Path) -> None:
    registry = hooks(tmp_path, {"PostToolUse": [{"hooks": [APPEND]}]})

    run(graph([]), registry, "invoke")

    (post,) = events(tmp_path)
    assert post["tool_response"] == "value of k"
    assert "mocked" not in post


@HOW
def test_a_critical_step_hook_is_a_hook_error_of_the_run_not_its_end(
    tmp_path: Path, how: str
) -> None:
    critical = {"type": "command", "command": "exit 1", "on_error": "raise"}
    second = {"type": "command", "command": "exit 3", "on_error": "raise"}  # both reported
    registry = hooks(tmp_path, {"StepStart": [{"hooks": [critical, APPEND, second]}]})
    results: list[Any] = []

    class Keep(TaskHooks):
        def after_run(self, ctx: RunContext, result: Any) -> None:
            results.append(result)

    app = with_hooks(graph(ran := []), [Keep()], registry=registry).compile(name="ops")
    start = {"messages": [HumanMessage("find k")]}
    final = app.invoke(start) if how == "invoke" else asyncio.run(app.ainvoke(start))

    assert final["messages"][-1].content == "done"
    assert ran == ["k"]
    assert [e["step"] for e in events(tmp_path)] == [1, 2]  # its sibling ran each time
    (result,) = results
    errors = [e for e in result.hook_errors if isinstance(e, CriticalHookError)]
    assert [(e.event, e.error) for e in errors] == [
        ("StepStart", "exited 1"),
        ("StepStart", "exited 3"),
    ] * 2
