"""A bridged run cancelled from outside: ``after_run`` once, what it spent, the cancellation.

DESIGN: ``after_run`` is called exactly once per run, also when the run is cancelled from
outside; the pydantic-ai bridge hands it the run's ``RunResult`` with the cancellation
under the agent's name, and so does this one (under the workflow's name). The scripted
model asks for a tool whose body waits until the task awaiting the run is cancelled.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from agents import Agent, function_tool
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call
from agents.usage import Usage
from bridge_helpers import SpanLedger, drive
from orchestra_openai_agents import OrchestraRunHooks

from orchestra import Budget, RunContext, RunResult, TaskHooks

pytestmark = pytest.mark.anyio


class AfterRun(TaskHooks):
    """Records each ``after_run``; it awaits, so it must run shielded from the cancellation."""

    def __init__(self) -> None:
        self.seen: list[tuple[RunContext, RunResult]] = []

    async def after_run(self, ctx: RunContext, result: RunResult) -> None:
        await anyio.lowlevel.checkpoint()
        self.seen.append((ctx, result))


def stuck_agent(started: anyio.Event) -> tuple[Agent[None], ScriptedModel]:
    """An agent whose first turn calls ``lookup``, which waits until it is cancelled."""
    usage = Usage(requests=1, input_tokens=100, output_tokens=10, total_tokens=110)
    model = ScriptedModel(
        [
            ModelStep([function_call("lookup", {"key": "k1"}, call_id="c1")], usage),
            ModelStep([assistant_message("done")], usage),
        ]
    )

    @function_tool
    async def lookup(key: str) -> str:
        """Look a key up."""
        started.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    return Agent(name="ops", model=model, tools=[lookup]), model


async def cancel_with_task(run: Callable[[], Awaitable[Any]], started: anyio.Event) -> None:
    """``Task.cancel()`` on the task awaiting ``run``; it must end cancelled."""
    task = asyncio.ensure_future(run())
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert task.cancelled()


async def cancel_with_scope(run: Callable[[], Awaitable[Any]], started: anyio.Event) -> None:
    """An anyio cancel scope around ``run`` cancelled: nothing after ``run`` runs."""
    reached: list[str] = []
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as group:

            async def cancel() -> None:
                await started.wait()
                scope.cancel()

            group.start_soon(cancel)
            await run()
            reached.append("after the run")
    assert scope.cancelled_caught
    assert reached == []


@pytest.mark.parametrize("cancel", [cancel_with_task, cancel_with_scope])
async def test_after_run_sees_a_run_cancelled_from_outside_once(
    mode: str, cancel: Callable[..., Awaitable[None]], spans: SpanLedger
) -> None:
    started = anyio.Event()
    agent, model = stuck_agent(started)
    after = AfterRun()
    bridge = OrchestraRunHooks([Budget(max_model_calls=10, max_tool_calls=10), after])
    await cancel(lambda: drive(bridge, agent, "go", mode), started)
    [(ctx, result)] = after.seen  # once, with the cancellation
    assert ctx.dag == "ops"
    assert not result.ok
    [(name, error)] = result.errors.items()
    assert name == "ops"
    assert isinstance(error, asyncio.CancelledError)
    [use] = result.budgets  # what the run spent before it was cancelled
    assert (use.used["model_calls"], use.used["tool_calls"]) == (1, 1)
    assert use.used["input_tokens"] == 100
    assert len(model.calls) == 1
    run = spans.by_name()["invoke_workflow ops"]  # the run span ended, with the figures
    assert run.attributes is not None
    assert run.attributes["orchestra.budget.model_calls.used"] == 1
    assert run.attributes["orchestra.budget.tool_calls.used"] == 1
    assert "invoke_workflow ops" not in spans.open()


async def test_a_budget_run_cancelled_without_run_hooks_records_what_it_spent(
    mode: str, spans: SpanLedger
) -> None:
    started = anyio.Event()
    agent, _ = stuck_agent(started)
    bridge = OrchestraRunHooks([Budget(max_model_calls=10)])
    await cancel_with_task(lambda: drive(bridge, agent, "go", mode), started)
    run = spans.by_name()["invoke_workflow ops"]
    assert run.attributes is not None
    assert run.attributes["orchestra.budget.model_calls.used"] == 1
    assert "invoke_workflow ops" not in spans.open()


async def test_a_stream_closed_before_its_end_is_seen_once_by_after_run() -> None:
    started = anyio.Event()
    agent, _ = stuck_agent(started)
    after = AfterRun()
    result = await OrchestraRunHooks([after]).run_streamed(agent, "go")
    events = result.stream_events()
    await events.__anext__()  # the first event; the caller then stops reading
    await events.aclose()  # type: ignore[attr-defined]  # an async generator
    [(_, run)] = after.seen
    assert not run.ok
    result.cancel()  # the SDK's own run, still waiting in the tool


async def test_a_run_cancelled_while_before_run_waits_is_seen_once_by_after_run(
    mode: str,
) -> None:
    started = anyio.Event()

    class Waits(AfterRun):
        async def before_run(self, ctx: RunContext) -> None:
            started.set()
            await anyio.sleep_forever()

    agent, model = stuck_agent(anyio.Event())
    hook = Waits()
    await cancel_with_task(lambda: drive(OrchestraRunHooks([hook]), agent, "go", mode), started)
    [(_, result)] = hook.seen
    assert isinstance(result.errors["ops"], asyncio.CancelledError)
    assert len(model.calls) == 0
