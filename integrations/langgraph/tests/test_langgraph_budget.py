"""``orchestra.Budget`` in a real LangGraph run with langchain-core's fake chat model."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from orchestra_langgraph import with_hooks
from test_langgraph_steps import graph

import orchestra.tracing as ot
from orchestra import Budget, BudgetExceeded, RunContext, RunResult, TaskFailed, TaskHooks
from orchestra.bridge.testing import check_budget_trace
from orchestra.skills import load

HOW = pytest.mark.parametrize("how", ["invoke", "ainvoke"])
USAGE = {"input_tokens": 100, "output_tokens": 10, "total_tokens": 110}


def looping(turns: int, made: list[int]) -> GenericFakeChatModel:
    """``turns`` turns asking for ``lookup``, then an answer; ``made`` counts the calls."""

    def ask(i: int) -> AIMessage:
        call = {"name": "lookup", "args": {"key": f"k{i}"}, "id": f"c{i}", "type": "tool_call"}
        return AIMessage(content="", tool_calls=[call], usage_metadata=USAGE)  # type: ignore[arg-type, list-item]

    def messages() -> Any:
        for i in range(1, turns + 1):
            made.append(i)
            yield ask(i)
        made.append(turns + 1)
        yield AIMessage(content="done", usage_metadata=USAGE)  # type: ignore[arg-type]

    return GenericFakeChatModel(messages=messages())


class AfterRun(TaskHooks):
    def __init__(self) -> None:
        self.results: list[RunResult] = []

    def after_run(self, ctx: RunContext, result: RunResult) -> None:
        self.results.append(result)


def invoke(compiled: Any, how: str) -> Any:
    state = {"messages": [HumanMessage("go")]}
    if how == "invoke":
        return compiled.invoke(state)
    return asyncio.run(compiled.ainvoke(state))


@HOW
def test_max_model_calls_ends_the_run_and_after_run_sees_it(how: str) -> None:
    made: list[int] = []
    ran: list[str] = []
    after = AfterRun()
    hooked = with_hooks(graph(ran, looping(5, made)), hooks=[Budget(max_model_calls=2), after])
    with pytest.raises(BudgetExceeded, match=r"budget: model calls 2/2"):
        invoke(hooked.compile(), how)
    assert made == [1, 2]  # call 3 was never made
    assert ran == ["k1", "k2"]
    [result] = after.results
    assert any(isinstance(e, BudgetExceeded) for e in result.errors.values())
    with pytest.raises(TaskFailed, match=r"budget: model calls 2/2"):  # the run's own end
        result.raise_for_failures()


@HOW
def test_a_token_limit_ends_the_run_after_the_call_that_crossed_it(how: str) -> None:
    made: list[int] = []
    hooked = with_hooks(graph([], looping(5, made)), hooks=[Budget(max_input_tokens=250)])
    with pytest.raises(BudgetExceeded, match=r"budget: input tokens 300/250"):
        invoke(hooked.compile(), how)
    assert made == [1, 2, 3]


@HOW
def test_a_cost_limit_from_prices(how: str) -> None:
    made: list[int] = []
    budget = Budget(max_cost_usd=0.12, prices={"*": {"output_tokens": 0.005}})  # 0.05 a call
    hooked = with_hooks(graph([], looping(5, made)), hooks=[budget])
    with pytest.raises(BudgetExceeded, match=r"budget: cost USD 0.15/0.12"):
        invoke(hooked.compile(), how)
    assert made == [1, 2, 3]


@HOW
def test_audit_mode_ends_nothing(how: str) -> None:
    made: list[int] = []
    ran: list[str] = []
    hooked = with_hooks(
        graph(ran, looping(2, made)), hooks=[Budget(max_model_calls=1, enforce=False)]
    )
    out = invoke(hooked.compile(), how)
    assert out["messages"][-1].content == "done"
    assert ran == ["k1", "k2"]


@HOW
def test_max_tool_calls_refuses_the_third_call_before_its_body_runs(how: str) -> None:
    made: list[int] = []
    ran: list[str] = []
    hooked = with_hooks(graph(ran, looping(3, made)), hooks=[Budget(max_tool_calls=2)])
    out = invoke(hooked.compile(), how)
    assert ran == ["k1", "k2"]
    refused = [m for m in out["messages"] if getattr(m, "tool_call_id", None) == "c3"]
    assert "budget: tool calls 2/2" in str(refused[0].content)
    assert out["messages"][-1].content == "done"


@HOW
@pytest.mark.parametrize(
    "handling", [{}, {"handle_tool_errors": True}, {"handle_tool_errors": False}]
)
def test_the_refused_call_is_answered_with_the_reason_whatever_the_tool_nodes_error_handling(
    how: str, handling: dict[str, Any]
) -> None:
    # the default ToolNode answers the run's TreeGuard refusal itself; the others are wrapped
    ran: list[str] = []
    hooked = with_hooks(graph(ran, looping(3, []), **handling), hooks=[Budget(max_tool_calls=2)])
    out = invoke(hooked.compile(), how)
    assert ran == ["k1", "k2"]
    [refused] = [m for m in out["messages"] if getattr(m, "tool_call_id", None) == "c3"]
    assert (refused.content, refused.status) == ("budget: tool calls 2/2", "error")
    assert out["messages"][-1].content == "done"


@HOW
def test_the_run_span_and_result_carry_the_budget_use_and_trace_show_says_it(
    how: str, exporter: InMemorySpanExporter, tmp_path: Path
) -> None:
    after = AfterRun()
    budget = Budget(max_model_calls=10, max_cost_usd=1.0, prices={"*": {"output_tokens": 0.01}})
    hooked = with_hooks(graph([], looping(2, [])), hooks=[budget, after])
    invoke(hooked.compile(), how)
    said = "budget: model calls 3/10, cost usd 0.3/1"
    spans = exporter.get_finished_spans()
    assert [s.name for s in spans].count("execute_tool lookup") == 2  # traced: each call's span
    figures = check_budget_trace(spans, tmp_path, shown=said)
    assert figures == {
        "orchestra.budget.model_calls.used": 3,
        "orchestra.budget.model_calls.limit": 10,
        "orchestra.budget.cost_usd.used": pytest.approx(0.3),
        "orchestra.budget.cost_usd.limit": 1.0,
    }
    [result] = after.results
    [use] = result.budgets
    assert (use.budget, use.used["model_calls"], use.used["tool_calls"]) == (budget, 3, 2)


@HOW
def test_audit_mode_puts_each_would_exceed_on_the_run_span_and_result(
    how: str, exporter: InMemorySpanExporter
) -> None:
    after = AfterRun()
    budget = Budget(max_model_calls=1, enforce=False)
    invoke(with_hooks(graph([], looping(1, [])), hooks=[budget, after]).compile(), how)
    [run] = [s for s in exporter.get_finished_spans() if ot.ATTR_RUN_ID in (s.attributes or {})]
    assert run.attributes is not None
    assert run.attributes["orchestra.budget.model_calls.used"] == 2
    assert run.attributes["orchestra.budget.model_calls.limit"] == 1
    events = [e.attributes for e in run.events if e.name == "orchestra.budget.would_exceed"]
    assert [dict(e or {}) for e in events] == [
        {"orchestra.decision.reason": "would exceed: budget: model calls 1/1"}
    ]
    assert after.results[0].budgets[0].would_exceed == ("would exceed: budget: model calls 1/1",)


@HOW
def test_audit_mode_records_the_would_exceed_of_a_tool_call(how: str, tmp_path: Path) -> None:
    config = tmp_path / "orchestra.yaml"
    config.write_text("budget: {max_tool_calls: 0, enforce: false}\n")
    record = tmp_path / "events.jsonl"
    ran: list[str] = []
    hooked = with_hooks(graph(ran, looping(1, [])), registry=load(config, record=record))
    invoke(hooked.compile(), how)
    assert ran == ["k1"]
    lines = [json.loads(x) for x in record.read_text().splitlines()]
    assert [(x["event"], x["outcome"]["audited"]) for x in lines] == [
        (
            "PreToolUse",
            [
                {
                    "hook": "<budget>",
                    "decision": "deny",
                    "blocked": True,
                    "reason": "budget: tool calls 0/0",
                }
            ],
        )
    ]


def test_a_graph_with_a_budget_run_inside_a_run_without_one_still_charges_its_tool_node() -> None:
    # the enclosing run adds no budget handler: the inner ToolNode's own wrap charges
    ran: list[str] = []
    inner = with_hooks(graph(ran, looping(2, [])), hooks=[Budget(max_tool_calls=1)]).compile()

    def call_inner(state: MessagesState) -> dict[str, Any]:
        return {"messages": inner.invoke(state)["messages"][len(state["messages"]) :]}

    outer = StateGraph(MessagesState)
    outer.add_node("inner", call_inner)
    outer.add_edge(START, "inner")
    outer.add_edge("inner", END)
    out = with_hooks(outer, hooks=[AfterRun()]).compile().invoke({"messages": [HumanMessage("go")]})
    assert ran == ["k1"]
    [refused] = [m for m in out["messages"] if getattr(m, "tool_call_id", None) == "c2"]
    assert (refused.content, refused.status) == ("budget: tool calls 1/1", "error")
