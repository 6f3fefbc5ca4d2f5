"""``orchestra.Budget`` in real pydantic-ai agents with a scripted ``FunctionModel``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from orchestra_pydantic_ai import OrchestraCapability
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

import orchestra
from orchestra import (
    Budget,
    BudgetExceeded,
    Dispatcher,
    DispatchError,
    Fail,
    RunContext,
    RunResult,
    TaskHooks,
)
from orchestra.agents import AgentContext
from orchestra.bridge.testing import check_budget_trace
from orchestra.skills import HookRegistry, load

pytestmark = pytest.mark.anyio


def looping(calls: int) -> tuple[FunctionModel, list[int]]:
    """A model that asks for ``lookup`` ``calls`` times, then answers; each turn 100/10 tokens."""
    made: list[int] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        made.append(len(messages))
        usage = RequestUsage(input_tokens=100, output_tokens=10)
        if len(made) <= calls:
            part = ToolCallPart("lookup", {"key": f"k{len(made)}"}, tool_call_id=f"c{len(made)}")
            return ModelResponse(parts=[part], usage=usage)
        last = messages[-1].parts[-1]
        return ModelResponse(parts=[TextPart(f"read {getattr(last, 'content', '?')}")], usage=usage)

    return FunctionModel(model, model_name="scripted"), made


def agent(model: FunctionModel, ran: list[str], **capability: Any) -> Agent[None, str]:
    built: Agent[None, str] = Agent(
        model, capabilities=[OrchestraCapability(**capability)], name="ops"
    )
    guard = HookRegistry().guard("lookup")  # guarded, its registry empty

    @built.tool_plain
    @guard
    async def lookup(key: str) -> str:
        """Look a key up."""
        ran.append(key)
        return f"value of {key}"

    return built


async def test_max_model_calls_ends_the_run_and_the_next_call_is_never_made() -> None:
    model, made = looping(5)
    ran: list[str] = []
    with pytest.raises(BudgetExceeded, match=r"budget: model calls 2/2"):
        await agent(model, ran, hooks=[Budget(max_model_calls=2)]).run("go")
    assert len(made) == 2
    assert ran == ["k1", "k2"]


class AfterRun(TaskHooks):
    """Records what ``after_run`` gets of each run."""

    def __init__(self) -> None:
        self.seen: list[tuple[RunContext, RunResult]] = []

    def after_run(self, ctx: RunContext, result: RunResult) -> None:
        self.seen.append((ctx, result))


async def test_max_model_calls_ends_the_run_and_after_run_sees_it() -> None:
    model, made = looping(5)
    after = AfterRun()
    with pytest.raises(BudgetExceeded, match=r"budget: model calls 2/2") as info:
        await agent(model, [], hooks=[Budget(max_model_calls=2), after]).run("go")
    assert len(made) == 2
    [(ctx, result)] = after.seen  # once, after the run ended
    assert ctx.dag == "ops"
    assert not result.ok
    assert result.errors == {"ops": info.value}
    [use] = result.budgets
    assert (use.used["model_calls"], use.exceeded) == (2, "budget: model calls 2/2")
    with pytest.raises(orchestra.TaskFailed, match="budget: model calls 2/2"):
        result.raise_for_failures()


async def test_after_run_sees_a_run_that_completed_within_its_budget() -> None:
    model, _ = looping(1)
    after = AfterRun()
    out = await agent(model, [], hooks=[Budget(max_model_calls=5), after]).run("go")
    assert out.output == "read value of k1"
    [(ctx, result)] = after.seen
    assert result.ok
    assert result.errors == {}
    assert ctx.run_id == result.run_id
    assert result.budgets[0].used["model_calls"] == 2


async def test_before_run_refuses_the_run_and_after_run_sees_it() -> None:
    class Refuse(AfterRun):
        def before_run(self, ctx: RunContext) -> Fail:
            return Fail("not today")

    model, made = looping(1)
    hook = Refuse()
    with pytest.raises(DispatchError, match="not today") as info:
        await agent(model, [], hooks=[hook]).run("go")
    assert made == []
    [(_, result)] = hook.seen  # after_run sees every run, a refused one too
    assert result.errors == {"ops": info.value}


async def test_a_token_limit_ends_the_run_after_the_call_that_crossed_it() -> None:
    model, made = looping(5)
    with pytest.raises(BudgetExceeded, match=r"budget: input tokens 300/250") as info:
        await agent(model, [], hooks=[Budget(max_input_tokens=250)]).run("go")
    assert len(made) == 3
    assert info.value.kind == "input_tokens"


async def test_a_cost_limit_from_prices() -> None:
    model, made = looping(5)
    prices = {"scripted": {"input_tokens": 1e-5, "output_tokens": 1e-4}}
    budget = Budget(max_cost_usd=0.0025, prices=prices)  # 0.002 per call
    with pytest.raises(BudgetExceeded, match=r"budget: cost USD 0.004/0.0025"):
        await agent(model, [], hooks=[budget]).run("go")
    assert len(made) == 2


async def test_max_tool_calls_refuses_the_third_call_before_its_body_runs() -> None:
    model, _ = looping(3)
    ran: list[str] = []
    result = await agent(model, ran, hooks=[Budget(max_tool_calls=2)]).run("go")
    assert ran == ["k1", "k2"]
    assert "budget: tool calls 2/2" in result.output


async def test_audit_mode_refuses_nothing_and_the_run_span_says_each_would_exceed(
    exporter: InMemorySpanExporter,
) -> None:
    model, made = looping(3)
    ran: list[str] = []
    budget = Budget(max_model_calls=1, max_tool_calls=1, enforce=False)
    result = await agent(model, ran, hooks=[budget]).run("go")
    assert ran == ["k1", "k2", "k3"]
    assert len(made) == 4
    assert result.output == "read value of k3"
    [run] = [s for s in exporter.get_finished_spans() if s.name == "invoke_agent ops"]
    assert run.attributes is not None
    assert run.attributes["orchestra.budget.model_calls.used"] == 4
    assert run.attributes["orchestra.budget.tool_calls.used"] == 3
    reasons = [
        (e.attributes or {}).get("orchestra.decision.reason")
        for e in run.events
        if e.name == "orchestra.budget.would_exceed"
    ]
    assert reasons == [
        "would exceed: budget: model calls 1/1",
        "would exceed: budget: tool calls 1/1",
        "would exceed: budget: model calls 2/1",
        "would exceed: budget: tool calls 2/1",
        "would exceed: budget: model calls 3/1",
    ]


async def test_the_run_span_carries_the_budget_use_and_trace_show_says_it(
    exporter: InMemorySpanExporter, tmp_path: Path
) -> None:
    model, _ = looping(2)
    budget = Budget(max_model_calls=10, max_tool_calls=5, max_output_tokens=100)
    await agent(model, [], hooks=[budget]).run("go")
    said = "budget: model calls 3/10, tool calls 2/5, output tokens 30/100"
    figures = check_budget_trace(exporter.get_finished_spans(), tmp_path, shown=said)
    assert figures["orchestra.budget.output_tokens.used"] == 30
    assert figures["orchestra.budget.output_tokens.limit"] == 100
    assert len(figures) == 6  # used and limit of the three kinds limited


async def test_a_run_ended_by_its_budget_says_so_on_its_span(
    exporter: InMemorySpanExporter,
) -> None:
    model, _ = looping(5)
    with pytest.raises(BudgetExceeded):
        await agent(model, [], hooks=[Budget(max_model_calls=2)]).run("go")
    [run] = [s for s in exporter.get_finished_spans() if s.name == "invoke_agent ops"]
    assert run.attributes is not None
    assert run.attributes["orchestra.budget.model_calls.used"] == 2
    assert run.attributes["orchestra.budget.exceeded"] == "budget: model calls 2/2"


def delegating(model: FunctionModel, child: Agent[None, str], budget: Budget) -> Agent[None, str]:
    """A parent agent whose ``lookup`` tool delegates to ``child``."""
    parent: Agent[None, str] = Agent(
        model, capabilities=[OrchestraCapability(hooks=[budget])], name="parent"
    )

    @parent.tool_plain
    async def lookup(key: str) -> str:
        """Delegate the lookup to the child agent."""
        try:
            return (await child.run(key)).output
        except BudgetExceeded as error:
            return error.reason

    return parent


@pytest.mark.parametrize(("scope", "child_made"), [("run", 3), ("tree", 2)])
async def test_scope_tree_counts_a_delegated_subagents_calls(scope: str, child_made: int) -> None:
    """The parent's tool delegates to a child agent given the same budget."""
    budget = Budget(max_model_calls=3, scope=scope)  # type: ignore[arg-type]
    parent_model, parent_made = looping(1)
    child_model, child_log = looping(2)
    child = agent(child_model, [], hooks=[budget])
    parent = delegating(parent_model, child, budget)

    if scope == "tree":  # the parent's first turn and the child's two spent all three
        with pytest.raises(BudgetExceeded, match=r"model calls 3/3"):
            await parent.run("go")
        assert len(parent_made) == 1
    else:  # each run has three of its own
        assert (await parent.run("go")).output == "read read value of k2"
        assert len(parent_made) == 2
    assert len(child_log) == child_made


async def test_a_dispatchers_budget_counts_the_agents_model_calls() -> None:
    model, made = looping(5)
    inner = agent(model, [])

    class Ops:
        name = "ops"

        async def run(self, task: str, ctx: AgentContext) -> str:
            return (await inner.run(task)).output

    d = Dispatcher([Ops()], hooks=[Budget(max_model_calls=2)])
    with pytest.raises(DispatchError) as info:
        await d.dispatch("ops", "go")
    assert isinstance(info.value.__cause__, BudgetExceeded)
    assert len(made) == 2


async def test_an_agent_run_inside_a_tool_not_given_the_budget_counts_toward_it() -> None:
    """The child follows the ambient policy: its calls are the parent run's, whatever scope."""
    budget = Budget(max_model_calls=3)
    parent_model, parent_made = looping(1)
    child_model, child_log = looping(2)
    child = agent(child_model, [])  # no hooks of its own
    parent = delegating(parent_model, child, budget)
    with pytest.raises(BudgetExceeded, match=r"model calls 3/3"):
        await parent.run("go")
    assert (len(parent_made), len(child_log)) == (1, 2)


async def test_audit_mode_records_each_would_exceed_on_the_calls_outcome(tmp_path: Path) -> None:
    config = tmp_path / "orchestra.yaml"
    config.write_text("budget:\n  per_tool: {lookup: 2}\n  enforce: false\n")
    registry = load(config, record=tmp_path / "events.jsonl")
    model, _ = looping(3)
    ran: list[str] = []
    await agent(model, ran, registry=registry).run("go")
    assert ran == ["k1", "k2", "k3"]
    [line] = [json.loads(x) for x in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert line["event"] == "PreToolUse"
    assert line["payload"]["tool_input"] == {"key": "k3"}
    [audited] = line["outcome"]["audited"]
    assert audited == {
        "hook": "<budget>",
        "decision": "deny",
        "blocked": True,
        "reason": "budget: calls of tool 'lookup' 2/2",
    }
    assert line["outcome"]["blocked"] is False  # it changed nothing
