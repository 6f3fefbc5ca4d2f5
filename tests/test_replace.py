"""``Replace`` in all six places: inputs, outputs and recovery, for tasks and subagents."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

import orchestra
from orchestra import (
    DAG,
    Dispatcher,
    DispatchError,
    Fail,
    Replace,
    Retry,
    Skip,
    SubagentHookContext,
    SubagentHooks,
    SubagentResult,
    Task,
    TaskHookContext,
    TaskHooks,
    TaskState,
    merge,
)
from orchestra.agents import AgentContext

pytestmark = pytest.mark.anyio


def test_replace_ranks_below_retry_and_above_no_opinion() -> None:
    assert merge([None, Replace(1)]) == Replace(1)
    assert merge([Replace(1), Retry(2.0)]) == Retry(2.0)
    assert merge([Replace(1), Skip("s")]) == Skip("s")
    assert merge([Replace("first"), Replace("second")]) == Replace("first")
    assert Replace(1) == Replace(1)
    assert hash(Replace((1, 2))) == hash(Replace((1, 2)))


# --- tasks ----------------------------------------------------------------------------


class Scale(TaskHooks):
    """Replaces the inputs, multiplying each by ``factor``; records what it saw."""

    def __init__(self, factor: int, seen: list[dict[str, Any]]) -> None:
        self.factor = factor
        self.seen = seen

    def before_execute(self, ctx: TaskHookContext) -> Replace | None:
        if not ctx.inputs:
            return None
        self.seen.append(dict(ctx.inputs))
        return Replace({k: v * self.factor for k, v in ctx.inputs.items()})


class Scale2(Scale):
    pass


async def test_before_execute_replaces_inputs_and_replaces_chain() -> None:
    seen: list[dict[str, Any]] = []
    got: list[Mapping[str, Any]] = []

    class Look(TaskHooks):
        def after_execute(self, ctx: TaskHookContext, result: Any) -> None:
            got.append(ctx.inputs)

    dag = DAG("inputs")
    dag.add(Task(id="a", fn=lambda: 2))
    dag.add(Task(id="b", fn=lambda a: a + 1, deps=["a"]))
    hooks = [Scale(10, seen), Scale2(3, seen), Look()]
    result = await orchestra.run(dag, hooks=hooks)
    # the second hook saw the inputs as the first replaced them: 2 -> 20 -> 60
    assert seen == [{"a": 2}, {"a": 20}]
    assert result.outputs["b"] == 61
    assert dict(got[-1]) == {"a": 60}  # later moments see the inputs the body got
    with pytest.raises(TypeError):
        got[-1]["a"] = 0  # type: ignore[index]  # read-only


async def test_skip_or_fail_wins_over_replace() -> None:
    class Stop(TaskHooks):
        def before_execute(self, ctx: TaskHookContext) -> Skip:
            return Skip("not now")

    dag = DAG("wins")
    dag.add(Task(id="a", fn=lambda: 1))
    dag.add(Task(id="b", fn=lambda a: a, deps=["a"]))
    result = await orchestra.run(dag, hooks=[Scale(10, []), Stop()])
    assert result.states["b"] is TaskState.SKIPPED


async def test_replace_of_inputs_that_is_no_mapping_is_a_hook_error() -> None:
    class Bad(TaskHooks):
        def before_execute(self, ctx: TaskHookContext) -> Replace:
            return Replace(42)

    dag = DAG("bad_inputs")
    dag.add(Task(id="a", fn=lambda: "ran"))
    result = await orchestra.run(dag, hooks=[Bad()])
    assert result.outputs == {"a": "ran"}  # counted as no opinion
    assert [str(e) for e in result.hook_errors] == [
        "hook Bad.before_execute for 'a' answered Replace(42) of the inputs; a mapping of "
        "keyword arguments expected"
    ]


async def test_after_execute_replaces_the_output_in_a_chain() -> None:
    class Upper(TaskHooks):
        def after_execute(self, ctx: TaskHookContext, result: Any) -> Replace:
            return Replace(result.upper())

    class Exclaim(TaskHooks):
        def after_execute(self, ctx: TaskHookContext, result: Any) -> Replace:
            return Replace(result + "!")

    dag = DAG("outputs")
    dag.add(Task(id="a", fn=lambda: "hi"))
    dag.add(Task(id="b", fn=lambda a: a * 2, deps=["a"]))
    result = await orchestra.run(dag, hooks=[Upper(), Exclaim()])
    assert result.outputs == {"a": "HI!", "b": "HI!HI!!"}  # downstream gets the replaced one


async def test_on_failure_replace_recovers_with_a_substitute_output() -> None:
    class Fallback(TaskHooks):
        def on_failure(self, ctx: TaskHookContext, error: BaseException) -> Replace:
            return Replace({"rates": "cached"})

    class Second(TaskHooks):
        def on_failure(self, ctx: TaskHookContext, error: BaseException) -> Replace:
            return Replace("ignored: the first Replace wins here")

    def fetch() -> None:
        raise ConnectionError("rates service down")

    dag = DAG("recover")
    dag.add(Task(id="fetch", fn=fetch))
    dag.add(Task(id="use", fn=lambda fetch: fetch["rates"], deps=["fetch"]))
    result = await orchestra.run(dag, hooks=[Fallback(), Second()])
    assert result.ok
    assert result.states["fetch"] is TaskState.SUCCEEDED
    assert result.outputs == {"fetch": {"rates": "cached"}, "use": "cached"}
    assert isinstance(result.errors["fetch"], ConnectionError)  # the error is kept
    assert result.reasons["fetch"] == "recovered by Fallback.on_failure"


async def test_retry_wins_over_replace_in_on_failure() -> None:
    calls: list[int] = []

    def flaky() -> str:
        calls.append(1)
        if len(calls) < 2:
            raise ConnectionError
        return "fresh"

    class Both(TaskHooks):
        def on_failure(self, ctx: TaskHookContext, error: BaseException) -> Replace:
            return Replace("stale")

    dag = DAG("retry_first")
    dag.add(Task(id="a", fn=flaky, retries=1))
    result = await orchestra.run(dag, hooks=[Both(), orchestra.RetryPolicy()])
    assert result.outputs == {"a": "fresh"}


def test_replace_is_a_hook_error_where_not_allowed() -> None:
    class Early(TaskHooks):
        def before_run(self, ctx: orchestra.RunContext) -> Replace:
            return Replace("x")

    dag = DAG("not_allowed")
    dag.add(Task(id="a", fn=lambda: 1))
    result = orchestra.run_sync(dag, hooks=[Early()])
    assert result.ok
    assert "returned Replace(value='x'); None or Fail expected" in str(result.hook_errors[0])


# --- subagents ------------------------------------------------------------------------


class Echo:
    name = "echo"

    async def run(self, task: str, ctx: AgentContext) -> str:
        return f"echo: {task}"


class Broken:
    name = "broken"

    async def run(self, task: str, ctx: AgentContext) -> str:
        raise TimeoutError("model timed out")


async def test_before_dispatch_replaces_the_text_in_a_chain() -> None:
    seen: list[str] = []

    class Polite(SubagentHooks):
        def before_dispatch(self, ctx: SubagentHookContext) -> Replace:
            seen.append(ctx.task)
            return Replace(f"please {ctx.task}")

    class Brief(SubagentHooks):
        def before_dispatch(self, ctx: SubagentHookContext) -> Replace:
            seen.append(ctx.task)
            return Replace(f"{ctx.task}, briefly")

    d = Dispatcher([Echo()], hooks=[Polite(), Brief()])
    result = await d.dispatch("echo", "summarise")
    assert seen == ["summarise", "please summarise"]
    assert result.output == "echo: please summarise, briefly"


async def test_replace_of_text_that_is_no_str_is_a_hook_error() -> None:
    class Bad(SubagentHooks):
        def before_dispatch(self, ctx: SubagentHookContext) -> Replace:
            return Replace(["not", "text"])

    result = await Dispatcher([Echo()], hooks=[Bad()]).dispatch("echo", "hi")
    assert result.output == "echo: hi"
    assert "answered Replace(['not', 'text']) of the text dispatched; a str expected" in str(
        result.hook_errors[0]
    )


async def test_after_dispatch_replaces_the_output() -> None:
    class Redact(SubagentHooks):
        def after_dispatch(self, ctx: SubagentHookContext, result: SubagentResult) -> Replace:
            return Replace(result.output.replace("secret", "*****"))

    class Count(SubagentHooks):
        def after_dispatch(self, ctx: SubagentHookContext, result: SubagentResult) -> Replace:
            return Replace(f"{result.output} ({len(result.output)})")

    result = await Dispatcher([Echo()], hooks=[Redact(), Count()]).dispatch("echo", "secret")
    assert result.output == "echo: ***** (11)"


async def test_on_failure_replace_recovers_a_dispatch() -> None:
    class Canned(SubagentHooks):
        def on_failure(self, ctx: SubagentHookContext, error: BaseException) -> Replace:
            return Replace("no answer today")

    result = await Dispatcher([Broken()], hooks=[Canned()]).dispatch("broken", "hi")
    assert (result.agent, result.output, result.attempts) == ("broken", "no answer today", 1)
    assert isinstance(result.error, TimeoutError)


async def test_fail_wins_over_replace_in_a_dispatch() -> None:
    class Canned(SubagentHooks):
        def on_failure(self, ctx: SubagentHookContext, error: BaseException) -> Replace:
            return Replace("canned")

    class Strict(SubagentHooks):
        def on_failure(self, ctx: SubagentHookContext, error: BaseException) -> Fail:
            return Fail("no canned answers")

    with pytest.raises(DispatchError, match=r"failed by Strict\.on_failure: no canned answers"):
        await Dispatcher([Broken()], hooks=[Canned(), Strict()]).dispatch("broken", "hi")


# --- messages -------------------------------------------------------------------------


async def test_messages_reach_later_hooks_the_agent_and_the_results() -> None:
    class Context(SubagentHooks):
        def before_dispatch(self, ctx: SubagentHookContext) -> None:
            ctx.add_message("house style: short sentences")

    class Note(SubagentHooks):
        def after_dispatch(self, ctx: SubagentHookContext, result: SubagentResult) -> None:
            ctx.add_message(f"saw {len(ctx.messages)} message(s) before me")

    result = await Dispatcher([Echo()], hooks=[Context(), Note()]).dispatch("echo", "hi")
    assert result.output == "echo: hi\n\nhouse style: short sentences"
    assert result.messages == ("house style: short sentences", "saw 1 message(s) before me")

    class TaskNote(TaskHooks):
        def before_execute(self, ctx: TaskHookContext) -> None:
            ctx.add_message(f"attempt {ctx.attempt}")

        def on_end(self, ctx: TaskHookContext, state: TaskState) -> None:
            ctx.add_message(f"ended {state.value} after {ctx.messages}")

    dag = DAG("notes")
    dag.add(Task(id="a", fn=lambda: 1))
    run = await orchestra.run(dag, hooks=[TaskNote()])
    assert run.messages == {"a": ("attempt 1", "ended succeeded after ('attempt 1',)")}
    with pytest.raises(TypeError, match="add_message takes a str"):
        orchestra.TaskHookContext(
            task=dag.tasks["a"], attempt=1, executor=None, run_id="r"
        ).add_message(3)  # type: ignore[arg-type]


async def test_a_retried_attempt_starts_from_the_given_inputs_with_no_messages() -> None:
    # Each attempt's state is reset after a failure (the attempt loop in run_task):
    # the second attempt's hooks see the upstream outputs, not the first one's Replace,
    # and none of the first attempt's messages.
    seen: list[tuple[int, dict[str, Any], tuple[str, ...]]] = []

    class Double(TaskHooks):
        def before_execute(self, ctx: TaskHookContext) -> Replace | None:
            if ctx.task.id != "b":
                return None
            seen.append((ctx.attempt, dict(ctx.inputs), ctx.messages))
            ctx.add_message(f"attempt {ctx.attempt}")
            return Replace({"a": ctx.inputs["a"] * 2})

    calls: list[int] = []

    def flaky(a: int) -> int:
        calls.append(a)
        if len(calls) == 1:
            raise ValueError("first try")
        return a + 1

    dag = DAG("again")
    dag.add(Task(id="a", fn=lambda: 5))
    dag.add(Task(id="b", fn=flaky, deps=["a"], retries=1))
    result = await orchestra.run(dag, hooks=[Double()])
    assert result.states["b"] is TaskState.SUCCEEDED
    assert calls == [10, 10]  # each attempt's body got the inputs doubled once
    assert seen == [(1, {"a": 5}, ()), (2, {"a": 5}, ())]
    assert result.outputs["b"] == 11
    assert result.messages["b"] == ("attempt 2",)
