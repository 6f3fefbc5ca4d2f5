"""The OpenAI Agents SDK bridge: a real Runner.run on a scripted Model, offline."""

from __future__ import annotations

import copy
import json
import shlex
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, FunctionTool, Runner, UserError, function_tool
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from orchestra_openai_agents import OrchestraRunHooks, guard_agent, guard_tool, is_guarded
from sdk_scripted_model import ScriptedModel, call, hand_off, say

import orchestra.skills
import orchestra.tracing
from orchestra import (
    DispatchError,
    Fail,
    Retry,
    SubagentHookContext,
    SubagentHooks,
    SubagentResult,
    ToolDenied,
)

pytestmark = pytest.mark.anyio


class Recorder(SubagentHooks):
    def __init__(self, retry_failures: int = 0, fail_agent: str | None = None) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.retry_failures = retry_failures
        self.fail_agent = fail_agent

    def before_dispatch(self, ctx: SubagentHookContext) -> Fail | None:
        self.calls.append(
            (
                "before",
                ctx.subagent_name,
                ctx.parent_agent,
                ctx.delegated_from,
                ctx.attempt,
                ctx.task,
            )
        )
        return Fail("not today") if ctx.subagent_name == self.fail_agent else None

    async def after_dispatch(self, ctx: SubagentHookContext, result: SubagentResult) -> None:
        self.calls.append(("after", ctx.subagent_name, result.agent, result.output))

    def on_failure(self, ctx: SubagentHookContext, error: BaseException) -> Retry | None:
        self.calls.append(("failure", ctx.subagent_name, ctx.attempt, str(error)))
        return Retry() if ctx.attempt <= self.retry_failures else None


def write_config(
    tmp_path: Path, hooks: dict[str, list[dict[str, Any]]]
) -> orchestra.skills.HookRegistry:
    path = tmp_path / "orchestra.yaml"
    path.write_text(json.dumps({"hooks": hooks}))  # JSON is YAML
    return orchestra.skills.load(path)


def log_hook(log: Path) -> dict[str, Any]:
    """A command hook appending the event JSON it reads on stdin to ``log``."""
    quoted = shlex.quote(str(log))
    return {"hooks": [{"type": "command", "command": f"cat >> {quoted}; echo >> {quoted}"}]}


def events(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def summary(event: dict[str, Any]) -> tuple[Any, ...]:
    name = event["hook_event_name"]
    if name.endswith("ToolUse"):
        return (name, event["tool_name"], event["tool_input"], event.get("tool_response"))
    return (name, event["agent_name"], event.get("state"), event.get("parent_agent"))


def agents_with_tools(
    model: ScriptedModel, ran: list[tuple[int, int]]
) -> tuple[Agent[Any], Agent[Any]]:
    @function_tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        ran.append((a, b))
        return a + b

    math = Agent(name="math", instructions="Answer.", model=model)
    triage = Agent(name="triage", instructions="Route.", model=model, tools=[add], handoffs=[math])
    return triage, math


async def test_agents_handoffs_and_tools_fire_hooks_in_order(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    registry = write_config(
        tmp_path,
        {
            event: [log_hook(log)]
            for event in ("SubagentStart", "SubagentStop", "PreToolUse", "PostToolUse")
        },
    )
    ran: list[tuple[int, int]] = []
    model = ScriptedModel([])
    triage, math = agents_with_tools(model, ran)
    model.turns.extend(
        [
            [call("add", "c1", a=1, b=2)],
            [hand_off(math, "c2")],
            [say("the sum is 3")],
        ]
    )
    recorder = Recorder()
    bridge = OrchestraRunHooks([recorder], registry=registry, parent="caller")

    result = await bridge.run(triage, "what is 1 + 2?")

    assert result.final_output == "the sum is 3"
    assert ran == [(1, 2)]
    assert recorder.calls == [
        ("before", "triage", "caller", (), 1, "what is 1 + 2?"),
        ("after", "triage", "triage", None),
        ("before", "math", "triage", ("triage",), 1, "what is 1 + 2?"),
        ("after", "math", "math", "the sum is 3"),
    ]
    assert [summary(e) for e in events(log)] == [
        ("SubagentStart", "triage", None, "caller"),
        ("PreToolUse", "add", {"a": 1, "b": 2}, None),
        ("PostToolUse", "add", {"a": 1, "b": 2}, 3),
        ("SubagentStop", "triage", "handoff", "caller"),
        ("SubagentStart", "math", None, "triage"),
        ("SubagentStop", "math", "succeeded", "triage"),
    ]
    stop = events(log)[3]
    assert stop["handoff_to"] == "math"
    pre = events(log)[1]
    assert pre["tool_use_id"] == "c1"
    assert pre["agent_name"] == "triage"
    assert not is_guarded(triage.tools[0])  # the caller's agent is left as it was


async def test_pre_tool_use_deny_stops_the_call_and_tells_the_model(tmp_path: Path) -> None:
    registry = write_config(
        tmp_path,
        {
            "PreToolUse": [
                {
                    "matcher": "add",
                    "hooks": [{"type": "permission", "decision": "deny", "reason": "no maths"}],
                }
            ]
        },
    )
    ran: list[tuple[int, int]] = []
    model = ScriptedModel([])
    triage, _ = agents_with_tools(model, ran)
    model.turns.extend([[call("add", "c1", a=1, b=2)], [say("I may not add")]])

    result = await OrchestraRunHooks(registry=registry).run(triage, "1 + 2?")

    assert ran == []  # the tool never ran
    assert result.final_output == "I may not add"
    assert model.tool_outputs() == {"c1": "Tool call denied: no maths"}


async def test_pre_tool_use_deny_can_raise(tmp_path: Path) -> None:
    registry = write_config(
        tmp_path,
        {
            "PreToolUse": [
                {"hooks": [{"type": "permission", "decision": "deny", "reason": "never"}]}
            ]
        },
    )
    ran: list[tuple[int, int]] = []
    model = ScriptedModel([])
    triage, _ = agents_with_tools(model, ran)
    model.turns.extend([[call("add", "c1", a=1, b=2)]])
    recorder = Recorder()

    with pytest.raises(ToolDenied, match="never") as caught:
        await OrchestraRunHooks([recorder], registry=registry, on_deny="raise").run(
            triage, "1 + 2?"
        )

    assert caught.value.tool == "add"
    assert ran == []
    assert recorder.calls[-1] == ("failure", "triage", 1, str(caught.value))


@pytest.mark.parametrize(
    "result",
    [
        {"modified_input": {"a": 10, "b": 20}},
        {"hookSpecificOutput": {"hookEventName": "PreToolUse", "updatedInput": {"a": 10, "b": 20}}},
    ],
    ids=["orchestra-shape", "claude-code-shape"],
)
async def test_pre_tool_use_rewrite_is_what_the_tool_receives(
    tmp_path: Path, result: dict[str, Any]
) -> None:
    log = tmp_path / "events.jsonl"
    script = tmp_path / "rewrite.sh"
    script.write_text(f"#!/bin/sh\ncat > /dev/null\necho {shlex.quote(json.dumps(result))}\n")
    script.chmod(0o755)
    registry = write_config(
        tmp_path,
        {
            "PreToolUse": [
                {"matcher": "add", "hooks": [{"type": "command", "command": str(script)}]}
            ],
            "PostToolUse": [log_hook(log)],
        },
    )
    ran: list[tuple[int, int]] = []
    model = ScriptedModel([])
    triage, _ = agents_with_tools(model, ran)
    model.turns.extend([[call("add", "c1", a=1, b=2)], [say("done")]])

    await OrchestraRunHooks(registry=registry).run(triage, "1 + 2?")

    assert ran == [(10, 20)]
    assert model.tool_outputs() == {"c1": "30"}
    [post] = events(log)
    assert (post["tool_input"], post["tool_response"]) == ({"a": 10, "b": 20}, 30)


async def test_subagent_start_deny_stops_the_handoff(tmp_path: Path) -> None:
    registry = write_config(
        tmp_path,
        {
            "SubagentStart": [
                {
                    "matcher": "math",
                    "hooks": [
                        {"type": "permission", "decision": "deny", "reason": "math is closed"}
                    ],
                }
            ]
        },
    )
    model = ScriptedModel([])
    triage, math = agents_with_tools(model, [])
    model.turns.extend([[hand_off(math, "c1")], [say("unreachable")]])
    recorder = Recorder()

    with pytest.raises(DispatchError, match="math is closed") as caught:
        await OrchestraRunHooks([recorder], registry=registry).run(triage, "2 + 2?")

    assert caught.value.agent == "math"
    assert caught.value.delegated_from == ("triage",)
    assert [c[:2] for c in recorder.calls] == [
        ("before", "triage"),
        ("after", "triage"),
        ("before", "math"),
    ]


async def test_a_python_fail_stops_the_agent() -> None:
    model = ScriptedModel([[say("never said")]])
    agent = Agent(name="solo", instructions="Answer.", model=model)

    with pytest.raises(DispatchError, match="not today"):
        await OrchestraRunHooks([Recorder(fail_agent="solo")]).run(agent, "hi")
    assert model.inputs == []  # the model was never called


async def test_on_failure_retry_runs_again(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    registry = write_config(tmp_path, {"SubagentStop": [log_hook(log)]})
    model = ScriptedModel([RuntimeError("model down"), [say("back")]])
    agent = Agent(name="solo", instructions="Answer.", model=model)
    recorder = Recorder(retry_failures=1)

    result = await OrchestraRunHooks([recorder], registry=registry).run(agent, "hi")

    assert result.final_output == "back"
    assert recorder.calls == [
        ("before", "solo", None, (), 1, "hi"),
        ("failure", "solo", 1, "model down"),
        ("before", "solo", None, (), 2, "hi"),
        ("after", "solo", "solo", "back"),
    ]
    assert [(e["state"], e["attempt"], e["error"]) for e in events(log)] == [
        ("failed", 1, "model down"),
        ("succeeded", 2, None),
    ]


async def test_without_a_retry_the_sdk_error_propagates() -> None:
    model = ScriptedModel([RuntimeError("model down")])
    agent = Agent(name="solo", instructions="Answer.", model=model)
    recorder = Recorder()

    with pytest.raises(RuntimeError, match="model down"):
        await OrchestraRunHooks([recorder]).run(agent, "hi")
    assert recorder.calls[-1] == ("failure", "solo", 1, "model down")


async def test_the_hooks_work_with_the_sdk_runner_directly(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    registry = write_config(tmp_path, {"PreToolUse": [log_hook(log)]})
    ran: list[tuple[int, int]] = []
    model = ScriptedModel([])
    triage, _ = agents_with_tools(model, ran)
    model.turns.extend([[call("add", "c1", a=2, b=2)], [say("4")]])
    recorder = Recorder()
    hooks = OrchestraRunHooks([recorder], registry=registry)

    result = await Runner.run(guard_agent(triage, registry), "2 + 2?", hooks=hooks)

    assert result.final_output == "4"
    assert ran == [(2, 2)]
    assert [e["tool_name"] for e in events(log)] == ["add"]
    assert [c[0] for c in recorder.calls] == ["before", "after"]


def test_guard_tool_copies_and_survives_sdk_copies(tmp_path: Path) -> None:
    registry = write_config(tmp_path, {})

    @function_tool
    def echo(text: str) -> str:
        """Echo."""
        return text

    guarded = guard_tool(echo, registry)
    assert isinstance(guarded, FunctionTool)
    assert is_guarded(guarded)
    assert not is_guarded(echo)
    assert is_guarded(copy.copy(guarded))  # the SDK copies tools; the guard goes along
    assert guarded.name == echo.name
    assert guarded.params_json_schema == echo.params_json_schema
    with pytest.raises(TypeError, match="FunctionTool"):
        guard_tool(lambda: None, registry)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="on_deny"):
        guard_tool(echo, registry, on_deny="ignore")  # type: ignore[arg-type]


def test_guard_agent_follows_handoff_cycles(tmp_path: Path) -> None:
    registry = write_config(tmp_path, {})

    @function_tool
    def ping() -> str:
        """Ping."""
        return "pong"

    a = Agent(name="a", tools=[ping])
    b = Agent(name="b", tools=[ping], handoffs=[a])
    a.handoffs = [b]

    ga = guard_agent(a, registry)

    gb = ga.handoffs[0]
    assert isinstance(gb, Agent)
    assert gb.handoffs[0] is ga
    assert is_guarded(ga.tools[0])
    assert is_guarded(gb.tools[0])
    assert not is_guarded(a.tools[0])
    assert a.handoffs[0] is b


async def test_spans_follow_orchestra_tracing(tmp_path: Path) -> None:
    registry = write_config(
        tmp_path, {"PostToolUse": [{"hooks": [{"type": "prompt", "prompt": "ok"}]}]}
    )
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    orchestra.tracing.set_tracer_provider(provider)
    try:
        model = ScriptedModel([])
        triage, math = agents_with_tools(model, [])
        model.turns.extend([[call("add", "c1", a=1, b=1)], [hand_off(math, "c2")], [say("2")]])
        await OrchestraRunHooks(registry=registry).run(triage, "1 + 1?")
    finally:
        orchestra.tracing.set_tracer_provider(None)

    spans = {s.name: s for s in exporter.get_finished_spans()}
    assert {"invoke_agent triage", "invoke_agent math", "execute_tool add"} <= set(spans)
    tool, triage_span = spans["execute_tool add"], spans["invoke_agent triage"]
    assert tool.parent is not None
    assert triage_span.context is not None
    assert tool.parent.span_id == triage_span.context.span_id
    assert tool.attributes is not None
    assert tool.attributes["gen_ai.tool.name"] == "add"
    math_span = spans["invoke_agent math"]
    assert math_span.attributes is not None
    assert math_span.attributes["gen_ai.agent.name"] == "math"
    assert list(math_span.attributes["orchestra.agent.delegated_from"]) == ["triage"]


async def test_one_hooks_object_serves_concurrent_runs(tmp_path: Path) -> None:
    import anyio

    recorder = Recorder()
    hooks = OrchestraRunHooks([recorder])
    first = Agent(name="first", model=ScriptedModel([[say("1")]]))
    second = Agent(name="second", model=ScriptedModel([[say("2")]]))
    outputs: dict[str, Any] = {}

    async def run(agent: Agent[Any]) -> None:
        outputs[agent.name] = (await hooks.run(agent, f"to {agent.name}")).final_output

    async with anyio.create_task_group() as tg:
        tg.start_soon(run, first)
        tg.start_soon(run, second)

    assert outputs == {"first": "1", "second": "2"}
    afters = sorted(c for c in recorder.calls if c[0] == "after")
    assert afters == [("after", "first", "first", "1"), ("after", "second", "second", "2")]
    befores = sorted(c for c in recorder.calls if c[0] == "before")
    assert [b[5] for b in befores] == ["to first", "to second"]


@pytest.mark.parametrize(
    ("hook", "refusal"),
    [
        ({"type": "permission", "decision": "deny", "reason": "unguarded no"}, "unguarded no"),
        ({"type": "command", "command": """echo '{"modified_input": {"a": 0}}'"""}, "rewrote"),
    ],
    ids=["deny", "rewrite"],
)
async def test_an_unguarded_tool_fails_closed(
    tmp_path: Path, hook: dict[str, Any], refusal: str
) -> None:
    registry = write_config(tmp_path, {"PreToolUse": [{"hooks": [hook]}]})
    ran: list[tuple[int, int]] = []
    model = ScriptedModel([])
    triage, _ = agents_with_tools(model, ran)
    model.turns.extend([[call("add", "c1", a=1, b=2)], [say("unreachable")]])

    # Not guarded: PreToolUse fires from on_tool_start, where the SDK cannot skip the call.
    with pytest.raises(UserError) as caught:
        await Runner.run(triage, "1 + 2?", hooks=OrchestraRunHooks(registry=registry))

    assert isinstance(caught.value.__cause__, ToolDenied)
    assert refusal in str(caught.value.__cause__)
    assert ran == []


async def test_an_unguarded_tool_fires_pre_and_post_tool_use(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    registry = write_config(
        tmp_path, {"PreToolUse": [log_hook(log)], "PostToolUse": [log_hook(log)]}
    )
    ran: list[tuple[int, int]] = []
    model = ScriptedModel([])
    triage, _ = agents_with_tools(model, ran)
    model.turns.extend([[call("add", "c1", a=3, b=4)], [say("7")]])

    await Runner.run(triage, "3 + 4?", hooks=OrchestraRunHooks(registry=registry))

    assert ran == [(3, 4)]
    assert [summary(e) for e in events(log)] == [
        ("PreToolUse", "add", {"a": 3, "b": 4}, None),
        ("PostToolUse", "add", {"a": 3, "b": 4}, 7),
    ]


def test_public_names() -> None:
    import orchestra_openai_agents

    assert sorted(orchestra_openai_agents.__all__) == [
        "AskCallback",
        "OnDeny",
        "OrchestraRunHooks",
        "guard_agent",
        "guard_tool",
        "is_guarded",
    ]
    assert OrchestraRunHooks.__module__ == "orchestra_openai_agents"
