"""DAG tasks executed by subagents: TaskHooks and SubagentHooks firing together."""

from __future__ import annotations

from typing import Any

import pytest

import orchestra
from orchestra import (
    DAG,
    Delegate,
    Dispatcher,
    DispatchError,
    Retry,
    Subagent,
    SubagentHookContext,
    SubagentHooks,
    TaskHookContext,
    TaskHooks,
    TaskState,
)
from orchestra.agents import AgentContext

pytestmark = pytest.mark.anyio


class Agent(Subagent):
    def __init__(self, name: str, failures: int = 0) -> None:
        self.name = name
        self.failures = failures

    async def run(self, task: str, ctx: AgentContext) -> str:
        if ctx.attempt <= self.failures:
            raise ConnectionError(f"{self.name} down")
        return f"{self.name}({task})"


class Both(TaskHooks, SubagentHooks):
    """One object on both sides, recording every moment in one list."""

    def __init__(self, events: list[tuple[Any, ...]], agent_answer: Any = None) -> None:
        self.events = events
        self.agent_answer = agent_answer

    def before_execute(self, ctx: TaskHookContext) -> None:
        self.events.append(("task.before", ctx.task.id, ctx.attempt, ctx.executor))

    def after_execute(self, ctx: TaskHookContext, result: Any) -> None:
        self.events.append(("task.after", ctx.task.id, result))

    def on_failure(self, ctx: Any, error: BaseException) -> Any:
        if isinstance(ctx, TaskHookContext):
            self.events.append(("task.failure", ctx.task.id, ctx.attempt, type(error)))
            return None
        self.events.append(("agent.failure", ctx.subagent_name, ctx.attempt, type(error)))
        return self.agent_answer

    async def before_dispatch(self, ctx: SubagentHookContext) -> None:
        self.events.append(
            ("agent.before", ctx.subagent_name, ctx.attempt, ctx.parent_agent, ctx.task)
        )

    async def after_dispatch(self, ctx: SubagentHookContext, result: Any) -> None:
        self.events.append(("agent.after", ctx.subagent_name, result.output))


def research_dag() -> DAG:
    dag = DAG("study")

    @dag.task
    def question() -> str:
        return "why?"

    @dag.task(deps=[question], agent="researcher")
    def research(question: str) -> str:
        return f"look into {question}"

    @dag.task(deps=[research])
    def report(research: str) -> str:
        return f"report on {research}"

    return dag


async def test_agent_task_fires_task_and_subagent_hooks_in_order() -> None:
    events: list[tuple[Any, ...]] = []
    hooks = Both(events, agent_answer=Retry(0))
    async with Dispatcher([Agent("researcher", failures=1)], hooks=[hooks]) as d:
        result = await orchestra.run(research_dag(), hooks=[hooks], dispatcher=d)
    assert result.ok
    output = "researcher(look into why?)"
    assert result.outputs["research"] == output
    assert result.outputs["report"] == f"report on {output}"
    assert events == [
        ("task.before", "question", 1, None),
        ("task.after", "question", "why?"),
        ("task.before", "research", 1, "researcher"),
        ("agent.before", "researcher", 1, "study", "look into why?"),
        ("agent.failure", "researcher", 1, ConnectionError),
        ("agent.before", "researcher", 2, "study", "look into why?"),
        ("agent.after", "researcher", output),
        ("task.after", "research", output),
        ("task.before", "report", 1, None),
        ("task.after", "report", f"report on {output}"),
    ]


async def test_failed_dispatch_is_the_task_failure_and_task_retries_dispatch_again() -> None:
    events: list[tuple[Any, ...]] = []
    hooks = Both(events)
    dag = DAG("study")

    @dag.task(agent="researcher", retries=1)
    def research() -> str:
        return "topic"

    d = Dispatcher([Agent("researcher", failures=10)], hooks=[hooks])
    result = await orchestra.run(dag, hooks=[hooks], dispatcher=d)
    assert result.states["research"] is TaskState.FAILED
    error = result.errors["research"]
    assert isinstance(error, DispatchError)
    assert isinstance(error.__cause__, ConnectionError)
    assert result.attempts["research"] == 2
    one_attempt = [
        ("agent.before", "researcher", 1, "study", "topic"),
        ("agent.failure", "researcher", 1, ConnectionError),
    ]
    assert events == [
        ("task.before", "research", 1, "researcher"),
        *one_attempt,
        ("task.failure", "research", 1, DispatchError),
        ("task.before", "research", 2, "researcher"),
        *one_attempt,
        ("task.failure", "research", 2, DispatchError),
    ]


async def test_delegation_inside_a_dag_task() -> None:
    events: list[tuple[Any, ...]] = []
    hooks = Both(events, agent_answer=Delegate("fallback"))
    agents = [Agent("researcher", failures=10), Agent("fallback")]
    dag = DAG("study")

    @dag.task(agent="researcher")
    async def research() -> str:
        return "topic"

    async with Dispatcher(agents, hooks=[hooks]) as d:
        result = await orchestra.run(dag, dispatcher=d)
    assert result.outputs == {"research": "fallback(topic)"}
    assert [e[:2] for e in events] == [
        ("agent.before", "researcher"),
        ("agent.failure", "researcher"),
        ("agent.before", "fallback"),
        ("agent.after", "fallback"),
    ]


def test_run_sync_with_an_unopened_dispatcher() -> None:
    d = Dispatcher([Agent("researcher")])
    result = orchestra.run_sync(research_dag(), dispatcher=d)
    assert result.ok
    assert result.outputs["research"] == "researcher(look into why?)"


class Fatal(BaseException):
    pass


async def test_base_exception_from_agent_goes_through_both_hooks_and_stops_the_run() -> None:
    class Doomed(Subagent):
        name = "doomed"

        async def run(self, task: str, ctx: AgentContext) -> None:
            raise Fatal

    events: list[tuple[Any, ...]] = []
    hooks = Both(events, agent_answer=Retry(0))
    dag = DAG("study")

    @dag.task(agent="doomed", retries=3)
    def research() -> str:
        return "topic"

    d = Dispatcher([Doomed()], hooks=[hooks])
    with pytest.raises(Fatal):
        await orchestra.run(dag, hooks=[hooks], dispatcher=d)
    assert events == [
        ("task.before", "research", 1, "doomed"),
        ("agent.before", "doomed", 1, "study", "topic"),
        ("agent.failure", "doomed", 1, Fatal),
        ("task.failure", "research", 1, Fatal),
    ]
