"""Mistakes caught before anything runs: hook registration, DAG parameters, run_sync."""

from __future__ import annotations

import asyncio
from typing import Any

import anyio
import pytest

import orchestra
from orchestra import (
    DAG,
    DAGError,
    Dispatcher,
    HookChain,
    RetryPolicy,
    SubagentHookContext,
    SubagentHooks,
    Task,
    TaskFailed,
    TaskHookContext,
    TaskHooks,
    TaskState,
)


class Echo:
    name = "echo"

    async def run(self, task: str, ctx: Any) -> str:
        return task


# --- hooks ----------------------------------------------------------------------------


def test_a_typo_close_to_a_moment_is_refused() -> None:
    class Audit(TaskHooks):
        def on_fail(self, ctx: TaskHookContext, error: BaseException) -> None:
            pass

    with pytest.raises(
        TypeError,
        match=r"Audit\.on_fail is not a moment of TaskHooks \(did you mean 'on_failure'\?\)",
    ):
        HookChain([Audit()])


@pytest.mark.parametrize("typo", ["before_exec", "after_executed", "On_End", "after_runs"])
def test_other_typos(typo: str) -> None:
    hook = type("Hook", (TaskHooks,), {typo: lambda self, ctx: None})()
    with pytest.raises(TypeError, match=rf"Hook\.{typo} is not a moment of TaskHooks"):
        HookChain([hook])


def test_helpers_far_from_any_moment_are_fine() -> None:
    class Audit(TaskHooks):
        def write_line(self, text: str) -> None:
            pass

        def on_enter(self) -> None:  # not close enough to on_end to be a typo
            pass

        def _on_fail(self) -> None:  # private: never checked
            pass

        def on_end(self, ctx: TaskHookContext, state: TaskState) -> None:
            self.write_line(state.value)

    assert HookChain([Audit()]).has("on_end")


def test_a_typo_beside_a_real_moment_is_refused_whole() -> None:
    class Half(TaskHooks):
        def before_execute(self, ctx: TaskHookContext) -> None:
            pass

        def on_failed(self, ctx: TaskHookContext, error: BaseException) -> None:
            pass

    dag = DAG("d")
    dag.add(Task(id="a", fn=lambda: 1))
    with pytest.raises(TypeError, match=r"Half\.on_failed .*did you mean 'on_failure'"):
        orchestra.run_sync(dag, hooks=[Half()])


def test_a_moment_whose_signature_cannot_take_its_arguments_is_refused() -> None:
    class Wrong(TaskHooks):
        def on_failure(self, ctx: TaskHookContext) -> None:  # type: ignore[override]
            pass

    with pytest.raises(
        TypeError,
        match=r"Wrong\.on_failure\(ctx: 'TaskHookContext'\) -> 'None' cannot take the "
        r"arguments of TaskHooks\.on_failure\(self, ctx, error\)",
    ):
        HookChain([Wrong()])


def test_signatures_with_star_args_or_defaults_are_fine() -> None:
    class Flexible(TaskHooks):
        def on_failure(self, *args: Any) -> None:
            pass

        async def on_end(self, ctx: TaskHookContext, state: TaskState, extra: int = 0) -> None:
            pass

    chain = HookChain([Flexible()])
    assert chain.has("on_failure")
    assert chain.has("on_end")


def test_dispatcher_refuses_a_task_hooks_only_object() -> None:
    class Audit(TaskHooks):
        def on_failure(self, ctx: TaskHookContext, error: BaseException) -> None:
            pass

    with pytest.raises(TypeError, match=r"is not a SubagentHooks but a TaskHooks"):
        Dispatcher([Echo()], hooks=[Audit()])
    Dispatcher([Echo()], hooks=[RetryPolicy()])  # both traits: fine for either


def test_run_refuses_a_subagent_hooks_only_object() -> None:
    class Delegating(SubagentHooks):
        def on_failure(self, ctx: SubagentHookContext, error: BaseException) -> None:
            pass

    dag = DAG("d")
    dag.add(Task(id="a", fn=lambda: 1))
    with pytest.raises(TypeError, match="is not a TaskHooks but a SubagentHooks"):
        orchestra.run_sync(dag, hooks=[Delegating()])


def test_an_object_implementing_no_moment_is_refused() -> None:
    class Nothing:
        def helper(self) -> None:
            pass

    with pytest.raises(TypeError, match=r"is not a TaskHooks: it implements none of its moments"):
        HookChain([Nothing()])
    with pytest.raises(TypeError, match=r"is not a SubagentHooks: it implements none"):
        Dispatcher([Echo()], hooks=[Nothing()])


def test_duck_typed_hooks_are_fine() -> None:
    class Duck:
        def on_end(self, ctx: TaskHookContext, state: TaskState) -> None:
            pass

    assert HookChain([Duck()]).has("on_end")


# --- DAG parameters -------------------------------------------------------------------


def test_a_body_needing_a_parameter_that_is_not_an_upstream_is_refused_at_validate() -> None:
    dag = DAG("etl")

    @dag.task
    def extract() -> list[int]:
        return [1]

    @dag.task(deps=[extract])
    def transform(data: list[int]) -> list[int]:
        return data

    with pytest.raises(
        DAGError,
        match=r"task 'transform': .*transform\(\) needs the parameter 'data', which is not one "
        r"of its deps \('extract'\); add 'data' to its deps, or give the parameter a default",
    ):
        dag.validate()


def test_a_body_with_no_deps_needing_a_parameter_is_refused() -> None:
    dag = DAG("etl")
    dag.add(Task(id="load", fn=lambda rows: rows))
    with pytest.raises(
        DAGError, match=r"needs the parameter 'rows', which is not one of its deps \(none\)"
    ):
        dag.validate()


def test_positional_only_parameters_are_refused() -> None:
    def body(a: int, /) -> int:
        return a

    dag = DAG("pos")
    dag.add(Task(id="a", fn=lambda: 1))
    dag.add(Task(id="b", fn=body, deps=["a"]))
    with pytest.raises(DAGError, match="'a', which is positional-only"):
        dag.validate()


def test_defaults_kwargs_and_upstream_names_are_fine() -> None:
    dag = DAG("fine")
    dag.add(Task(id="a", fn=lambda: 1))
    dag.add(Task(id="b", fn=lambda a, scale=2: a * scale, deps=["a"]))
    dag.add(Task(id="c", fn=lambda **kw: sorted(kw), deps=["a", "b"]))
    dag.add(Task(id="d", fn=print))  # a builtin: no signature to check
    assert [t.id for t in dag.validate()] == ["a", "b", "c", "d"]


# --- run_sync and run -----------------------------------------------------------------


def test_run_sync_inside_a_running_loop_says_to_await_run() -> None:
    dag = DAG("d")
    dag.add(Task(id="a", fn=lambda: 1))

    async def main() -> None:
        orchestra.run_sync(dag)

    with pytest.raises(
        RuntimeError, match=r"running asyncio loop: use `await orchestra.run\(...\)`"
    ):
        asyncio.run(main())
    with pytest.raises(RuntimeError, match=r"running trio loop: use `await orchestra.run"):
        anyio.run(main, backend="trio")


def test_run_sync_and_run_refuse_what_is_not_a_dag() -> None:
    dag = DAG("d")
    task = dag.add(Task(id="a", fn=lambda: 1))
    with pytest.raises(
        TypeError, match=r"run_sync\(\) takes a DAG, got Task \(task 'a': pass the DAG"
    ):
        orchestra.run_sync(task)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"run\(\) takes a DAG, got list"):
        anyio.run(lambda: orchestra.run([task]))  # type: ignore[arg-type]


# --- raise_for_failures ---------------------------------------------------------------


def test_raise_for_failures_names_every_failed_task() -> None:
    class Gate(TaskHooks):
        def before_execute(self, ctx: TaskHookContext) -> orchestra.Fail | None:
            return orchestra.Fail("closed") if ctx.task.id == "gated" else None

    def boom() -> None:
        raise ValueError("boom")

    dag = DAG("d")
    dag.add(Task(id="ok", fn=lambda: 1))
    dag.add(Task(id="bad", fn=boom))
    dag.add(Task(id="gated", fn=lambda: 1))
    dag.add(Task(id="after", fn=lambda: 1, deps=["bad"]))
    result = orchestra.run_sync(dag, hooks=[Gate()])
    with pytest.raises(TaskFailed) as info:
        result.raise_for_failures()
    error = info.value
    assert str(error) == (
        f"run {result.run_id}: failed: 'bad' (ValueError: boom), "
        "'gated' (failed by Gate.before_execute: closed); upstream_failed: 'after'"
    )
    assert error.task_ids == ("bad", "gated", "after")
    assert isinstance(error.__cause__, ValueError)


def test_raise_for_failures_does_nothing_when_ok() -> None:
    dag = DAG("d")
    dag.add(Task(id="a", fn=lambda: 1))
    orchestra.run_sync(dag).raise_for_failures()


def test_raise_for_failures_for_a_run_failed_before_it_started() -> None:
    class Gate(TaskHooks):
        def before_run(self, ctx: orchestra.RunContext) -> orchestra.Fail:
            return orchestra.Fail("maintenance")

    dag = DAG("d")
    dag.add(Task(id="a", fn=lambda: 1))
    result = orchestra.run_sync(dag, hooks=[Gate()])
    with pytest.raises(
        TaskFailed, match=r"cancelled: 'a' \(run failed by Gate.before_run: maintenance\)"
    ):
        result.raise_for_failures()
