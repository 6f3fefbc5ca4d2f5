"""Branch tasks (``branch=True``): the final output names the direct downstream tasks to
follow; the others end SKIPPED and their own downstream follow their trigger rules."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import orchestra
import orchestra.tracing as ot
from orchestra import DAG, Replace, Task, TaskHookContext, TaskHooks, TaskState

pytestmark = pytest.mark.anyio
S = TaskState


def _diamond(choice: Any, *, sync: bool = False) -> DAG:
    """pick -> left, right (each with a child); join after both (none_failed_min_one_success)."""
    dag = DAG("branch")
    if sync:
        dag.add(Task(id="pick", fn=lambda: choice, branch=True))
    else:

        @dag.task(branch=True)
        async def pick() -> Any:
            return choice

    dag.add(Task(id="left", fn=lambda: "L", deps=["pick"]))
    dag.add(Task(id="right", fn=lambda: "R", deps=["pick"]))
    dag.add(Task(id="left_child", fn=lambda left: left + "!", deps=["left"]))
    dag.add(Task(id="right_child", fn=lambda right: right + "!", deps=["right"]))
    dag.add(
        Task(
            id="join",
            fn=lambda: "joined",
            deps=["left_child", "right_child"],
            trigger="none_failed_min_one_success",
        )
    )
    return dag


@pytest.mark.parametrize("sync", [False, True])
async def test_a_branch_follows_the_id_it_returns_and_skips_the_others(sync: bool) -> None:
    result = await orchestra.run(_diamond("left", sync=sync))
    assert dict(result.states) == {
        "pick": S.SUCCEEDED,
        "left": S.SUCCEEDED,
        "right": S.SKIPPED,
        "left_child": S.SUCCEEDED,
        "right_child": S.SKIPPED,  # all_success after a skipped upstream
        "join": S.SUCCEEDED,  # its own rule: one upstream succeeded, none failed
    }
    assert result.outputs["left_child"] == "L!"
    assert result.outputs["pick"] == "left"
    assert dict(result.branches) == {"pick": ("left",)}
    assert result.attempts["right"] == 0
    assert result.ok


async def test_a_branch_may_follow_several_or_none() -> None:
    both = await orchestra.run(_diamond(["right", "left"]))
    assert both.states["left"] is S.SUCCEEDED
    assert both.states["right"] is S.SUCCEEDED
    assert set(both.branches["pick"]) == {"left", "right"}
    none = await orchestra.run(_diamond([]))
    assert none.states["left"] is S.SKIPPED
    assert none.states["right"] is S.SKIPPED
    assert none.states["join"] is S.SKIPPED  # no upstream succeeded


@pytest.mark.parametrize("bad", ["join", "nowhere", 3, ["left", 7]])
async def test_a_choice_that_is_not_a_direct_downstream_fails_the_branch(bad: Any) -> None:
    result = await orchestra.run(_diamond(bad))
    assert result.states["pick"] is S.FAILED
    error = result.errors["pick"]
    assert isinstance(error, ValueError)
    assert "branch task 'pick'" in str(error)
    if bad in ("join", "nowhere"):
        assert f"chose {bad!r}, which is not one of its direct downstream tasks" in str(error)
        assert "('left', 'right')" in str(error)
    assert result.states["left"] is S.UPSTREAM_FAILED
    assert "pick" not in result.branches


async def test_an_after_execute_replace_redirects_the_branch() -> None:
    class Redirect(TaskHooks):
        def after_execute(self, ctx: TaskHookContext, result: Any) -> Replace | None:
            return Replace("right") if ctx.task.id == "pick" else None

    result = await orchestra.run(_diamond("left"), hooks=[Redirect()])
    assert result.states["left"] is S.SKIPPED
    assert result.states["right"] is S.SUCCEEDED
    assert result.outputs["pick"] == "right"
    assert dict(result.branches) == {"pick": ("right",)}


async def test_the_choice_is_on_the_attempt_span(exporter: InMemorySpanExporter) -> None:
    await orchestra.run(_diamond("left"))
    [span] = [s for s in exporter.get_finished_spans() if s.name == "task pick"]
    assert span.attributes is not None
    assert tuple(span.attributes[ot.names.ATTR_BRANCH_CHOSEN]) == ("left",)  # type: ignore[arg-type]


async def test_a_branch_skips_a_dependent_still_waiting_for_another_upstream() -> None:
    release = anyio.Event()
    dag = DAG("wait")

    async def slow() -> str:
        await release.wait()
        return "slow"

    dag.add(Task(id="slow", fn=slow))
    dag.add(Task(id="pick", fn=lambda: "other", branch=True))
    dag.add(Task(id="other", fn=lambda: 1, deps=["pick"]))
    dag.add(Task(id="both", fn=lambda: 2, deps=["pick", "slow"]))

    class Release(TaskHooks):
        async def on_end(self, ctx: TaskHookContext, state: TaskState) -> None:
            if ctx.task.id == "both":  # skipped before its slow upstream ended
                release.set()

    with anyio.fail_after(5):
        result = await orchestra.run(dag, hooks=[Release()])
    assert result.states["both"] is S.SKIPPED
    assert result.states["other"] is S.SUCCEEDED
    assert result.states["slow"] is S.SUCCEEDED


def test_branch_is_a_task_option() -> None:
    dag = DAG("d")
    task = dag.task(branch=True)(lambda: "x")
    assert task.branch is True
    assert Task(id="plain", fn=lambda: None).branch is False


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(width=st.integers(1, 5), data=st.data())
def test_any_choice_among_any_dependents_ends_every_task_as_the_rules_say(
    anyio_backend: str, width: int, data: st.DataObject
) -> None:
    chosen = data.draw(st.sets(st.integers(0, width - 1)))
    as_list = data.draw(st.booleans())
    names = [f"d{k}" for k in range(width)]
    picked = [names[k] for k in sorted(chosen)]
    dag = DAG("prop")
    dag.add(
        Task(
            id="pick",
            fn=lambda: picked if as_list or len(picked) != 1 else picked[0],
            branch=True,
        )
    )
    for k, name in enumerate(names):
        dag.add(Task(id=name, fn=lambda: 1, deps=["pick"], inline=bool(k % 2)))
        dag.add(Task(id=f"{name}_after", fn=lambda: 2, deps=[name]))
        dag.add(Task(id=f"{name}_done", fn=lambda: 3, deps=[name], trigger="all_done"))
    result = orchestra.run_sync(dag, backend=anyio_backend)
    assert set(result.branches["pick"]) == set(picked)
    for k, name in enumerate(names):
        followed = k in chosen
        assert result.states[name] is (S.SUCCEEDED if followed else S.SKIPPED)
        assert result.states[f"{name}_after"] is (S.SUCCEEDED if followed else S.SKIPPED)
        assert result.states[f"{name}_done"] is S.SUCCEEDED  # all_done runs after a skip
    assert result.ok
