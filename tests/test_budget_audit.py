"""``Budget(enforce=False)``: each "would exceed" of a tool call is on ``HookOutcome.audited``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import orchestra
from orchestra import Budget, Dispatcher
from orchestra.agents import AgentContext
from orchestra.skills import HookOutcome, HookRegistry, load

pytestmark = pytest.mark.anyio

AUDITED_HOOK = """\
hooks:
  PreToolUse:
    - matcher: search
      hooks:
        - {type: command, command: "echo not yet >&2; exit 2", enforce: false}
"""


class Heard:
    """An ``on_outcome``: the audited decisions of each tool event heard."""

    def __init__(self) -> None:
        self.events: list[tuple[str, HookOutcome]] = []

    def __call__(self, event: str, outcome: HookOutcome) -> None:
        self.events.append((event, outcome))

    def budget_audits(self) -> list[list[tuple[str | None, str | None, bool]]]:
        return [
            [(a.decision, a.reason, a.blocked) for a in o.audited if a.hook.type == "budget"]
            for event, o in self.events
            if event == "PreToolUse"
        ]


def searching(registry: HookRegistry, heard: Heard, calls: list[str]) -> Any:
    @registry.guard("search", on_outcome=heard)
    async def search(q: str) -> str:
        calls.append(q)
        return q

    return search


async def test_each_would_exceed_is_on_the_calls_outcome_and_nothing_is_refused() -> None:
    heard, calls = Heard(), []
    search = searching(HookRegistry(), heard, calls)  # no hooks: the budget's is the outcome
    dag = orchestra.DAG("audit")

    @dag.task
    async def work() -> None:
        for q in "abc":
            await search(q)

    budget = Budget(max_tool_calls=1, enforce=False)
    result = await orchestra.run(dag, hooks=[budget])
    assert result.ok
    assert calls == ["a", "b", "c"]
    assert heard.budget_audits() == [
        [("deny", "budget: tool calls 1/1", True)],
        [("deny", "budget: tool calls 2/1", True)],
    ]
    for _, outcome in heard.events:
        assert not outcome.blocked  # it changed nothing
        assert outcome.decision is None
        [audited] = outcome.audited
        assert audited.hook.budget is budget  # type: ignore[attr-defined]
        assert audited.hook.source == "<budget>"
        assert audited.verdict == "deny"
    assert result.budgets[0].would_exceed == (
        "would exceed: budget: tool calls 1/1",
        "would exceed: budget: tool calls 2/1",
    )


async def test_the_budget_joins_the_hooks_audited_decisions_in_one_recorded_outcome(
    tmp_path: Path,
) -> None:
    (tmp_path / "orchestra.yaml").write_text(AUDITED_HOOK)
    record = tmp_path / "events.jsonl"
    registry = load(tmp_path / "orchestra.yaml", record=record)
    heard, calls = Heard(), []
    search = searching(registry, heard, calls)
    agent_calls = 2

    class Agent:
        name = "a"

        async def run(self, task: str, ctx: AgentContext) -> None:
            for i in range(agent_calls):
                await search(f"q{i}")

    budget = Budget(per_tool={"search": 1}, enforce=False)
    await Dispatcher([Agent()], hooks=[budget]).dispatch("a", "go")
    assert calls == ["q0", "q1"]
    pre = [o for event, o in heard.events if event == "PreToolUse"]
    assert len(pre) == 2  # one outcome per call, the budget's decision in it
    assert [(a.hook.type, a.reason) for a in pre[0].audited] == [("command", "not yet")]
    assert [(a.hook.type, a.reason) for a in pre[1].audited] == [
        ("command", "not yet"),
        ("budget", "budget: calls of tool 'search' 1/1"),
    ]
    lines = [json.loads(line) for line in record.read_text().splitlines()]
    recorded = [line["outcome"]["audited"] for line in lines if line["event"] == "PreToolUse"]
    assert recorded[1][1] == {
        "hook": "<budget>",
        "decision": "deny",
        "blocked": True,
        "reason": "budget: calls of tool 'search' 1/1",
    }
    assert len(recorded) == 2  # each event recorded once


def test_a_def_tool_called_from_sync_code_gets_the_audit_too() -> None:
    heard, calls = Heard(), []
    registry = HookRegistry()

    @registry.guard("fetch", on_outcome=heard)
    def fetch(url: str) -> str:
        calls.append(url)
        return url

    dag = orchestra.DAG("sync")

    @dag.task
    def work() -> None:
        fetch("a")
        fetch("b")

    result = orchestra.run_sync(dag, hooks=[Budget(max_tool_calls=1, enforce=False)])
    assert result.ok
    assert calls == ["a", "b"]
    assert heard.budget_audits() == [[("deny", "budget: tool calls 1/1", True)]]


async def test_an_enforced_budget_adds_no_audit_and_no_event_without_hooks() -> None:
    heard, calls = Heard(), []
    search = searching(HookRegistry(), heard, calls)
    dag = orchestra.DAG("enforced")

    @dag.task
    async def work() -> None:
        await search("a")
        with pytest.raises(orchestra.ToolDenied):
            await search("b")

    result = await orchestra.run(dag, hooks=[Budget(max_tool_calls=1)])
    assert result.ok
    assert heard.events == []
