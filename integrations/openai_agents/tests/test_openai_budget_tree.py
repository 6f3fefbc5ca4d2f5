"""``Budget`` across the agents of one OpenAI Agents run and the runs nested in it.

A handoff moves the same run to another agent: its calls are the run's, whatever the
scope. An agent used as a tool (``agent.as_tool(...)``) runs inside the tool call: not
given a budget of its own, its calls count toward the run's; given the run's budget
(``as_tool(hooks=OrchestraRunHooks([budget]))``, or a nested ``bridge.run`` in a tool),
``scope="tree"`` counts them toward the outer run, the default ``scope="run"`` on their own.
"""

from __future__ import annotations

from typing import Any

import pytest
from agents import Agent, function_tool
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call
from agents.usage import Usage
from bridge_helpers import drive, tool_outputs
from orchestra_openai_agents import OrchestraRunHooks

from orchestra import Budget, BudgetExceeded

pytestmark = pytest.mark.anyio
SCOPES = pytest.mark.parametrize("scope", ["run", "tree"])
USAGE = Usage(requests=1, input_tokens=100, output_tokens=10, total_tokens=110)


def turns(*calls: tuple[str, dict[str, Any], str], answer: str = "done") -> ScriptedModel:
    """One turn per tool call (name, arguments, call id), then ``answer``."""
    steps: list[Any] = [ModelStep([function_call(n, a, call_id=c)], USAGE) for n, a, c in calls]
    steps.append(ModelStep([assistant_message(answer)], USAGE))
    return ScriptedModel(steps)


def lookup(ran: list[str]) -> Any:
    @function_tool
    def lookup(key: str) -> str:
        """Look a key up."""
        ran.append(key)
        return f"value of {key}"

    return lookup


def inner_agent(ran: list[str]) -> tuple[Agent[None], ScriptedModel]:
    """An agent that looks up ``i1`` and ``i2``, then answers."""
    model = turns(("lookup", {"key": "i1"}, "i1"), ("lookup", {"key": "i2"}, "i2"), answer="inner")
    return Agent(name="inner", model=model, tools=[lookup(ran)]), model


@SCOPES
async def test_a_handoffs_target_counts_toward_the_run_whatever_the_scope(
    mode: str, scope: str
) -> None:
    ran: list[str] = []
    inner, inner_model = inner_agent(ran)
    outer_model = turns(("lookup", {"key": "o1"}, "o1"), ("transfer_to_inner", {}, "h1"))
    outer = Agent(name="outer", model=outer_model, tools=[lookup(ran)], handoffs=[inner])
    budget = Budget(max_tool_calls=2, scope=scope)  # type: ignore[arg-type]
    result = await drive(OrchestraRunHooks([budget]), outer, "go", mode)
    assert result.final_output == "inner"
    assert ran == ["o1", "i1"]  # the third call, the inner agent's second, never ran
    assert "budget: tool calls 2/2" in tool_outputs(inner_model)["i2"]


async def test_a_handoffs_target_counts_its_model_calls_toward_the_run(mode: str) -> None:
    ran: list[str] = []
    inner, inner_model = inner_agent(ran)
    outer_model = turns(("transfer_to_inner", {}, "h1"))
    outer = Agent(name="outer", model=outer_model, handoffs=[inner])
    bridge = OrchestraRunHooks([Budget(max_model_calls=2, scope="tree")])
    with pytest.raises(BudgetExceeded, match=r"budget: model calls 2/2"):
        await drive(bridge, outer, "go", mode)
    assert (len(outer_model.calls), len(inner_model.calls)) == (1, 1)
    assert ran == ["i1"]


def outer_with(tool: Any, tool_name: str) -> tuple[Agent[None], ScriptedModel]:
    """An agent that calls ``tool`` once, then answers."""
    model = turns((tool_name, {"input": "look i1 and i2"}, "t1"), answer="outer")
    return Agent(name="outer", model=model, tools=[tool]), model


async def test_an_agent_as_tool_not_given_a_budget_counts_toward_the_run(mode: str) -> None:
    ran: list[str] = []
    inner, inner_model = inner_agent(ran)
    outer, _ = outer_with(inner.as_tool("inner", "Looks keys up."), "inner")
    result = await drive(OrchestraRunHooks([Budget(max_tool_calls=2)]), outer, "go", mode)
    assert result.final_output == "outer"
    assert ran == ["i1"]  # the outer call of the tool, then the inner agent's first
    assert "budget: tool calls 2/2" in tool_outputs(inner_model)["i2"]


async def test_an_agent_as_tool_counts_its_model_calls_toward_the_run(mode: str) -> None:
    ran: list[str] = []
    inner, inner_model = inner_agent(ran)
    outer, outer_model = outer_with(inner.as_tool("inner", "Looks keys up."), "inner")
    bridge = OrchestraRunHooks([Budget(max_model_calls=3)])
    with pytest.raises(BudgetExceeded, match=r"budget: model calls 3/3"):
        await drive(bridge, outer, "go", mode)
    assert (len(outer_model.calls), len(inner_model.calls)) == (1, 2)
    assert ran == ["i1", "i2"]  # the inner agent's two turns asked for them


@SCOPES
async def test_an_agent_as_tool_given_the_budget_counts_toward_the_run_with_scope_tree(
    mode: str, scope: str
) -> None:
    budget = Budget(max_tool_calls=2, scope=scope)  # type: ignore[arg-type]
    ran: list[str] = []
    inner, inner_model = inner_agent(ran)
    tool = inner.as_tool("inner", "Looks keys up.", hooks=OrchestraRunHooks([budget]))
    outer, _ = outer_with(tool, "inner")
    result = await drive(OrchestraRunHooks([budget]), outer, "go", mode)
    assert result.final_output == "outer"
    if scope == "tree":  # one count: the outer call of the tool is one of the two
        assert ran == ["i1"]
        assert "budget: tool calls 2/2" in tool_outputs(inner_model)["i2"]
    else:  # the inner run has two calls of its own
        assert ran == ["i1", "i2"]
        assert "budget:" not in tool_outputs(inner_model)["i2"]


@SCOPES
async def test_a_nested_bridge_run_in_a_tool_counts_toward_the_run_with_scope_tree(
    mode: str, scope: str
) -> None:
    budget = Budget(max_model_calls=3, scope=scope)  # type: ignore[arg-type]
    ran: list[str] = []
    inner, inner_model = inner_agent(ran)

    @function_tool
    async def delegate(input: str) -> str:
        """Hand the work to the inner agent."""
        try:
            return str((await OrchestraRunHooks([budget]).run(inner, input)).final_output)
        except BudgetExceeded as error:
            return error.reason

    outer, outer_model = outer_with(delegate, "delegate")
    bridge = OrchestraRunHooks([budget])
    if scope == "tree":  # the outer turn, the inner two: the tree has no fourth call
        with pytest.raises(BudgetExceeded, match=r"budget: model calls 3/3"):
            await drive(bridge, outer, "go", mode)  # the outer run's second turn
        assert (len(outer_model.calls), len(inner_model.calls)) == (1, 2)
        assert ran == ["i1", "i2"]  # asked for by the inner agent's two turns
    else:  # the inner run's three calls are its own; the outer run makes its second
        result = await drive(bridge, outer, "go", mode)
        assert result.final_output == "outer"
        assert (len(outer_model.calls), len(inner_model.calls)) == (2, 3)
        assert ran == ["i1", "i2"]
        assert tool_outputs(outer_model)["t1"] == "inner"
