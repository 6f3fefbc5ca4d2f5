"""OrchestraCapability in real pydantic-ai agents, driven by pydantic-ai's FunctionModel."""

from __future__ import annotations

import asyncio
import json
import shlex
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from orchestra_pydantic_ai import OrchestraCapability
from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel

import orchestra
import orchestra.skills
from orchestra import DispatchError, Fail, Replace, Retry, Skip, SubagentHooks, TaskHooks

pytestmark = pytest.mark.anyio


def write_config(tmp_path: Path, hooks: dict[str, Any]) -> orchestra.skills.HookRegistry:
    path = tmp_path / "orchestra.yaml"
    path.write_text(json.dumps({"hooks": hooks}))  # JSON is YAML
    return orchestra.skills.load(path)


def permission(decision: str, reason: str, matcher: str = "delete") -> dict[str, Any]:
    hook = {"type": "permission", "decision": decision, "reason": reason}
    return {"matcher": matcher, "hooks": [hook]}


def command(script: str, matcher: str = "delete", **fields: Any) -> dict[str, Any]:
    return {"matcher": matcher, "hooks": [{"type": "command", "command": script, **fields}]}


def log_to(log: Path) -> dict[str, Any]:
    log.mkdir(exist_ok=True)
    return command(f'cat > "$(mktemp -p {shlex.quote(str(log))})"', matcher="*")


def logged(log: Path) -> list[dict[str, Any]]:
    return [json.loads(path.read_text()) for path in sorted(log.iterdir())]


class Script:
    """A FunctionModel script: the tool calls of the first turn, then a text that quotes
    the tool returns the model read."""

    def __init__(self, *calls: tuple[str, dict[str, Any]]) -> None:
        self.calls = calls
        self.read: list[ToolReturnPart] = []
        self.turns = 0

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.turns += 1
        returns = [
            p
            for m in messages
            if isinstance(m, ModelRequest)
            for p in m.parts
            if isinstance(p, ToolReturnPart)
        ]
        if returns or not self.calls:
            self.read = returns
            return ModelResponse(parts=[TextPart(" | ".join(str(p.content) for p in returns))])
        return ModelResponse(
            parts=[
                ToolCallPart(name, args, tool_call_id=f"c{i}")
                for i, (name, args) in enumerate(self.calls, 1)
            ]
        )


def ops_agent(
    script: Script, capability: OrchestraCapability, ran: list[str], **kw: Any
) -> Agent[None, Any]:
    agent: Agent[None, Any] = Agent(
        FunctionModel(script), capabilities=[capability], name="ops", **kw
    )

    @agent.tool_plain
    def delete(path: str) -> str:
        """Delete a file."""
        ran.append(path)
        if path == "/boom":
            raise OSError("disk on fire")
        return f"deleted {path}"

    return agent


async def test_a_denied_call_tells_the_model_and_the_run_goes_on(tmp_path: Path) -> None:
    ran: list[str] = []
    script = Script(("delete", {"path": "/"}))
    registry = write_config(tmp_path, {"PreToolUse": [permission("deny", "never delete /")]})
    result = await ops_agent(script, OrchestraCapability(registry=registry), ran).run("clean")

    assert ran == []
    (denied,) = script.read
    assert denied.content == "never delete /"
    assert denied.outcome == "denied"
    assert result.output == "never delete /"


async def test_a_modified_input_is_what_the_tool_gets(tmp_path: Path) -> None:
    ran: list[str] = []
    rewrite = json.dumps({"modified_input": {"path": "/tmp/sandbox"}})
    registry = write_config(tmp_path, {"PreToolUse": [command(f"echo {shlex.quote(rewrite)}")]})
    script = Script(("delete", {"path": "/etc"}))
    result = await ops_agent(script, OrchestraCapability(registry=registry), ran).run("clean")

    assert ran == ["/tmp/sandbox"]
    assert result.output == "deleted /tmp/sandbox"


async def test_ask_is_pydantic_ais_approval(tmp_path: Path) -> None:
    ran: list[str] = []
    registry = write_config(tmp_path, {"PreToolUse": [permission("ask", "deleting needs a human")]})
    script = Script(("delete", {"path": "/data"}))
    agent = ops_agent(
        script, OrchestraCapability(registry=registry), ran, output_type=[str, DeferredToolRequests]
    )

    first = await agent.run("clean")
    assert isinstance(first.output, DeferredToolRequests)
    (pending,) = first.output.approvals
    assert pending.tool_name == "delete"
    assert first.output.metadata[pending.tool_call_id]["reason"] == "deleting needs a human"
    assert ran == []

    approved = DeferredToolResults(approvals={pending.tool_call_id: True})
    second = await agent.run(message_history=first.all_messages(), deferred_tool_results=approved)
    assert ran == ["/data"]
    assert second.output == "deleted /data"


async def test_post_tool_use_and_failure_see_each_call(tmp_path: Path) -> None:
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

    class SkipFailures(TaskHooks):  # the failing call is given up, the run goes on
        def on_failure(self, ctx: orchestra.TaskHookContext, error: BaseException) -> Skip:
            return Skip("disk trouble")

    script = Script(("delete", {"path": "/a"}), ("delete", {"path": "/boom"}))
    capability = OrchestraCapability([SkipFailures()], registry=registry)
    result = await ops_agent(script, capability, ran).run("clean")

    assert sorted(ran) == ["/a", "/boom"]
    events = logged(log)
    assert {(e["hook_event_name"], e["tool_use_id"]) for e in events} == {
        ("PreToolUse", "c1"),
        ("PreToolUse", "c2"),
        ("PostToolUse", "c1"),
        ("PostToolUseFailure", "c2"),
    }
    post = next(e for e in events if e["hook_event_name"] == "PostToolUse")
    assert post["tool_response"] == "deleted /a"
    assert post["agent_name"] == "ops"
    failure = next(e for e in events if e["hook_event_name"] == "PostToolUseFailure")
    assert failure["error"] == "disk on fire"
    assert failure["error_type"] == "OSError"
    assert result.output == "deleted /a | Tool call skipped: disk trouble"


async def test_a_post_tool_use_rewrite_is_what_the_model_reads(tmp_path: Path) -> None:
    redact = json.dumps({"output": "[redacted]"})
    registry = write_config(tmp_path, {"PostToolUse": [command(f"echo {shlex.quote(redact)}")]})
    ran: list[str] = []
    script = Script(("delete", {"path": "/a"}))
    result = await ops_agent(script, OrchestraCapability(registry=registry), ran).run("clean")
    assert ran == ["/a"]
    assert result.output == "[redacted]"


async def test_task_hooks_retry_skip_fail_and_replace_tool_calls() -> None:
    ran: list[str] = []
    flaky = {"n": 0}

    class Policy(TaskHooks):
        def before_execute(self, ctx: orchestra.TaskHookContext) -> Any:
            path = ctx.inputs["path"]
            if path == "/skip":
                return Skip("not today")
            if path == "/fail":
                return Fail("forbidden path")
            if path == "/old":
                return Replace({"path": "/new"})
            return None

        def on_failure(self, ctx: orchestra.TaskHookContext, error: BaseException) -> Retry | None:
            return Retry() if isinstance(error, ConnectionError) and ctx.attempt < 3 else None

        def after_execute(self, ctx: orchestra.TaskHookContext, result: Any) -> Replace | None:
            return Replace(result.upper()) if ctx.inputs["path"] == "/new" else None

    agent: Agent[None, Any] = Agent(
        FunctionModel(
            Script(
                ("fetch", {"path": "/flaky"}),
                ("fetch", {"path": "/skip"}),
                ("fetch", {"path": "/fail"}),
                ("fetch", {"path": "/old"}),
            )
        ),
        capabilities=[OrchestraCapability([Policy()])],
        name="ops",
    )

    @agent.tool_plain
    def fetch(path: str) -> str:
        """Fetch a path."""
        ran.append(path)
        if path == "/flaky":
            flaky["n"] += 1
            if flaky["n"] < 3:
                raise ConnectionError("503")
        return f"got {path}"

    result = await agent.run("go")
    assert sorted(ran) == ["/flaky", "/flaky", "/flaky", "/new"]  # calls run concurrently
    assert result.output == " | ".join(
        ["got /flaky", "Tool call skipped: not today", "forbidden path", "GOT /NEW"]
    )


async def test_a_tool_failure_nobody_recovers_fails_the_run_as_pydantic_ai_does() -> None:
    class Watch(TaskHooks):
        def __init__(self) -> None:
            self.ends: list[str] = []

        def on_end(self, ctx: orchestra.TaskHookContext, state: orchestra.TaskState) -> None:
            self.ends.append(f"{ctx.task.id}:{state.value}:{ctx.attempt}")

    watch = Watch()
    ran: list[str] = []
    agent = ops_agent(Script(("delete", {"path": "/boom"})), OrchestraCapability([watch]), ran)
    with pytest.raises(OSError, match="disk on fire"):
        await agent.run("clean")
    assert watch.ends == ["delete:failed:1"]


class Recorder(SubagentHooks):
    def __init__(self) -> None:
        self.seen: list[tuple[Any, ...]] = []

    def before_dispatch(self, ctx: orchestra.SubagentHookContext) -> None:
        self.seen.append(("before", ctx.subagent_name, ctx.parent_agent, ctx.task, ctx.attempt))

    def after_dispatch(
        self, ctx: orchestra.SubagentHookContext, result: orchestra.SubagentResult
    ) -> None:
        self.seen.append(("after", ctx.subagent_name, result.output))


async def test_agent_runs_are_subagent_dispatches_nested_too() -> None:
    recorder = Recorder()
    capability = OrchestraCapability([recorder])
    helper: Agent[None, str] = Agent(
        TestModel(custom_output_text="42"), name="helper", capabilities=[capability]
    )
    boss: Agent[None, Any] = Agent(
        FunctionModel(Script(("ask_helper", {"question": "answer?"}))),
        name="boss",
        capabilities=[capability],
    )

    @boss.tool_plain
    async def ask_helper(question: str) -> str:
        """Ask the helper agent."""
        return (await helper.run(question)).output

    result = await boss.run("what is it?")
    assert result.output == "42"
    assert recorder.seen == [
        ("before", "boss", None, "what is it?", 1),
        ("before", "helper", "boss", "answer?", 1),
        ("after", "helper", "42"),
        ("after", "boss", "42"),
    ]


async def test_before_dispatch_fail_and_subagent_start_deny_raise_dispatch_error(
    tmp_path: Path,
) -> None:
    class Closed(SubagentHooks):
        def before_dispatch(self, ctx: orchestra.SubagentHookContext) -> Fail:
            return Fail("maintenance window")

    model = TestModel()
    agent: Agent[None, str] = Agent(
        model, name="ops", capabilities=[OrchestraCapability([Closed()])]
    )
    with pytest.raises(DispatchError, match="maintenance window"):
        await agent.run("go")

    registry = write_config(
        tmp_path, {"SubagentStart": [permission("deny", "ops is off", matcher="*")]}
    )
    agent = Agent(model, name="ops", capabilities=[OrchestraCapability(registry=registry)])
    with pytest.raises(DispatchError, match="ops is off"):
        await agent.run("go")


async def test_after_dispatch_replace_changes_the_output() -> None:
    class Redact(SubagentHooks):
        def after_dispatch(
            self, ctx: orchestra.SubagentHookContext, result: orchestra.SubagentResult
        ) -> Replace:
            return Replace(result.output.replace("secret", "[redacted]"))

    agent: Agent[None, str] = Agent(
        TestModel(custom_output_text="the secret is 42"),
        name="ops",
        capabilities=[OrchestraCapability([Redact()])],
    )
    assert (await agent.run("go")).output == "the [redacted] is 42"


async def test_on_failure_retry_calls_the_model_again() -> None:
    calls = {"n": 0}

    def flaky_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        calls["n"] += 1
        if calls["n"] < 3:
            raise ConnectionError("model endpoint 503")
        return ModelResponse(parts=[TextPart("fine")])

    class RetryModel(SubagentHooks):
        def __init__(self) -> None:
            self.attempts: list[int] = []

        def on_failure(self, ctx: orchestra.SubagentHookContext, error: BaseException) -> Retry:
            self.attempts.append(ctx.attempt)
            return Retry(delay=0.01)

    hooks = RetryModel()
    agent: Agent[None, str] = Agent(
        FunctionModel(flaky_model), name="ops", capabilities=[OrchestraCapability([hooks])]
    )
    assert (await agent.run("go")).output == "fine"
    assert calls["n"] == 3
    assert hooks.attempts == [1, 2]

    calls["n"] = 0
    capped = OrchestraCapability([RetryModel()], max_attempts=2)
    agent = Agent(FunctionModel(flaky_model), name="ops", capabilities=[capped])
    with pytest.raises(ConnectionError):
        await agent.run("go")
    assert calls["n"] == 2


class Raises(TaskHooks):
    def before_execute(self, ctx: orchestra.TaskHookContext) -> None:
        raise RuntimeError("hook bug")


class Slow(TaskHooks):
    timeout = 0.05

    async def before_execute(self, ctx: orchestra.TaskHookContext) -> None:
        await asyncio.sleep(5)


class Garbage(TaskHooks):
    def before_execute(self, ctx: orchestra.TaskHookContext) -> Any:
        return "not a decision"


@pytest.mark.parametrize("bad", [Raises, Slow, Garbage])
async def test_a_bad_python_hook_is_recorded_and_the_run_goes_on(bad: type[TaskHooks]) -> None:
    ran: list[str] = []
    capability = OrchestraCapability([bad()])
    result = await ops_agent(Script(("delete", {"path": "/a"})), capability, ran).run("clean")
    assert ran == ["/a"]
    assert result.output == "deleted /a"
    (error,) = capability.hook_errors
    assert error.moment == "before_execute"


@pytest.mark.parametrize(
    "script", ["exit 1", "echo 'not json {'", "sleep 5"], ids=["crashes", "garbage", "times-out"]
)
async def test_a_broken_yaml_hook_follows_on_error(tmp_path: Path, script: str) -> None:
    # PreToolUse defaults to on_error: block (the model is told); on_error: continue fails open
    ran: list[str] = []
    registry = write_config(tmp_path, {"PreToolUse": [command(script, timeout=1)]})
    out = await ops_agent(
        Script(("delete", {"path": "/a"})), OrchestraCapability(registry=registry), ran
    ).run("x")
    assert ran == []
    assert "hook error" in out.output

    registry = write_config(
        tmp_path, {"PreToolUse": [command(script, timeout=1, on_error="continue")]}
    )
    out = await ops_agent(
        Script(("delete", {"path": "/a"})), OrchestraCapability(registry=registry), ran
    ).run("x")
    assert ran == ["/a"]
    assert out.output == "deleted /a"


async def test_one_trace_agent_and_tool_spans(
    tmp_path: Path, exporter: InMemorySpanExporter
) -> None:
    registry = write_config(tmp_path, {"PreToolUse": [permission("deny", "no")]})
    await ops_agent(
        Script(("delete", {"path": "/"})), OrchestraCapability(registry=registry), []
    ).run("x")
    spans = exporter.get_finished_spans()
    agent = next(s for s in spans if s.name == "invoke_agent ops")
    tool = next(s for s in spans if s.name == "execute_tool delete")
    assert tool.parent is not None
    assert tool.parent.span_id == agent.context.span_id
    assert tool.attributes is not None
    assert tool.attributes["orchestra.tool.decision"] == "deny"
    assert len({s.context.trace_id for s in spans}) == 1


async def test_refusals_name_the_problem() -> None:
    with pytest.raises(TypeError, match="neither a TaskHooks"):
        OrchestraCapability([object()])
    with pytest.raises(ValueError, match="max_attempts"):
        OrchestraCapability(max_attempts=0)


async def test_an_agent_run_inside_a_guarded_tool_follows_its_policy(tmp_path: Path) -> None:
    """The ambient policy: a capability given nothing, run inside a ``@registry.guard``."""
    registry = write_config(tmp_path, {"PreToolUse": [permission("deny", "never delete /")]})
    ran: list[str] = []
    script = Script(("delete", {"path": "/"}))
    inner = ops_agent(script, OrchestraCapability(), ran)  # no registry of its own

    @registry.guard("research")
    async def research(topic: str) -> str:
        return str((await inner.run(topic)).output)

    assert await research(topic="disk") == "never delete /"
    assert ran == []
    alone = Script(("delete", {"path": "/"}))
    await ops_agent(alone, OrchestraCapability(), ran).run("disk")  # outside: unguarded
    assert ran == ["/"]
