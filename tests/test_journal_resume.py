"""What hooks see of a resumed run: reused tasks end SUCCEEDED through on_end only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import orchestra
from orchestra import (
    DAG,
    Fail,
    RunContext,
    RunResult,
    TaskHookContext,
    TaskHooks,
    TaskState,
)

pytestmark = pytest.mark.anyio


class Moments(TaskHooks):
    """Every moment the run calls, with what its context says."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def before_run(self, ctx: RunContext) -> None:
        self.calls.append(("before_run", ctx.run_id, ctx.resumed_from))

    def before_execute(self, ctx: TaskHookContext) -> None:
        self.calls.append(("before_execute", ctx.task.id, ctx.attempt))

    def after_execute(self, ctx: TaskHookContext, result: Any) -> None:
        self.calls.append(("after_execute", ctx.task.id, ctx.attempt))

    def on_failure(self, ctx: TaskHookContext, error: BaseException) -> None:
        self.calls.append(("on_failure", ctx.task.id, ctx.attempt))

    def on_end(self, ctx: TaskHookContext, state: TaskState) -> None:
        self.calls.append(("on_end", ctx.task.id, ctx.attempt, state))

    def after_run(self, ctx: RunContext, result: RunResult) -> None:
        self.calls.append(("after_run", ctx.run_id, ctx.resumed_from, result.reused))

    def of(self, moment: str) -> list[tuple[Any, ...]]:
        return [c[1:] for c in self.calls if c[0] == moment]


class AsyncMoments(Moments):
    """The same moments as ``async def`` hooks (awaited, and on_end shielded)."""

    async def before_run(self, ctx: RunContext) -> None:  # type: ignore[override]
        super().before_run(ctx)

    async def before_execute(self, ctx: TaskHookContext) -> None:  # type: ignore[override]
        super().before_execute(ctx)

    async def on_end(self, ctx: TaskHookContext, state: TaskState) -> None:  # type: ignore[override]
        super().on_end(ctx, state)

    async def after_run(self, ctx: RunContext, result: RunResult) -> None:  # type: ignore[override]
        super().after_run(ctx, result)


def _pipeline(down: dict[str, bool], bodies: list[str]) -> DAG:
    """fetch -> clean -> publish (fails while down), fetch -> count."""
    dag = DAG("resumed")

    @dag.task
    def fetch() -> list[int]:
        bodies.append("fetch")
        return [3, 1, 2]

    @dag.task(deps=[fetch])
    async def clean(fetch: list[int]) -> list[int]:
        bodies.append("clean")
        return sorted(fetch)

    @dag.task(deps=[clean])
    def publish(clean: list[int]) -> str:
        bodies.append("publish")
        if down["publish"]:
            raise ConnectionError("warehouse down")
        return ",".join(map(str, clean))

    @dag.task(deps=[fetch])
    def count(fetch: list[int]) -> int:
        bodies.append("count")
        return len(fetch)

    return dag


@pytest.mark.parametrize("hooks", [Moments, AsyncMoments])
async def test_reused_tasks_end_succeeded_through_on_end_only(
    tmp_path: Path, hooks: type[Moments]
) -> None:
    journal = tmp_path / "runs.db"
    down = {"publish": True}
    bodies: list[str] = []
    first_hooks = hooks()
    first = await orchestra.run(_pipeline(down, bodies), journal=journal, hooks=[first_hooks])
    assert first.states["publish"] is TaskState.FAILED
    assert first_hooks.of("before_run") == [(first.run_id, None)]
    assert first_hooks.of("after_run") == [(first.run_id, None, frozenset())]

    down["publish"] = False
    bodies.clear()
    moments = hooks()
    second = await orchestra.run(
        _pipeline(down, bodies), journal=journal, resume="last", hooks=[moments]
    )
    reused = {"fetch", "clean", "count"}
    assert second.ok
    assert second.reused == reused
    assert second.resumed_from == first.run_id
    assert all(state is TaskState.SUCCEEDED for state in second.states.values())
    assert second.outputs == {
        "fetch": [3, 1, 2],
        "clean": [1, 2, 3],
        "publish": "1,2,3",
        "count": 3,
    }
    assert bodies == ["publish"]  # no reused body ran
    # no before/after/failure hook for a reused task: only the one that ran
    assert moments.of("before_execute") == [("publish", 1)]
    assert moments.of("after_execute") == [("publish", 1)]
    assert moments.of("on_failure") == []
    # on_end once per task: the reused ones with attempt 0, SUCCEEDED
    ends = moments.of("on_end")
    assert sorted(ends) == sorted(
        [(tid, 0, TaskState.SUCCEEDED) for tid in reused] + [("publish", 1, TaskState.SUCCEEDED)]
    )
    assert moments.calls[0][0] == "before_run"
    assert moments.calls[-1][0] == "after_run"
    assert moments.of("before_run") == [(second.run_id, first.run_id)]
    assert moments.of("after_run") == [(second.run_id, first.run_id, reused)]
    assert second.attempts == {"fetch": 0, "clean": 0, "count": 0, "publish": 1}


async def test_a_task_after_reused_ones_sees_them_succeeded_with_their_outputs(
    tmp_path: Path,
) -> None:
    journal = tmp_path / "runs.db"
    down = {"publish": True}
    await orchestra.run(_pipeline(down, []), journal=journal)
    down["publish"] = False
    seen: dict[str, Any] = {}

    class Upstreams(Moments):
        def before_execute(self, ctx: TaskHookContext) -> None:
            super().before_execute(ctx)
            seen[ctx.task.id] = (dict(ctx.upstream_states), dict(ctx.inputs))

    moments = Upstreams()
    await orchestra.run(_pipeline(down, []), journal=journal, resume="last", hooks=[moments])
    assert seen == {"publish": ({"clean": TaskState.SUCCEEDED}, {"clean": [1, 2, 3]})}
    order = [c[:2] for c in moments.calls]
    # clean, publish's upstream, ended (reused) before publish started
    assert order.index(("on_end", "clean")) < order.index(("before_execute", "publish"))


async def test_before_run_fail_in_a_resumed_run_reuses_nothing(tmp_path: Path) -> None:
    journal = tmp_path / "runs.db"
    down = {"publish": False}
    bodies: list[str] = []
    first = await orchestra.run(_pipeline(down, bodies), journal=journal)
    assert first.ok

    class Refuse(Moments):
        def before_run(self, ctx: RunContext) -> Fail:  # type: ignore[override]
            super().before_run(ctx)
            return Fail("maintenance window")

    refuse = Refuse()
    bodies.clear()
    second = await orchestra.run(
        _pipeline(down, bodies), journal=journal, resume=first.run_id, hooks=[refuse]
    )
    assert refuse.of("before_run") == [(second.run_id, first.run_id)]
    assert bodies == []
    assert second.reused == frozenset()
    assert set(second.states.values()) == {TaskState.CANCELLED}
    assert sorted(refuse.of("on_end")) == sorted(
        (tid, 0, TaskState.CANCELLED) for tid in ("fetch", "clean", "publish", "count")
    )
    # the refused run is journaled (all CANCELLED), and the first one still resumes
    third = await orchestra.run(_pipeline(down, bodies), journal=journal, resume=first.run_id)
    assert third.reused == set(third.states)


async def test_bodies_run_in_place_are_journaled_as_through_the_attempt_loop(
    tmp_path: Path,
) -> None:
    # without hooks a body runs in place in its worker; a hook sends it through the
    # attempt loop: both journal the same records, and both resume the same way
    def build() -> DAG:
        dag = DAG("places")
        dag.add(orchestra.Task(id="rows", fn=lambda: [3, 1, 2]))
        dag.add(orchestra.Task(id="none", fn=lambda: None))
        dag.add(orchestra.Task(id="bad", fn=lambda rows: 1 / 0, deps=["rows"]))
        dag.add(orchestra.Task(id="after", fn=lambda bad: bad, deps=["bad"]))
        return dag

    journal = tmp_path / "runs.db"
    plain = await orchestra.run(build(), journal=journal)
    hooked = await orchestra.run(build(), journal=journal, hooks=[Moments()])
    with orchestra.journal.SQLiteJournal(journal, read_only=True) as store:
        runs = [store.load_run(r.run_id) for r in (plain, hooked)]

    def kept(run: Any) -> dict[str, tuple[Any, ...]]:
        return {t: (r.state, r.attempts, r.error, r.output_digest) for t, r in run.tasks.items()}

    assert kept(runs[0]) == kept(runs[1])
    assert kept(runs[0])["bad"][:3] == ("failed", 1, "ZeroDivisionError: division by zero")
    assert kept(runs[0])["after"][:2] == ("upstream_failed", 0)
    for result in (plain, hooked):
        again = await orchestra.run(build(), journal=journal, resume=result.run_id)
        assert again.reused == {"rows", "none"}
        assert again.attempts["bad"] == 1
