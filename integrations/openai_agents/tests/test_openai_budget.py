"""``orchestra.Budget`` in real OpenAI Agents SDK runs with the SDK's ``ScriptedModel``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call
from agents.usage import Usage
from bridge_helpers import SpanLedger, drive, tool_outputs
from click.testing import CliRunner
from orchestra_openai_agents import OrchestraRunHooks
from test_openai_steps import lookup_agent

import orchestra.skills
from orchestra import (
    Budget,
    BudgetExceeded,
    DispatchError,
    Fail,
    RunContext,
    RunResult,
    SubagentHookContext,
    SubagentHooks,
    TaskFailed,
    TaskHooks,
)
from orchestra.bridge.testing import check_budget_trace
from orchestra.cli import main

pytestmark = pytest.mark.anyio


def looping(turns: int) -> ScriptedModel:
    """``turns`` turns asking for ``lookup``, then an answer; each turn 100 in, 10 out."""
    usage = Usage(requests=1, input_tokens=100, output_tokens=10, total_tokens=110)
    steps: list[Any] = [
        ModelStep([function_call("lookup", {"key": f"k{i}"}, call_id=f"c{i}")], usage)
        for i in range(1, turns + 1)
    ]
    steps.append(ModelStep([assistant_message("done")], usage))
    return ScriptedModel(steps)


class Failures(SubagentHooks):
    """Records what ``on_failure`` sees of the run."""

    def __init__(self) -> None:
        self.seen: list[BaseException] = []

    def on_failure(self, ctx: SubagentHookContext, error: BaseException) -> None:
        self.seen.append(error)


async def test_max_model_calls_ends_the_run_and_the_next_call_is_never_made(mode: str) -> None:
    model = looping(5)
    ran: list[str] = []
    failures = Failures()
    bridge = OrchestraRunHooks([Budget(max_model_calls=2), failures])
    with pytest.raises(BudgetExceeded, match=r"budget: model calls 2/2"):
        await drive(bridge, lookup_agent(model, ran), "go", mode)
    assert len(model.calls) == 2
    assert ran == ["k1", "k2"]
    assert [type(e) for e in failures.seen] == [BudgetExceeded]  # the run's end sees it


class AfterRun(TaskHooks):
    """Records what ``after_run`` gets of each run."""

    def __init__(self) -> None:
        self.seen: list[tuple[RunContext, RunResult]] = []

    def after_run(self, ctx: RunContext, result: RunResult) -> None:
        self.seen.append((ctx, result))


async def test_max_model_calls_ends_the_run_and_after_run_sees_it(mode: str) -> None:
    model = looping(5)
    after = AfterRun()
    bridge = OrchestraRunHooks([Budget(max_model_calls=2), after])
    with pytest.raises(BudgetExceeded, match=r"budget: model calls 2/2") as info:
        await drive(bridge, lookup_agent(model, []), "go", mode)
    assert len(model.calls) == 2
    [(ctx, result)] = after.seen  # once, after the run ended
    assert ctx.dag == "ops"
    assert not result.ok
    assert result.errors == {"ops": info.value}
    [use] = result.budgets
    assert (use.used["model_calls"], use.exceeded) == (2, "budget: model calls 2/2")
    with pytest.raises(TaskFailed, match="budget: model calls 2/2"):
        result.raise_for_failures()


async def test_after_run_sees_a_run_that_completed_within_its_budget(mode: str) -> None:
    after = AfterRun()
    bridge = OrchestraRunHooks([Budget(max_tool_calls=5), after])
    result = await drive(bridge, lookup_agent(looping(2), []), "go", mode)
    assert result.final_output == "done"
    [(ctx, run)] = after.seen
    assert run.ok
    assert ctx.run_id == run.run_id
    assert run.budgets[0].used["tool_calls"] == 2


async def test_before_run_refuses_the_run_before_the_model_is_called(mode: str) -> None:
    class Refuse(AfterRun):
        def before_run(self, ctx: RunContext) -> Fail:
            return Fail("not today")

    model, hook = looping(1), Refuse()
    with pytest.raises(DispatchError, match="not today") as info:
        await drive(OrchestraRunHooks([hook]), lookup_agent(model, []), "go", mode)
    assert len(model.calls) == 0
    [(_, result)] = hook.seen  # after_run sees every run, a refused one too
    assert result.errors == {"ops": info.value}


async def test_a_token_limit_ends_the_run_after_the_call_that_crossed_it(mode: str) -> None:
    model = looping(5)
    bridge = OrchestraRunHooks([Budget(max_output_tokens=25)])
    with pytest.raises(BudgetExceeded, match=r"budget: output tokens 30/25"):
        await drive(bridge, lookup_agent(model, []), "go", mode)
    assert len(model.calls) == 3


async def test_a_cost_limit_from_prices(mode: str) -> None:
    model = looping(5)
    budget = Budget(max_cost_usd=0.001, prices={"*": {"input_tokens": 4e-6}})  # 0.0004 a turn
    with pytest.raises(BudgetExceeded, match=r"budget: cost USD 0.0012/0.001"):
        await drive(OrchestraRunHooks([budget]), lookup_agent(model, []), "go", mode)
    assert len(model.calls) == 3


async def test_audit_mode_ends_nothing_and_the_run_span_says_each_would_exceed(
    mode: str, spans: SpanLedger
) -> None:
    model = looping(3)
    ran: list[str] = []
    bridge = OrchestraRunHooks([Budget(max_model_calls=1, enforce=False)])
    result = await drive(bridge, lookup_agent(model, ran), "go", mode)
    assert result.final_output == "done"
    assert ran == ["k1", "k2", "k3"]
    run = spans.by_name()["invoke_workflow ops"]
    assert run.attributes is not None
    assert run.attributes["orchestra.budget.model_calls.used"] == 4
    assert run.attributes["orchestra.budget.model_calls.limit"] == 1
    events = [e for e in run.events if e.name == "orchestra.budget.would_exceed"]
    assert [e.attributes["orchestra.decision.reason"] for e in events if e.attributes] == [
        f"would exceed: budget: model calls {n}/1" for n in (1, 2, 3)
    ]


async def test_the_run_span_carries_the_budget_use_and_trace_show_says_it(
    mode: str, spans: SpanLedger, tmp_path: Path
) -> None:
    model = looping(2)
    budget = Budget(max_model_calls=10, max_tool_calls=5, max_input_tokens=1000)
    await drive(OrchestraRunHooks([budget]), lookup_agent(model, []), "go", mode)
    said = "budget: model calls 3/10, tool calls 2/5, input tokens 300/1000"
    assert check_budget_trace(spans.finished(), tmp_path, shown=said) == {
        "orchestra.budget.model_calls.used": 3,
        "orchestra.budget.model_calls.limit": 10,
        "orchestra.budget.tool_calls.used": 2,
        "orchestra.budget.tool_calls.limit": 5,
        "orchestra.budget.input_tokens.used": 300,
        "orchestra.budget.input_tokens.limit": 1000,
    }
    shown = CliRunner().invoke(main, ["trace", "show", str(tmp_path / "run.jsonl")])
    assert "run invoke_workflow ops" in shown.output
    assert "·  ok  ·" in shown.output  # a run that completed


async def test_a_run_ended_by_its_budget_says_so_on_its_span(mode: str, spans: SpanLedger) -> None:
    bridge = OrchestraRunHooks([Budget(max_model_calls=1)])
    with pytest.raises(BudgetExceeded):
        await drive(bridge, lookup_agent(looping(3), []), "go", mode)
    run = spans.by_name()["invoke_workflow ops"]
    assert run.attributes is not None
    assert run.attributes["orchestra.budget.model_calls.used"] == 1
    assert run.attributes["orchestra.budget.exceeded"] == "budget: model calls 1/1"


async def test_max_tool_calls_refuses_the_third_call_before_its_body_runs(mode: str) -> None:
    model = looping(3)
    ran: list[str] = []
    bridge = OrchestraRunHooks([Budget(max_tool_calls=2)])
    result = await drive(bridge, lookup_agent(model, ran), "go", mode)
    assert result.final_output == "done"
    assert ran == ["k1", "k2"]
    assert "budget: tool calls 2/2" in tool_outputs(model)["c3"]


async def test_a_refused_call_says_deny_on_its_tool_span_and_the_others_allow_nothing(
    mode: str, spans: SpanLedger
) -> None:
    ran: list[str] = []
    await drive(
        OrchestraRunHooks([Budget(max_tool_calls=2)]), lookup_agent(looping(3), ran), "go", mode
    )
    tools = [s for s in spans.finished() if s.name == "execute_tool lookup"]
    decisions = [(s.attributes or {}).get("orchestra.tool.decision") for s in tools]
    assert decisions == [None, None, "deny"]  # nothing but the budget judged: it refused one
    assert ran == ["k1", "k2"]


async def test_audit_mode_puts_each_would_exceed_on_the_recorded_outcome(
    mode: str, tmp_path: Path
) -> None:
    config, record = tmp_path / "orchestra.yaml", tmp_path / "events.jsonl"
    config.write_text("budget: {max_tool_calls: 1, enforce: false}\n")
    ran: list[str] = []
    bridge = OrchestraRunHooks(registry=orchestra.skills.load(config, record=record))
    await drive(bridge, lookup_agent(looping(3), ran), "go", mode)
    assert ran == ["k1", "k2", "k3"]
    lines = [json.loads(line) for line in record.read_text().splitlines()]
    assert [(x["event"], x["payload"]["tool_input"]) for x in lines] == [
        ("PreToolUse", {"key": "k2"}),
        ("PreToolUse", {"key": "k3"}),
    ]
    assert [x["outcome"]["audited"][0]["reason"] for x in lines] == [
        "budget: tool calls 1/1",
        "budget: tool calls 2/1",
    ]
