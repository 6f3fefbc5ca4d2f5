"""Failures: per-tool retry, model-call retry, a safe whole-run retry, streamed failures."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, FunctionTool, SQLiteSession, default_tool_error_function, function_tool
from agents.testing import ScriptedModel, assistant_message, function_call
from bridge_helpers import (
    SpanLedger,
    drive,
    events,
    log_hook,
    names,
    permission,
    tool_outputs,
    write_config,
)
from orchestra_openai_agents import OrchestraRunHooks
from tenacity import retry_if_exception_type

from orchestra import (
    Delegate,
    DispatchError,
    Fail,
    Retry,
    RetryPolicy,
    Skip,
    SubagentHookContext,
    SubagentHooks,
    SubagentResult,
    TaskHookContext,
    TaskHooks,
)

pytestmark = pytest.mark.anyio


class Agents(SubagentHooks):
    """Records every agent moment; answers Retry to the first ``retries`` failures."""

    def __init__(self, retries: int = 0, fail: str | None = None) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.retries = retries
        self.fail = fail

    def before_dispatch(self, ctx: SubagentHookContext) -> Fail | None:
        self.calls.append(("before", ctx.subagent_name, ctx.attempt))
        return Fail("not today") if ctx.subagent_name == self.fail else None

    def after_dispatch(self, ctx: SubagentHookContext, result: SubagentResult) -> None:
        self.calls.append(("after", ctx.subagent_name, result.output))

    def on_failure(self, ctx: SubagentHookContext, error: BaseException) -> Retry | None:
        self.calls.append(("failure", ctx.subagent_name, ctx.attempt, type(error).__name__))
        failures = len([c for c in self.calls if c[0] == "failure"])
        return Retry() if failures <= self.retries else None


class Tools(TaskHooks):
    """Records every tool-call moment; ``answer`` decides failures."""

    def __init__(self, answer: Any = None) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.answer = answer

    def before_execute(self, ctx: TaskHookContext) -> None:
        self.calls.append(("before", ctx.task.id, ctx.attempt, ctx.executor))

    def after_execute(self, ctx: TaskHookContext, result: Any) -> None:
        self.calls.append(("after", ctx.task.id, ctx.attempt, result))

    def on_failure(self, ctx: TaskHookContext, error: BaseException) -> Any:
        self.calls.append(("failure", ctx.task.id, ctx.attempt, type(error).__name__))
        return self.answer


def flaky_tool(
    calls: list[int], error: Exception, failures: int = 1, **options: Any
) -> FunctionTool:
    @function_tool(**options)
    def fetch(page: int) -> str:
        """Fetch a page."""
        calls.append(page)
        if len(calls) <= failures:
            raise error
        return f"page {page}"

    return fetch


@pytest.mark.parametrize("failure_error_function", ["default", None])
async def test_a_tool_failure_is_retried_alone(mode: str, failure_error_function: Any) -> None:
    calls: list[int] = []
    options = {} if failure_error_function == "default" else {"failure_error_function": None}
    tool = flaky_tool(calls, ConnectionError("connection reset"), **options)
    model = ScriptedModel(
        [[function_call("fetch", {"page": 3}, call_id="f1")], [assistant_message("got it")]]
    )
    agent = Agent(name="reader", model=model, tools=[tool])
    tools = Tools()
    policy = RetryPolicy(retry=retry_if_exception_type(ConnectionError))

    result = await drive(OrchestraRunHooks([tools, policy]), agent, "read page 3", mode)

    assert calls == [3, 3]  # the tool ran again, nothing else did
    assert len(model.calls) == 2
    assert tool_outputs(model) == {"f1": "page 3"}
    assert result.final_output == "got it"
    assert tools.calls == [
        ("before", "fetch", 1, "reader"),
        ("failure", "fetch", 1, "ConnectionError"),  # the tool's own exception
        ("before", "fetch", 2, "reader"),
        ("after", "fetch", 2, "page 3"),
    ]


def sdk_default_message(error: Exception) -> str:
    """What the SDK's own default ``failure_error_function`` tells the model (its words
    change between releases: 0.24 added "Please try again.", 0.25 does not)."""
    return default_tool_error_function(None, error)  # type: ignore[arg-type]  # unused ctx


async def test_a_failure_no_hook_recovers_follows_the_tools_policy(
    tmp_path: Path, mode: str
) -> None:
    log = tmp_path / "events.jsonl"
    registry = write_config(tmp_path, {"PostToolUseFailure": [log_hook(log)]})
    calls: list[int] = []
    tool = flaky_tool(calls, ValueError("no such page"))
    model = ScriptedModel(
        [[function_call("fetch", {"page": 9}, call_id="f1")], [assistant_message("sorry")]]
    )
    agent = Agent(name="reader", model=model, tools=[tool])
    policy = RetryPolicy(retry=retry_if_exception_type(ConnectionError))

    await drive(OrchestraRunHooks([policy], registry=registry), agent, "read page 9", mode)

    assert calls == [9]
    # The SDK's default failure_error_function: its own message, as without the bridge.
    assert tool_outputs(model) == {"f1": sdk_default_message(ValueError("no such page"))}
    [failure] = events(log)
    assert (failure["tool_name"], failure["error_type"]) == ("fetch", "ValueError")


async def test_an_unhandled_tool_error_ends_the_run_with_the_original_exception(
    mode: str,
) -> None:
    calls: list[int] = []
    tool = flaky_tool(calls, KeyError("page"), failure_error_function=None)
    model = ScriptedModel([[function_call("fetch", {"page": 1}, call_id="f1")]])
    agent = Agent(name="reader", model=model, tools=[tool])
    agents = Agents()

    with pytest.raises(KeyError, match="page"):  # not the SDK's UserError wrapper
        await drive(OrchestraRunHooks([agents]), agent, "read", mode)

    assert agents.calls == [("before", "reader", 1), ("failure", "reader", 1, "KeyError")]


@pytest.mark.parametrize(
    ("answer", "told"),
    [
        (Skip("the archive is down"), "Tool call skipped: the archive is down"),
        (Fail("give up"), None),  # None: the SDK's default failure_error_function's message
    ],
    ids=["skip", "fail"],
)
async def test_on_failure_skip_and_fail(answer: Any, told: str | None) -> None:
    calls: list[int] = []
    model = ScriptedModel(
        [[function_call("fetch", {"page": 1}, call_id="f1")], [assistant_message("ok")]]
    )
    agent = Agent(name="reader", model=model, tools=[flaky_tool(calls, OSError("down"), 9)])

    await OrchestraRunHooks([Tools(answer)]).run(agent, "read")

    assert calls == [1]
    assert tool_outputs(model) == {"f1": told or sdk_default_message(OSError("down"))}


@pytest.mark.parametrize(
    ("answer", "told"),
    [
        (Skip("not needed"), "Tool call skipped: not needed"),
        (Fail("not allowed"), "Tool call denied: not allowed"),
    ],
    ids=["skip", "fail"],
)
async def test_before_execute_can_stop_a_call(answer: Any, told: str) -> None:
    class Stop(TaskHooks):
        def before_execute(self, ctx: TaskHookContext) -> Any:
            return answer

    calls: list[int] = []
    model = ScriptedModel(
        [[function_call("fetch", {"page": 1}, call_id="f1")], [assistant_message("ok")]]
    )
    agent = Agent(name="reader", model=model, tools=[flaky_tool(calls, OSError(), 0)])

    await OrchestraRunHooks([Stop()]).run(agent, "read")

    assert calls == []
    assert tool_outputs(model) == {"f1": told}


def shell(ran: list[str]) -> FunctionTool:
    @function_tool
    def run_shell(command: str) -> str:
        """Run a shell command."""
        ran.append(command)
        return "ok"

    return run_shell


async def test_a_model_error_retries_only_the_model_call(mode: str) -> None:
    ran: list[str] = []
    model = ScriptedModel(
        [
            [function_call("run_shell", {"command": "deploy --prod"}, call_id="d1")],
            RuntimeError("503 Service Unavailable"),
            [assistant_message("deployed")],
        ]
    )
    agent = Agent(name="ops", model=model, tools=[shell(ran)])
    session = SQLiteSession("deploys")
    agents = Agents(retries=1)

    result = await drive(OrchestraRunHooks([agents]), agent, "deploy", mode, session=session)

    assert result.final_output == "deployed"
    assert ran == ["deploy --prod"]  # the tool call that succeeded was not replayed
    assert agents.calls == [
        ("before", "ops", 1),
        ("failure", "ops", 1, "RuntimeError"),  # the model call's first attempt
        ("after", "ops", "deployed"),
    ]
    items = await session.get_items()
    assert [item.get("role") or item.get("type") for item in items] == [
        "user",
        "function_call",
        "function_call_output",
        "assistant",
    ]


async def test_a_rerun_that_would_repeat_a_tool_call_is_refused(
    mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    ran: list[str] = []
    broken = flaky_tool([], KeyError("disk"), failure_error_function=None)
    model = ScriptedModel(
        [
            [function_call("run_shell", {"command": "deploy"}, call_id="d1")],
            [function_call("fetch", {"page": 1}, call_id="f1")],
        ]
    )
    agent = Agent(name="ops", model=model, tools=[shell(ran), broken])
    agents = Agents(retries=5)

    with caplog.at_level(logging.WARNING, "orchestra"), pytest.raises(KeyError):
        await drive(OrchestraRunHooks([agents]), agent, "deploy", mode)

    assert ran == ["deploy"]  # once
    why = "1 tool call(s) ran to their end" if mode == "run" else "streamed already"
    assert "a Retry of the run of 'ops' was not carried out: " in caplog.text
    assert why in caplog.text


async def test_a_safe_rerun_starts_over_without_duplicating_the_session() -> None:
    calls: list[int] = []
    broken = flaky_tool(calls, KeyError("disk"), failure_error_function=None)
    model = ScriptedModel(
        [
            [function_call("fetch", {"page": 1}, call_id="f1")],  # fails: the run fails
            [function_call("fetch", {"page": 1}, call_id="f2")],  # the rerun
            [assistant_message("page 1")],
        ]
    )
    agent = Agent(name="reader", model=model, tools=[broken])
    session = SQLiteSession("reads")
    agents = Agents(retries=1)

    result = await OrchestraRunHooks([agents]).run(agent, "read", session=session)

    assert result.final_output == "page 1"
    assert calls == [1, 1]
    assert [c[:3] for c in agents.calls] == [
        ("before", "reader", 1),
        ("failure", "reader", 1),
        ("before", "reader", 2),
        ("after", "reader", "page 1"),
    ]
    items = await session.get_items()
    assert [item.get("role") or item.get("type") for item in items] == [
        "user",  # once
        "function_call",
        "function_call_output",
        "assistant",
    ]


async def test_a_rerun_stops_at_the_attempt_cap(caplog: pytest.LogCaptureFixture) -> None:
    calls: list[int] = []
    broken = flaky_tool(calls, KeyError("disk"), failures=5, failure_error_function=None)
    model = ScriptedModel(
        [[function_call("fetch", {"page": n}, call_id=f"f{n}")] for n in (1, 2, 3)]
    )
    agent = Agent(name="reader", model=model, tools=[broken])
    agents = Agents(retries=5)

    with caplog.at_level(logging.WARNING, "orchestra"), pytest.raises(KeyError):
        await OrchestraRunHooks([agents], max_attempts=2).run(agent, "read")

    assert calls == [1, 2]  # two attempts, then the cap
    assert [c[:3] for c in agents.calls if c[0] == "failure"] == [
        ("failure", "reader", 1),
        ("failure", "reader", 2),
    ]
    assert "a Retry of the run of 'reader' was not carried out: " in caplog.text
    assert "the run made 2 attempts (max_attempts)" in caplog.text


async def test_a_failed_run_is_handled_on_every_path(
    tmp_path: Path, mode: str, spans: SpanLedger
) -> None:
    log = tmp_path / "events.jsonl"
    registry = write_config(
        tmp_path,
        {event: [log_hook(log)] for event in ("SubagentStop", "StopFailure", "SessionEnd")},
    )
    model = ScriptedModel([RuntimeError("model down")])
    agent = Agent(name="solo", model=model)
    agents = Agents()

    with pytest.raises(RuntimeError, match="model down"):
        await drive(OrchestraRunHooks([agents], registry=registry), agent, "hi", mode)

    assert agents.calls == [("before", "solo", 1), ("failure", "solo", 1, "RuntimeError")]
    assert names(log) == ["SubagentStop", "StopFailure", "SessionEnd"]
    stop, failure, end = events(log)
    assert (stop["state"], stop["error"]) == ("failed", "model down")
    assert failure["error_type"] == "RuntimeError"
    assert end["reason"] == "failed"
    # StopFailure's error is Claude Code's error type (matchers read it), the message is
    # error_details: a RuntimeError has no HTTP status, so its type is unknown
    assert (failure["error"], failure["error_details"]) == ("unknown", "model down")
    assert spans.open() == []  # every span ended
    run = spans.by_name()["invoke_workflow solo"]
    assert run.status.status_code.name == "ERROR"


async def test_a_stop_failure_matcher_reads_claude_codes_error_type(
    tmp_path: Path, mode: str
) -> None:
    # the reference: StopFailure's "error field identifies the error type and is used for
    # matcher filtering" (rate_limit, authentication_failed, ...)
    import httpx
    import openai

    log = tmp_path / "events.jsonl"
    hooks = [log_hook(log, matcher="rate_limit"), log_hook(tmp_path / "auth.jsonl", "auth.*")]
    registry = write_config(tmp_path, {"StopFailure": hooks})
    response = httpx.Response(429, request=httpx.Request("POST", "http://127.0.0.1:9/v1"))
    limited = openai.RateLimitError("Rate limit reached", response=response, body=None)
    agent = Agent(name="solo", model=ScriptedModel([limited]))

    with pytest.raises(openai.RateLimitError):
        await drive(OrchestraRunHooks(registry=registry), agent, "hi", mode)

    [failure] = events(log)
    assert (failure["error"], failure["error_details"]) == ("rate_limit", "Rate limit reached")
    assert failure["error_type"] == "RateLimitError"
    assert not (tmp_path / "auth.jsonl").exists()  # authentication_failed did not match


async def test_a_subagent_start_deny_at_a_handoff_tells_the_model(
    tmp_path: Path, mode: str
) -> None:
    registry = write_config(
        tmp_path, {"SubagentStart": [permission("deny", "math is closed", matcher="math")]}
    )
    model = ScriptedModel(
        [
            [function_call("transfer_to_math", {}, call_id="h1")],
            [assistant_message("math is closed today, sorry")],
        ]
    )
    math = Agent(name="math", model=ScriptedModel([]))
    triage = Agent(name="triage", model=model, handoffs=[math])
    agents = Agents()

    result = await drive(OrchestraRunHooks([agents], registry=registry), triage, "2 + 2?", mode)

    assert tool_outputs(model) == {"h1": "Tool call denied: math is closed"}
    assert result.final_output == "math is closed today, sorry"
    assert result.last_agent.name == "triage"  # no handoff happened
    assert agents.calls == [  # a refusal is not a failure: no on_failure
        ("before", "triage", 1),
        ("before", "math", 1),
        ("after", "triage", "math is closed today, sorry"),
    ]
    model.assert_complete()


async def test_the_starting_agent_refused_stops_the_run(tmp_path: Path, mode: str) -> None:
    registry = write_config(
        tmp_path, {"SubagentStart": [permission("deny", "triage is closed", matcher="triage")]}
    )
    model = ScriptedModel([[assistant_message("never said")]])
    triage = Agent(name="triage", model=model)

    with pytest.raises(DispatchError, match="triage is closed") as caught:
        await drive(OrchestraRunHooks(registry=registry), triage, "2 + 2?", mode)

    assert caught.value.agent == "triage"
    assert model.calls == ()  # there is no model to tell before the first agent


async def test_a_python_fail_stops_the_agent_before_the_model() -> None:
    model = ScriptedModel([[assistant_message("never said")]])
    agent = Agent(name="solo", model=model)

    with pytest.raises(DispatchError, match="not today"):
        await OrchestraRunHooks([Agents(fail="solo")]).run(agent, "hi")

    assert model.calls == ()


async def test_a_delegate_is_not_carried_out(caplog: pytest.LogCaptureFixture) -> None:
    class Elsewhere(SubagentHooks):
        def before_dispatch(self, ctx: SubagentHookContext) -> Delegate:
            return Delegate("billing")

    agent = Agent(name="solo", model=ScriptedModel([[assistant_message("hi")]]))

    with caplog.at_level(logging.WARNING, "orchestra"):
        result = await OrchestraRunHooks([Elsewhere()]).run(agent, "hi")

    assert result.final_output == "hi"  # the agent ran: the SDK's model decides handoffs
    assert "hook Elsewhere.before_dispatch for 'solo' returned Delegate(" in caplog.text
    assert "; None or Fail expected" in caplog.text  # the bridge carries out Fail only
