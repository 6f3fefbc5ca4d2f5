"""``orchestra.skills.StepEvents``: the step events every agent bridge fires, built once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestra import HookError
from orchestra.skills import CommandHook, CriticalHookError, HookRegistry, StepEvents

pytestmark = pytest.mark.anyio


def _appending(event: str, path: Path) -> CommandHook:
    return CommandHook(event=event, command=f"(cat; echo) >> {path}")


async def test_begin_and_finish_fire_the_catalog_fields(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    steps = StepEvents(HookRegistry([_appending("StepStart", log), _appending("StepEnd", log)]))
    errors: list[HookError] = []
    assert (steps.start, steps.end, steps.watching) == (True, True, True)
    turn = await steps.begin(
        errors.append, agent_name="ops", step=1, model=object(), message_count=2, node="llm"
    )
    await steps.finish(
        turn,
        errors.append,
        tool_calls=("lookup",),
        input_tokens=5,
        content="Looking it up.",
        tool_results=[{"tool_name": "search", "tool_call_id": "c1", "output": {"hits": (1, 2)}}],
    )
    start, end = (json.loads(line) for line in log.read_text().splitlines())
    fields = {"agent_name": "ops", "step": 1, "model": None, "message_count": 2, "node": "llm"}
    assert {k: start[k] for k in fields} == fields
    assert start["hook_event_name"] == "StepStart"
    assert {k: end[k] for k in fields} == fields
    assert (end["tool_calls"], end["error"]) == (["lookup"], None)
    assert end["usage"] == {"input_tokens": 5, "output_tokens": None}
    assert end["duration_ms"] >= 0
    # lobehub's afterStep: the step's content and the tool results it read
    assert end["content"] == "Looking it up."
    assert end["tool_results"] == [
        {"tool_name": "search", "tool_call_id": "c1", "output": {"hits": [1, 2]}}
    ]
    assert errors == []


async def test_a_failed_turn_ends_with_its_error_and_nothing_listens_without_hooks(
    tmp_path: Path,
) -> None:
    log = tmp_path / "events.jsonl"
    steps = StepEvents(HookRegistry([_appending("StepEnd", log)]))
    assert (steps.start, steps.end) == (False, True)
    errors: list[HookError] = []
    turn = await steps.begin(errors.append, agent_name="a", step=3, model="m", message_count=None)
    await steps.finish(turn, errors.append, error=TimeoutError())
    (end,) = (json.loads(line) for line in log.read_text().splitlines())
    assert (end["step"], end["model"], end["error"]) == (3, "m", "TimeoutError")
    assert (end["content"], end["tool_results"]) == (None, [])
    assert not StepEvents(None).watching
    assert not StepEvents(HookRegistry()).watching


async def test_each_critical_hook_that_failed_is_recorded_not_raised(tmp_path: Path) -> None:
    steps = StepEvents(
        HookRegistry(
            [
                CommandHook(event="StepStart", command="exit 1", on_error="raise"),
                CommandHook(event="StepStart", command="exit 3", on_error="raise"),
            ]
        )
    )
    errors: list[HookError] = []
    await steps.begin(errors.append, agent_name="a", step=1, model=None, message_count=0)
    assert [type(e) for e in errors] == [CriticalHookError, CriticalHookError]
    assert [e.error for e in errors if isinstance(e, CriticalHookError)] == [
        "exited 1",
        "exited 3",
    ]
