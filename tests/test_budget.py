"""``Budget``: tool calls, model calls, tokens and cost, in the DAG and the dispatcher."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import orchestra
from orchestra import Budget, BudgetExceeded, Dispatcher, TaskState, ToolDenied
from orchestra.agents import AgentContext
from orchestra.bridge.testing import check_budget_trace
from orchestra.skills import HookRegistry, StepEvents, load

pytestmark = pytest.mark.anyio

EMPTY = HookRegistry()  # a guard with no hooks at all: only the budget may refuse


def guarded_tools(calls: list[str]) -> tuple[Any, Any]:
    @EMPTY.guard("search")
    async def search(q: str) -> str:
        calls.append(f"search:{q}")
        return q.upper()

    @EMPTY.guard("fetch")
    def fetch(url: str) -> str:  # a def tool: it runs in a worker thread
        calls.append(f"fetch:{url}")
        return url

    return search, fetch


class ScriptedModel:
    """A model turn as the agent bridges report it: ``StepStart``, the answer, ``StepEnd``."""

    def __init__(self, usage: tuple[int, int] = (100, 10), model: str = "m") -> None:
        self.steps = StepEvents(None)  # no step hooks: only budgets watch the turns
        self.usage = usage
        self.model = model
        self.made = 0

    async def call(self) -> str:
        turn = await self.steps.begin(
            lambda _: None, agent_name="a", step=self.made + 1, model=self.model, message_count=1
        )
        self.made += 1  # the model answers only past StepStart
        await self.steps.finish(
            turn, lambda _: None, input_tokens=self.usage[0], output_tokens=self.usage[1]
        )
        return "answer"


# -- configuration ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "error", "words"),
    [
        ({"max_tool_calls": -1}, ValueError, "max_tool_calls must be >= 0"),
        ({"max_model_calls": 1.5}, TypeError, "whole number"),
        ({"max_input_tokens": "10"}, TypeError, "must be a number"),
        ({"max_cost_usd": -0.1, "prices": {"m": {}}}, ValueError, ">= 0"),
        ({"max_cost_usd": 1.0}, ValueError, "needs prices="),
        ({"prices": {"m": {"input_token": 1e-6}}}, ValueError, "did you mean 'input_tokens'"),
        ({"prices": {"m": {"input_tokens": -1}}}, ValueError, ">= 0"),
        ({"per_tool": {"search": -2}}, ValueError, "per_tool['search']"),
        ({"scope": "forest"}, ValueError, "'run' or 'tree'"),
        ({"enforce": "no"}, TypeError, "enforce must be a bool"),
    ],
)
def test_a_bad_budget_is_refused_when_made(
    kwargs: dict[str, Any], error: type[Exception], words: str
) -> None:
    with pytest.raises(error, match=None) as info:
        Budget(**kwargs)
    assert words in str(info.value)


def test_unknown_key_from_a_mapping() -> None:
    with pytest.raises(ValueError, match=r"unknown budget field 'max_tools_calls' \(did you"):
        Budget.from_mapping({"max_tools_calls": 2})


def test_a_budget_is_frozen_and_a_hook_of_both_traits() -> None:
    budget = Budget(max_tool_calls=2, per_tool={"search": 1})
    with pytest.raises(AttributeError, match="frozen"):
        budget.scope = "tree"  # type: ignore[misc]
    with pytest.raises(TypeError):
        budget.limits["tool_calls"] = 3  # type: ignore[index]
    assert repr(budget) == "Budget(max_tool_calls=2, per_tool={'search': 1})"
    orchestra.HookChain([budget], orchestra.TaskHooks)
    orchestra.HookChain([budget], orchestra.SubagentHooks)


# -- tool calls ------------------------------------------------------------------------------


async def test_the_third_tool_call_is_refused_before_its_body_runs() -> None:
    calls: list[str] = []
    search, fetch = guarded_tools(calls)
    dag = orchestra.DAG("tools")
    refused: list[ToolDenied] = []

    @dag.task
    async def work() -> list[str]:
        out = [await search("a"), await fetch("b")]
        try:
            await search("c")
        except ToolDenied as denied:
            refused.append(denied)
        return out

    result = await orchestra.run(dag, hooks=[Budget(max_tool_calls=2)])
    assert result.ok
    assert calls == ["search:a", "fetch:b"]
    assert [d.reason for d in refused] == ["budget: tool calls 2/2"]
    [use] = result.budgets
    assert use.used["tool_calls"] == 2
    assert use.exceeded == "budget: tool calls 2/2"


async def test_a_dag_task_is_not_a_tool_call_and_each_run_counts_alone() -> None:
    calls: list[str] = []
    search, _ = guarded_tools(calls)
    dag = orchestra.DAG("three")
    for name in ("a", "b", "c"):
        dag.add(orchestra.Task(id=name, fn=lambda: "done"))

    @dag.task
    async def one() -> str:
        return str(await search("x"))

    budget = Budget(max_tool_calls=1)
    for _ in range(2):  # one Budget, two runs: each has its own count
        result = await orchestra.run(dag, hooks=[budget])
        assert result.ok, result.errors
        assert result.budgets[0].used["tool_calls"] == 1
    assert calls == ["search:x", "search:x"]


async def test_per_tool_limit() -> None:
    calls: list[str] = []
    search, fetch = guarded_tools(calls)
    dag = orchestra.DAG("per-tool")

    @dag.task
    async def work() -> None:
        await search("a")
        await fetch("b")
        await search("c")

    result = await orchestra.run(dag, hooks=[Budget(per_tool={"search": 1})])
    assert result.states["work"] is TaskState.FAILED
    error = result.errors["work"]
    assert isinstance(error, ToolDenied)
    assert error.reason == "budget: calls of tool 'search' 1/1"
    assert calls == ["search:a", "fetch:b"]


async def test_audit_mode_refuses_nothing_and_records_each_would_exceed(
    exporter: InMemorySpanExporter,
) -> None:
    calls: list[str] = []
    search, _ = guarded_tools(calls)
    dag = orchestra.DAG("audit")

    @dag.task
    async def work() -> None:
        for q in "abcd":
            await search(q)

    result = await orchestra.run(dag, hooks=[Budget(max_tool_calls=2, enforce=False)])
    assert result.ok
    assert len(calls) == 4
    [use] = result.budgets
    assert use.would_exceed == (
        "would exceed: budget: tool calls 2/2",
        "would exceed: budget: tool calls 3/2",
    )
    assert use.exceeded is None
    [run_span] = [s for s in exporter.get_finished_spans() if s.name.startswith("run ")]
    assert run_span.attributes is not None
    assert run_span.attributes["orchestra.budget.tool_calls.used"] == 4
    assert run_span.attributes["orchestra.budget.tool_calls.limit"] == 2
    events = [e for e in run_span.events if e.name == "orchestra.budget.would_exceed"]
    assert len(events) == 2


# -- model calls, tokens, cost ---------------------------------------------------------------


async def test_model_call_past_the_limit_is_never_made_and_after_run_sees_it() -> None:
    model = ScriptedModel()
    seen: list[orchestra.RunResult] = []

    class After(orchestra.TaskHooks):
        def after_run(self, ctx: orchestra.RunContext, result: orchestra.RunResult) -> None:
            seen.append(result)

    dag = orchestra.DAG("models")

    @dag.task
    async def agent() -> None:
        for _ in range(5):
            await model.call()

    result = await orchestra.run(dag, hooks=[Budget(max_model_calls=3), After()], max_attempts=5)
    assert model.made == 3
    assert result.attempts["agent"] == 1
    error = result.errors["agent"]
    assert isinstance(error, BudgetExceeded)
    assert (error.kind, error.used, error.limit) == ("model_calls", 3, 3)
    assert str(error) == "budget: model calls 3/3"
    assert seen[0].errors["agent"] is error


@pytest.mark.parametrize(
    ("budget", "made", "reason"),
    [
        (Budget(max_input_tokens=250), 3, "budget: input tokens 300/250"),
        (Budget(max_output_tokens=25), 3, "budget: output tokens 30/25"),
        (Budget(max_output_tokens=20), 2, "budget: output tokens 20/20"),  # at it: no more
        (
            Budget(max_cost_usd=0.002, prices={"m": {"input_tokens": 1e-5}}),
            2,
            "budget: cost USD 0.002/0.002",
        ),
        (
            Budget(max_cost_usd=0.0015, prices={"*": {"input_tokens": 1e-5}}),
            2,
            "budget: cost USD 0.002/0.0015",
        ),
        (
            Budget(max_cost_usd=1.0, prices={"other": {"input_tokens": 1e-5}}),
            0,
            "budget: no price for model 'm': its cost is unknown",
        ),
    ],
)
async def test_token_and_cost_limits_end_the_run_after_the_call_that_crossed_them(
    budget: Budget, made: int, reason: str
) -> None:
    model = ScriptedModel(usage=(100, 10))
    dag = orchestra.DAG("tokens")

    @dag.task
    async def agent() -> None:
        for _ in range(5):
            await model.call()

    result = await orchestra.run(dag, hooks=[budget])
    assert model.made == made
    assert str(result.errors["agent"]) == reason


# -- the dispatcher --------------------------------------------------------------------------


class ToolAgent:
    """A subagent that calls a guarded tool ``n`` times, then perhaps dispatches a child."""

    def __init__(self, name: str, tool: Any, n: int, child: str | None = None) -> None:
        self.name = name
        self.tool = tool
        self.n = n
        self.child = child

    async def run(self, task: str, ctx: AgentContext) -> list[Any]:
        out: list[Any] = []
        for i in range(self.n):
            try:
                out.append(await self.tool(f"{self.name}{i}"))
            except ToolDenied as denied:
                out.append(denied.reason)
        if self.child is not None:
            assert ctx.dispatcher is not None
            child = await ctx.dispatcher.dispatch(self.child, "sub", parent=self.name)
            out.append(child.output)
        return out


async def test_dispatcher_refuses_the_third_tool_call() -> None:
    calls: list[str] = []
    search, _ = guarded_tools(calls)
    d = Dispatcher([ToolAgent("a", search, 3)], hooks=[Budget(max_tool_calls=2)])
    result = await d.dispatch("a", "go")
    assert result.output == ["A0", "A1", "budget: tool calls 2/2"]
    assert calls == ["search:a0", "search:a1"]
    assert result.budgets[0].used["tool_calls"] == 2


@pytest.mark.parametrize(("scope", "parent_used"), [("run", 1), ("tree", 3)])
async def test_scope_tree_counts_a_delegated_subagents_calls(scope: str, parent_used: int) -> None:
    calls: list[str] = []
    search, _ = guarded_tools(calls)
    budget = Budget(max_tool_calls=3, scope=scope)  # type: ignore[arg-type]
    agents = [ToolAgent("parent", search, 1, child="child"), ToolAgent("child", search, 3)]
    result = await Dispatcher(agents, hooks=[budget]).dispatch("parent", "go")
    parent_out = result.output
    assert parent_out[0] == "PARENT0"
    if scope == "tree":  # one count for the tree: the child gets the two calls left
        assert parent_out[1] == ["CHILD0", "CHILD1", "budget: tool calls 3/3"]
    else:  # the child counts on its own
        assert parent_out[1] == ["CHILD0", "CHILD1", "CHILD2"]
    assert result.budgets[0].used["tool_calls"] == parent_used


async def test_dispatcher_model_budget_fails_the_dispatch_with_budget_exceeded() -> None:
    model = ScriptedModel()

    class ModelAgent:
        name = "m"

        async def run(self, task: str, ctx: AgentContext) -> str:
            for _ in range(4):
                await model.call()
            return "done"

    d = Dispatcher([ModelAgent()], hooks=[Budget(max_model_calls=2), orchestra.RetryPolicy()])
    with pytest.raises(orchestra.DispatchError) as info:
        await d.dispatch("m", "go")
    assert isinstance(info.value.__cause__, BudgetExceeded)
    assert "budget: model calls 2/2" in str(info.value)
    assert info.value.attempts == 1
    assert model.made == 2  # not retried: RetryPolicy never retries a BudgetExceeded


async def test_a_bridges_charge_counts_and_refuses_as_pre_does_and_the_body_counts_once() -> None:
    from orchestra.bridge import Proceed, Refuse, ToolCall, ToolHooks, open_budgets

    calls: list[str] = []
    search, _ = guarded_tools(calls)
    hooks = ToolHooks(None)  # what a bridge with budgets alone drives
    assert hooks.charges_only
    with open_budgets([Budget(max_tool_calls=4)]) as run:
        assert hooks.charge("search") is None  # 1: a body that calls no guarded function
        hooks.ran()
        assert await search("a") == "A"  # 2: a call of its own, after that body ran
        assert await hooks.pre(ToolCall("search", {"q": "b"})) == Proceed({"q": "b"})  # 3
        assert await search("b") == "B"  # the body of the call charged above: counted once
        await hooks.post(ToolCall("search", {"q": "b"}), "B")
        assert hooks.charge("search") is None  # 4
        assert hooks.charge("search") == "budget: tool calls 4/4"
        assert await hooks.pre(ToolCall("search", {})) == Refuse("budget: tool calls 4/4")
        [use] = run.uses()
    assert use.used["tool_calls"] == 4
    assert calls == ["search:a", "search:b"]


async def test_no_budget_no_charge() -> None:
    calls: list[str] = []
    search, _ = guarded_tools(calls)
    model = ScriptedModel()
    assert not model.steps.watching
    for _ in range(5):
        await search("x")
        await model.call()
    assert model.made == 5


# -- budget: in orchestra files --------------------------------------------------------------

BAD_FILE = """\
hooks: {}
budget:
  max_tool_calls: -1
  max_modle_calls: 3
  prices:
    gpt-4o:
      input_tokens: 1.0e-6
      cached_tokens: 1.0e-7
"""


@pytest.mark.parametrize("name", ["orchestra.yaml", "echo-agent.yaml"])  # each file with budget:
def test_a_bad_budget_is_refused_at_load_with_file_and_line(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_text(BAD_FILE)
    with pytest.raises(orchestra.ConfigError) as info:
        load(path)
    found = {(e.line, e.field) for e in info.value.errors}
    assert found == {
        (3, "budget.max_tool_calls"),
        (4, "budget.max_modle_calls"),
        (8, "budget.prices.gpt-4o.cached_tokens"),
    }
    text = str(info.value)
    assert f"{path}:3" in text
    assert "max_tool_calls must be >= 0" in text
    assert "did you mean 'max_model_calls'" in text
    assert "unknown token kind" in text


def test_budget_needs_a_mapping_and_its_keys_together(tmp_path: Path) -> None:
    path = tmp_path / "orchestra.yaml"
    path.write_text("budget: 3\n")
    with pytest.raises(orchestra.ConfigError, match=r"orchestra.yaml:1.*expected a mapping"):
        load(path)
    path.write_text("budget:\n  max_cost_usd: 1\n")
    with pytest.raises(orchestra.ConfigError, match=r"orchestra.yaml:1.*needs prices="):
        load(path)


async def test_a_files_budget_holds_in_the_runs_its_registry_guards(tmp_path: Path) -> None:
    path = tmp_path / "orchestra.yaml"
    path.write_text("budget:\n  max_tool_calls: 1\n  scope: tree\n")
    registry = load(path)
    [budget] = registry.budgets
    assert budget.limits == {"tool_calls": 1}
    assert budget.scope == "tree"
    calls: list[str] = []
    search, _ = guarded_tools(calls)
    dag = orchestra.DAG("file")
    agent = ToolAgent("t", search, 2)

    async def work() -> list[Any]:
        return await agent.run("", None)  # type: ignore[arg-type]

    dag.add(orchestra.Task(id="work", fn=work))
    result = await orchestra.run(dag, hooks=[registry.as_task_hooks()])
    assert result.outputs["work"] == ["T0", "budget: tool calls 1/1"]
    assert calls == ["search:t0"]
    d = Dispatcher([ToolAgent("a", search, 2)], hooks=[registry.as_subagent_hooks()])
    assert (await d.dispatch("a", "go")).output == ["A0", "budget: tool calls 1/1"]


# -- the how-to's own words ------------------------------------------------------------------

HOWTO = Path(__file__).parent.parent / "docs" / "howto" / "budgets.md"


def _blocks(language: str) -> list[str]:
    parts = HOWTO.read_text().split(f"```{language}\n")[1:]
    return [part.split("```", 1)[0] for part in parts]


def test_the_howtos_example_prints_what_it_says(capsys: pytest.CaptureFixture[str]) -> None:
    # the page's own examples, as a reader would run them
    exec(compile(_blocks("python")[0], str(HOWTO), "exec"), {"__name__": "howto"})
    assert capsys.readouterr().out.splitlines() == ["budget: tool calls 2/2", "2"]
    exec(compile(_blocks("python")[1], str(HOWTO), "exec"), {"Budget": Budget})


def test_the_howtos_file_loads(tmp_path: Path) -> None:
    path = tmp_path / "orchestra.yaml"
    path.write_text(_blocks("yaml")[0])
    [budget] = load(path).budgets
    assert budget.limits["cost_usd"] == 2.0
    assert budget.per_tool == {"web_search": 10}


def test_check_budget_trace_reads_a_run_as_the_trace_tools_do(
    exporter: InMemorySpanExporter, tmp_path: Path
) -> None:
    calls: list[str] = []
    search, _ = guarded_tools(calls)
    dag = orchestra.DAG("traced")

    @dag.task
    async def work() -> None:
        await search("a")

    orchestra.run_sync(dag, hooks=[Budget(max_tool_calls=3)])
    spans = exporter.get_finished_spans()
    figures = check_budget_trace(spans, tmp_path, shown="budget: tool calls 1/3")
    assert figures == {
        "orchestra.budget.tool_calls.used": 1,
        "orchestra.budget.tool_calls.limit": 3,
    }
    with pytest.raises(AssertionError, match=r"trace show did not say 'budget: tool calls 2/3'"):
        check_budget_trace(spans, tmp_path, shown="budget: tool calls 2/3")
    with pytest.raises(AssertionError, match=r"expected one run span, got \[\]"):
        check_budget_trace([s for s in spans if not s.name.startswith("run ")], tmp_path, shown="")
