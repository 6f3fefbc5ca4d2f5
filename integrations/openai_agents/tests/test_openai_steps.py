"""Step events (``StepStart``/``StepEnd``) and mocked tool calls in real SDK runs.

A step is one model turn (``on_llm_start`` .. ``on_llm_end``); the SDK's ``ScriptedModel``
is the model. Each YAML hook is a real command hook appending the event JSON to a log.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from agents import Agent, function_tool
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call
from agents.usage import Usage
from bridge_helpers import drive, events, log_hook, tool_outputs, write_config
from orchestra_openai_agents import OrchestraRunHooks

from orchestra import SubagentHookContext, SubagentHooks, SubagentResult
from orchestra.skills import CriticalHookError

pytestmark = pytest.mark.anyio


def lookup_agent(model: ScriptedModel, ran: list[str]) -> Agent[None]:
    @function_tool
    def lookup(key: str) -> str:
        """Look a key up."""
        ran.append(key)
        return f"value of {key}"

    return Agent(name="ops", model=model, tools=[lookup])


def two_turns() -> ScriptedModel:
    return ScriptedModel(
        [
            ModelStep(
                [function_call("lookup", {"key": "k"}, call_id="c1")],
                Usage(requests=1, input_tokens=12, output_tokens=5, total_tokens=17),
            ),
            [assistant_message("found it")],
        ]
    )


async def test_each_model_turn_is_one_step(tmp_path: Path, mode: str) -> None:
    log = tmp_path / "events.jsonl"
    every = [log_hook(log)]
    registry = write_config(tmp_path, {"StepStart": every, "StepEnd": every, "PreToolUse": every})
    ran: list[str] = []

    result = await drive(
        OrchestraRunHooks(registry=registry), lookup_agent(two_turns(), ran), "find k", mode
    )

    assert result.final_output == "found it"
    assert ran == ["k"]
    seen = events(log)
    assert [(e["hook_event_name"], e.get("step")) for e in seen] == [
        ("StepStart", 1),
        ("StepEnd", 1),
        ("PreToolUse", None),
        ("StepStart", 2),
        ("StepEnd", 2),
    ]
    start, end = seen[0], seen[1]
    assert (start["agent_name"], start["message_count"]) == ("ops", 1)
    assert "model" in start  # a model object without a name: None
    assert end["tool_calls"] == ["lookup"]
    assert end["usage"] == {"input_tokens": 12, "output_tokens": 5}
    assert end["error"] is None
    assert end["duration_ms"] >= 0
    assert seen[3]["message_count"] == 3  # the prompt, the tool call, its output
    assert seen[4]["tool_calls"] == []


async def test_a_failed_model_call_ends_its_step_with_the_error(tmp_path: Path, mode: str) -> None:
    log = tmp_path / "events.jsonl"
    registry = write_config(tmp_path, {"StepEnd": [log_hook(log)]})
    model = ScriptedModel([ModelStep.raise_error(ConnectionError("model endpoint down"))])

    with pytest.raises(ConnectionError, match="endpoint down"):
        await drive(OrchestraRunHooks(registry=registry), lookup_agent(model, []), "find k", mode)

    (end,) = events(log)
    assert (end["step"], end["error"], end["tool_calls"]) == (1, "model endpoint down", [])
    assert end["usage"] == {"input_tokens": None, "output_tokens": None}


async def test_a_step_hook_that_fails_or_times_out_is_recorded_and_the_run_goes_on(
    tmp_path: Path, mode: str
) -> None:
    log = tmp_path / "events.jsonl"
    broken = {
        "hooks": [
            {"type": "command", "command": "exit 3"},
            {"type": "command", "command": "sleep 30", "timeout": 1},
        ]
    }
    registry = write_config(tmp_path, {"StepStart": [broken, log_hook(log)]})
    ran: list[str] = []

    result = await drive(
        OrchestraRunHooks(registry=registry), lookup_agent(two_turns(), ran), "find k", mode
    )

    assert result.final_output == "found it"
    assert ran == ["k"]
    assert [e["step"] for e in events(log)] == [1, 2]  # the sibling hook still ran


MOCK = {"type": "command", "command": """echo '{"output": "cached value"}'"""}


async def test_a_mocked_call_skips_the_tool_and_still_fires_post_tool_use(
    tmp_path: Path, mode: str
) -> None:
    log = tmp_path / "events.jsonl"
    registry = write_config(
        tmp_path,
        {"PreToolUse": [{"matcher": "lookup", "hooks": [MOCK]}], "PostToolUse": [log_hook(log)]},
    )
    ran: list[str] = []
    model = two_turns()

    await drive(OrchestraRunHooks(registry=registry), lookup_agent(model, ran), "find k", mode)

    assert ran == []  # the tool was not called
    assert tool_outputs(model) == {"c1": "cached value"}
    (post,) = events(log)
    assert (post["tool_response"], post["mocked"]) == ("cached value", True)
    assert post["tool_input"] == {"key": "k"}


async def test_a_post_tool_use_rewrite_of_a_mock_is_what_the_model_reads(
    tmp_path: Path, mode: str
) -> None:
    rewrite = {"type": "command", "command": """echo '{"output": "checked value"}'"""}
    registry = write_config(
        tmp_path, {"PreToolUse": [{"hooks": [MOCK]}], "PostToolUse": [{"hooks": [rewrite]}]}
    )
    model = two_turns()

    await drive(OrchestraRunHooks(registry=registry), lookup_agent(model, []), "find k", mode)

    assert tool_outputs(model) == {"c1": "checked value"}


async def test_a_call_the_tool_answered_has_no_mocked_field(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    registry = write_config(tmp_path, {"PostToolUse": [log_hook(log)]})

    await OrchestraRunHooks(registry=registry).run(lookup_agent(two_turns(), []), "find k")

    (post,) = events(log)
    assert post["tool_response"] == "value of k"
    assert "mocked" not in post


async def test_a_critical_step_hook_is_a_hook_error_of_the_run_not_its_end(
    tmp_path: Path, mode: str
) -> None:
    log = tmp_path / "events.jsonl"
    critical = {"type": "command", "command": "exit 1", "on_error": "raise"}
    second = {"type": "command", "command": "exit 3", "on_error": "raise"}  # both reported
    registry = write_config(tmp_path, {"StepStart": [{"hooks": [critical, second]}, log_hook(log)]})
    results: list[SubagentResult] = []

    class Keep(SubagentHooks):
        def after_dispatch(self, ctx: SubagentHookContext, result: SubagentResult) -> None:
            results.append(result)

    bridge = OrchestraRunHooks([Keep()], registry=registry)
    result = await drive(bridge, lookup_agent(two_turns(), ran := []), "find k", mode)

    assert result.final_output == "found it"
    assert ran == ["k"]
    assert [e["step"] for e in events(log)] == [1, 2]  # its sibling ran each time
    (done,) = results
    errors = [e for e in done.hook_errors if isinstance(e, CriticalHookError)]
    assert [(e.event, e.error) for e in errors] == [
        ("StepStart", "exited 1"),
        ("StepStart", "exited 3"),
    ] * 2
