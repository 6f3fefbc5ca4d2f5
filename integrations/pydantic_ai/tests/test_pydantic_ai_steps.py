"""Step events (``StepStart``/``StepEnd``) and mocked tool calls in real pydantic-ai agents.

A step is one model request; pydantic-ai's ``FunctionModel`` is the scripted model. Every
YAML hook is a real command hook that appends the event JSON to ``events.jsonl``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from orchestra_pydantic_ai import OrchestraCapability
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from orchestra.skills import CriticalHookError, HookRegistry, load

pytestmark = pytest.mark.anyio

APPEND = {"type": "command", "command": 'line=$(cat); printf "%s\\n" "$line" >> events.jsonl'}


def hooks(tmp_path: Path, config: dict[str, Any]) -> HookRegistry:
    (tmp_path / "orchestra.yaml").write_text(json.dumps({"hooks": config}))
    return load(tmp_path / "orchestra.yaml", project_dir=tmp_path)


def events(tmp_path: Path) -> list[dict[str, Any]]:
    log = tmp_path / "events.jsonl"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def lookup_then_answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """First turn: ask for ``lookup``; second turn: answer with what the tool returned."""
    if len(messages) == 1:
        return ModelResponse(parts=[ToolCallPart("lookup", {"key": "k"}, tool_call_id="c1")])
    last = messages[-1].parts[-1]
    return ModelResponse(parts=[TextPart(f"read {getattr(last, 'content', '?')}")])


def agent(model: FunctionModel, registry: HookRegistry, ran: list[str]) -> Agent[None, str]:
    built: Agent[None, str] = Agent(
        model, capabilities=[OrchestraCapability(registry=registry)], name="ops"
    )

    @built.tool_plain
    def lookup(key: str) -> str:
        """Look a key up."""
        ran.append(key)
        return f"value of {key}"

    return built


async def test_each_model_request_is_one_step_between_start_and_end(tmp_path: Path) -> None:
    every = [{"hooks": [APPEND]}]
    registry = hooks(tmp_path, {"StepStart": every, "StepEnd": every, "PreToolUse": every})
    ran: list[str] = []
    model = FunctionModel(lookup_then_answer, model_name="scripted")

    result = await agent(model, registry, ran).run("find k")

    assert result.output == "read value of k"
    seen = events(tmp_path)
    assert [(e["hook_event_name"], e.get("step")) for e in seen] == [
        ("StepStart", 1),
        ("StepEnd", 1),
        ("PreToolUse", None),
        ("StepStart", 2),
        ("StepEnd", 2),
    ]
    start, end = seen[0], seen[1]
    assert {k: start[k] for k in ("agent_name", "model", "message_count")} == {
        "agent_name": "ops",
        "model": "scripted",
        "message_count": 1,
    }
    assert end["tool_calls"] == ["lookup"]
    assert end["error"] is None
    assert isinstance(end["usage"]["input_tokens"], int)
    assert isinstance(end["usage"]["output_tokens"], int)
    assert end["duration_ms"] >= 0
    assert seen[3]["message_count"] == 3  # the prompt, the tool call, the tool's return
    assert seen[4]["tool_calls"] == []
    # lobehub's afterStep: the step's content and the tool results it read
    assert (end["content"], end["tool_results"]) == (None, [])
    assert seen[4]["content"] == "read value of k"
    assert seen[4]["tool_results"] == [
        {"tool_name": "lookup", "tool_call_id": "c1", "output": "value of k"}
    ]


async def test_a_failed_model_request_ends_its_step_with_the_error(tmp_path: Path) -> None:
    registry = hooks(tmp_path, {"StepEnd": [{"hooks": [APPEND]}]})

    def down(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        raise ConnectionError("model endpoint down")

    with pytest.raises(ConnectionError, match="endpoint down"):
        await agent(FunctionModel(down), registry, []).run("find k")

    (end,) = events(tmp_path)
    assert end["step"] == 1
    assert end["error"] == "model endpoint down"
    assert end["tool_calls"] == []
    assert end["usage"] == {"input_tokens": None, "output_tokens": None}


async def test_a_step_hook_that_fails_or_times_out_is_recorded_and_the_run_goes_on(
    tmp_path: Path,
) -> None:
    broken = [
        {"type": "command", "command": "exit 3"},
        {"type": "command", "command": "sleep 30", "timeout": 1},
        APPEND,
    ]
    registry = hooks(tmp_path, {"StepStart": [{"hooks": broken}]})
    ran: list[str] = []

    result = await agent(FunctionModel(lookup_then_answer), registry, ran).run("find k")

    assert result.output == "read value of k"
    assert ran == ["k"]
    assert [e["step"] for e in events(tmp_path)] == [1, 2]  # the sibling hook still ran


async def test_a_mocked_call_skips_the_tool_and_still_fires_post_tool_use(tmp_path: Path) -> None:
    mock = {"type": "command", "command": """echo '{"output": "cached value"}'"""}
    registry = hooks(
        tmp_path,
        {
            "PreToolUse": [{"matcher": "lookup", "hooks": [mock]}],
            "PostToolUse": [{"hooks": [APPEND]}],
        },
    )
    ran: list[str] = []

    result = await agent(FunctionModel(lookup_then_answer), registry, ran).run("find k")

    assert ran == []  # the tool was not called
    assert result.output == "read cached value"
    (post,) = events(tmp_path)
    assert post["tool_response"] == "cached value"
    assert post["mocked"] is True
    assert post["tool_input"] == {"key": "k"}


async def test_a_post_tool_use_rewrite_of_a_mock_is_what_the_model_reads(tmp_path: Path) -> None:
    mock = {"type": "command", "command": """echo '{"output": "cached value"}'"""}
    rewrite = {"type": "command", "command": """echo '{"output": "checked value"}'"""}
    registry = hooks(
        tmp_path, {"PreToolUse": [{"hooks": [mock]}], "PostToolUse": [{"hooks": [rewrite]}]}
    )

    result = await agent(FunctionModel(lookup_then_answer), registry, []).run("find k")

    assert result.output == "read checked value"


async def test_a_call_the_tool_answered_has_no_mocked_field(tmp_path: Path) -> None:
    registry = hooks(tmp_path, {"PostToolUse": [{"hooks": [APPEND]}]})

    await agent(FunctionModel(lookup_then_answer), registry, []).run("find k")

    (post,) = events(tmp_path)
    assert post["tool_response"] == "value of k"
    assert "mocked" not in post


async def test_a_critical_step_hook_is_a_hook_error_of_the_run_not_its_end(
    tmp_path: Path,
) -> None:
    critical = {"type": "command", "command": "exit 1", "on_error": "raise"}
    second = {"type": "command", "command": "exit 3", "on_error": "raise"}  # both reported
    registry = hooks(tmp_path, {"StepStart": [{"hooks": [critical, APPEND, second]}]})
    capability = OrchestraCapability(registry=registry)
    built: Agent[None, str] = Agent(
        FunctionModel(lookup_then_answer), capabilities=[capability], name="ops"
    )
    built.tool_plain(lambda key: f"value of {key}", name="lookup")

    result = await built.run("find k")

    assert result.output == "read value of k"
    assert [e["step"] for e in events(tmp_path)] == [1, 2]  # its sibling ran each time
    errors = [e for e in capability.hook_errors if isinstance(e, CriticalHookError)]
    assert [(e.event, e.error) for e in errors] == [
        ("StepStart", "exited 1"),
        ("StepStart", "exited 3"),
    ] * 2
