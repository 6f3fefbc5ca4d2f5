"""The whole lifecycle of a run: before_run, on_end once per task, after_run once per run."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

import orchestra
from orchestra import (
    DAG,
    Fail,
    RunContext,
    RunResult,
    Skip,
    Task,
    TaskHookContext,
    TaskHooks,
    TaskState,
)

pytestmark = pytest.mark.anyio

S = TaskState


class Recorder(TaskHooks):
    """Records every moment, in order, as short tuples."""

    def __init__(self) -> None:
        self.events: list[tuple[Any, ...]] = []
        self.results: list[RunResult] = []

    def before_run(self, ctx: RunContext) -> None:
        self.events.append(("before_run", ctx.dag, ctx.task_ids))

    def before_execute(self, ctx: TaskHookContext) -> None:
        self.events.append(("before", ctx.task.id, ctx.attempt))

    def after_execute(self, ctx: TaskHookContext, result: Any) -> None:
        self.events.append(("after", ctx.task.id, result))

    def on_failure(self, ctx: TaskHookContext, error: BaseException) -> None:
        self.events.append(("failure", ctx.task.id, type(error).__name__))

    def on_end(self, ctx: TaskHookContext, state: TaskState) -> None:
        self.events.append(("end", ctx.task.id, state, ctx.attempt))

    def after_run(self, ctx: RunContext, result: RunResult) -> None:
        self.events.append(("after_run", result.ok))
        self.results.append(result)

    def ends(self) -> dict[str, tuple[TaskState, int]]:
        ends: dict[str, tuple[TaskState, int]] = {}
        for event in self.events:
            if event[0] == "end":
                assert event[1] not in ends, f"on_end twice for {event[1]}"
                ends[event[1]] = (event[2], event[3])
        return ends

    def count(self, moment: str) -> int:
        return sum(1 for event in self.events if event[0] == moment)


def boom() -> None:
    raise ValueError("boom")


class SkipMarked(TaskHooks):
    def before_execute(self, ctx: TaskHookContext) -> Skip | None:
        return Skip("marked") if ctx.task.metadata.get("skip") else None


async def test_whole_sequence_of_a_small_run() -> None:
    rec = Recorder()
    dag = DAG("seq")
    dag.add(Task(id="a", fn=lambda: 1))
    dag.add(Task(id="b", fn=lambda a: a + 1, deps=["a"]))
    result = await orchestra.run(dag, hooks=[rec], max_concurrency=1)
    assert rec.events == [
        ("before_run", "seq", ("a", "b")),
        ("before", "a", 1),
        ("after", "a", 1),
        ("end", "a", S.SUCCEEDED, 1),
        ("before", "b", 1),
        ("after", "b", 2),
        ("end", "b", S.SUCCEEDED, 1),
        ("after_run", True),
    ]
    assert rec.results == [result]


async def test_on_end_once_for_each_terminal_state_also_never_started() -> None:
    rec = Recorder()
    dag = DAG("states")
    dag.add(Task(id="ok", fn=lambda: 1))
    dag.add(Task(id="bad", fn=boom))
    dag.add(Task(id="skipped", fn=lambda: 1, metadata={"skip": True}))
    dag.add(Task(id="after_bad", fn=lambda: 1, deps=["bad"]))  # UPSTREAM_FAILED
    dag.add(Task(id="after_skip", fn=lambda: 1, deps=["skipped"]))  # SKIPPED, never started
    result = await orchestra.run(dag, hooks=[SkipMarked(), rec])
    assert rec.ends() == {
        "ok": (S.SUCCEEDED, 1),
        "bad": (S.FAILED, 1),
        "skipped": (S.SKIPPED, 1),
        "after_bad": (S.UPSTREAM_FAILED, 0),
        "after_skip": (S.SKIPPED, 0),
    }
    assert rec.count("after_run") == 1
    assert rec.results == [result]
    assert rec.events[-1] == ("after_run", False)


async def test_fail_fast_ends_every_task_once_and_the_run_once() -> None:
    rec = Recorder()
    started = anyio.Event()

    async def forever() -> None:
        started.set()
        await anyio.sleep_forever()

    async def fails() -> None:
        await started.wait()
        raise ValueError("first failure")

    dag = DAG("ff")
    dag.add(Task(id="forever", fn=forever))
    dag.add(Task(id="fails", fn=fails))
    dag.add(Task(id="later", fn=lambda: 1, deps=["forever"]))
    with anyio.fail_after(10):
        result = await orchestra.run(dag, hooks=[rec], fail_fast=True)
    assert rec.ends() == {
        "forever": (S.CANCELLED, 1),
        "fails": (S.FAILED, 1),
        "later": (S.CANCELLED, 0),
    }
    assert rec.count("after_run") == 1
    assert dict(rec.results[0].states) == dict(result.states)


async def test_cancelled_from_outside_still_ends_everything_once() -> None:
    rec = Recorder()
    started = anyio.Event()

    quick_ended = anyio.Event()

    class QuickEnded(TaskHooks):
        async def on_end(self, ctx: TaskHookContext, state: TaskState) -> None:
            if ctx.task.id == "quick":
                quick_ended.set()

    async def forever() -> None:
        await quick_ended.wait()  # quick ends first (the def hooks run in threads)
        started.set()
        await anyio.sleep_forever()

    dag = DAG("outside")
    dag.add(Task(id="quick", fn=lambda: "q", inline=True))
    dag.add(Task(id="forever", fn=forever))
    dag.add(Task(id="never", fn=lambda: 1, deps=["forever"]))
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: orchestra.run(dag, hooks=[rec, QuickEnded()]))
            await started.wait()
            tg.cancel_scope.cancel()
    assert rec.ends() == {
        "quick": (S.SUCCEEDED, 1),
        "forever": (S.CANCELLED, 1),
        "never": (S.CANCELLED, 0),
    }
    assert rec.count("after_run") == 1
    [result] = rec.results
    assert dict(result.states) == {
        "quick": S.SUCCEEDED,
        "forever": S.CANCELLED,
        "never": S.CANCELLED,
    }
    assert result.outputs == {"quick": "q"}


async def test_fatal_base_exception_still_ends_everything_once() -> None:
    rec = Recorder()

    def interrupt() -> None:
        raise KeyboardInterrupt

    dag = DAG("fatal")
    dag.add(Task(id="a", fn=interrupt, inline=True))
    dag.add(Task(id="b", fn=lambda: 1, deps=["a"], trigger="all_done"))
    with pytest.raises(KeyboardInterrupt):
        await orchestra.run(dag, hooks=[rec])
    assert rec.ends() == {"a": (S.FAILED, 1), "b": (S.CANCELLED, 0)}
    assert rec.count("after_run") == 1
    assert dict(rec.results[0].states) == {"a": S.FAILED, "b": S.CANCELLED}


async def test_async_on_end_is_not_cut_short_by_fail_fast() -> None:
    finished: list[str] = []

    class SlowEnd(TaskHooks):
        async def on_end(self, ctx: TaskHookContext, state: TaskState) -> None:
            await anyio.sleep(0.01)
            finished.append(ctx.task.id)

    dag = DAG("slow_end")
    dag.add(Task(id="ok", fn=lambda: 1, inline=True))
    dag.add(Task(id="bad", fn=boom, deps=["ok"], inline=True))
    dag.add(Task(id="other", fn=anyio.sleep_forever))
    with anyio.fail_after(10):
        await orchestra.run(dag, hooks=[SlowEnd()], fail_fast=True)
    assert sorted(finished) == ["bad", "ok", "other"]


async def test_before_run_fail_ends_the_run_before_any_task() -> None:
    rec = Recorder()
    ran: list[str] = []

    class Gate(TaskHooks):
        def before_run(self, ctx: RunContext) -> Fail:
            return Fail("maintenance window")

    dag = DAG("gated")
    dag.add(Task(id="a", fn=lambda: ran.append("a")))
    dag.add(Task(id="b", fn=lambda: ran.append("b"), deps=["a"]))
    result = await orchestra.run(dag, hooks=[Gate(), rec])
    assert ran == []
    assert not result.ok
    assert dict(result.states) == {"a": S.CANCELLED, "b": S.CANCELLED}
    assert result.reasons["a"] == "run failed by Gate.before_run: maintenance window"
    assert [e[0] for e in rec.events] == ["before_run", "end", "end", "after_run"]
    assert rec.ends() == {"a": (S.CANCELLED, 0), "b": (S.CANCELLED, 0)}


async def test_run_hooks_errors_are_isolated_and_recorded() -> None:
    class Broken(TaskHooks):
        def before_run(self, ctx: RunContext) -> None:
            raise RuntimeError("no db")

        def on_end(self, ctx: TaskHookContext, state: TaskState) -> None:
            raise RuntimeError("no db")

        def after_run(self, ctx: RunContext, result: RunResult) -> None:
            raise RuntimeError("no db")

    dag = DAG("iso")
    dag.add(Task(id="a", fn=lambda: 1))
    result = await orchestra.run(dag, hooks=[Broken()])
    assert result.ok
    # after_run's own error is on the result run() returns (not on the one it was given)
    assert [(e.moment, e.subject) for e in result.hook_errors] == [
        ("before_run", "iso"),
        ("on_end", "a"),
        ("after_run", "iso"),
    ]


async def test_run_context_fields() -> None:
    seen: list[RunContext] = []

    class Look(TaskHooks):
        def before_run(self, ctx: RunContext) -> None:
            seen.append(ctx)

    dag = DAG("ctx")
    dag.add(Task(id="b", fn=lambda: 1))
    dag.add(Task(id="a", fn=lambda b: 1, deps=["b"]))
    result = await orchestra.run(dag, hooks=[Look()])
    [ctx] = seen
    assert (ctx.dag, ctx.run_id, ctx.task_ids) == ("ctx", result.run_id, ("b", "a"))
    assert ctx.started_at > 0


async def test_hook_that_sleeps_forever_is_cut_at_its_timeout_and_the_run_ends() -> None:
    class Hangs(TaskHooks):
        async def before_execute(self, ctx: TaskHookContext) -> None:
            await anyio.sleep_forever()

    class OwnTimeout(TaskHooks):
        timeout = 0.05

        async def on_end(self, ctx: TaskHookContext, state: TaskState) -> None:
            await anyio.sleep_forever()

    dag = DAG("hang")
    dag.add(Task(id="a", fn=lambda: "done"))
    with anyio.fail_after(10):
        result = await orchestra.run(dag, hooks=[Hangs(), OwnTimeout()], hook_timeout=0.05)
    assert result.outputs == {"a": "done"}
    assert [str(e) for e in result.hook_errors] == [
        "hook Hangs.before_execute for 'a' timed out after 0.05 s",
        "hook OwnTimeout.on_end for 'a' timed out after 0.05 s",
    ]


async def test_after_run_is_cut_at_its_timeout_too() -> None:
    class Hangs(TaskHooks):
        async def after_run(self, ctx: RunContext, result: RunResult) -> None:
            await anyio.sleep_forever()

    dag = DAG("hang_after")
    dag.add(Task(id="a", fn=lambda: 1))
    with anyio.fail_after(10):
        result = await orchestra.run(dag, hooks=[Hangs()], hook_timeout=0.05)
    assert result.ok


def test_bad_hook_timeout_is_refused() -> None:
    dag = DAG("t")
    dag.add(Task(id="a", fn=lambda: 1))
    with pytest.raises(ValueError, match="hook timeout must be a number of seconds > 0"):
        orchestra.run_sync(dag, hook_timeout=0)


async def test_without_run_hooks_the_result_is_the_same() -> None:
    dag = DAG("plain")
    dag.add(Task(id="a", fn=lambda: 1))
    result = await orchestra.run(dag)
    assert result.ok
    assert result.messages == {}
