from __future__ import annotations

import contextvars
import logging
import threading
from functools import partial
from typing import Any

import anyio
import anyio.lowlevel
import pytest

import orchestra
from orchestra import (
    DAG,
    DAGError,
    Fail,
    HookError,
    Retry,
    Skip,
    Task,
    TaskFailed,
    TaskHookContext,
    TaskHooks,
    TaskState,
)

pytestmark = pytest.mark.anyio

S = TaskState


class Recorder(TaskHooks):
    """Records every hook call as a tuple, in order."""

    def __init__(self) -> None:
        self.events: list[tuple[Any, ...]] = []

    def before_execute(self, ctx: TaskHookContext) -> None:
        self.events.append(("before", ctx.task.id, ctx.attempt))

    def after_execute(self, ctx: TaskHookContext, result: Any) -> None:
        self.events.append(("after", ctx.task.id, ctx.attempt, result))

    def on_failure(self, ctx: TaskHookContext, error: BaseException) -> None:
        self.events.append(("failure", ctx.task.id, ctx.attempt, type(error).__name__))


class Flaky:
    """Fails the first ``n`` calls with ``error``."""

    def __init__(self, n: int, error: type[Exception] = ConnectionError) -> None:
        self.n = n
        self.calls = 0
        self.error = error

    def __call__(self) -> str:
        self.calls += 1
        if self.calls <= self.n:
            raise self.error(f"call {self.calls}")
        return "ok"


async def test_outputs_flow_as_keyword_arguments_by_id() -> None:
    dag = DAG("flow")

    @dag.task
    async def left() -> int:
        return 2

    @dag.task
    def right() -> int:
        return 3

    @dag.task(deps=[left, right])
    def mul(left: int, right: int) -> int:
        return left * right

    @dag.task(deps=[mul, left])
    def everything(**upstream: int) -> dict[str, int]:
        return dict(upstream)

    @dag.task(deps=[mul])
    def ignores_upstream() -> str:
        return "fine"

    result = await orchestra.run(dag)
    assert result.ok
    assert result.outputs == {
        "left": 2,
        "right": 3,
        "mul": 6,
        "everything": {"mul": 6, "left": 2},
        "ignores_upstream": "fine",
    }
    assert all(n == 1 for n in result.attempts.values())
    assert set(result.durations) == set(result.states)


async def test_hook_event_sequence_with_retry() -> None:
    dag = DAG("seq")
    flaky = Flaky(2)
    dag.add(Task(id="a", fn=flaky, retries=2, inline=True))
    dag.add(Task(id="b", fn=lambda a: a + "!", deps=["a"], inline=True))
    rec = Recorder()
    result = await orchestra.run(dag, hooks=[rec])
    assert result.ok
    assert result.attempts == {"a": 3, "b": 1}
    assert result.outputs["b"] == "ok!"
    assert rec.events == [
        ("before", "a", 1),
        ("failure", "a", 1, "ConnectionError"),
        ("before", "a", 2),
        ("failure", "a", 2, "ConnectionError"),
        ("before", "a", 3),
        ("after", "a", 3, "ok"),
        ("before", "b", 1),
        ("after", "b", 1, "ok!"),
    ]


async def test_context_holds_errors_of_earlier_attempts() -> None:
    seen: list[tuple[int, list[str]]] = []

    class Look(TaskHooks):
        def before_execute(self, ctx: TaskHookContext) -> None:
            seen.append((ctx.attempt, [str(e) for e in ctx.errors]))

        def on_failure(self, ctx: TaskHookContext, error: BaseException) -> Retry:
            assert ctx.errors[-1] is error
            return Retry()

    dag = DAG("ctx")
    dag.add(Task(id="a", fn=Flaky(2), inline=True))
    result = await orchestra.run(dag, hooks=[Look()])
    assert result.ok
    assert seen == [(1, []), (2, ["call 1"]), (3, ["call 1", "call 2"])]


async def test_context_fields() -> None:
    contexts: list[TaskHookContext] = []

    class Look(TaskHooks):
        async def before_execute(self, ctx: TaskHookContext) -> None:
            contexts.append(ctx)

    dag = DAG("ctx")
    dag.add(Task(id="a", fn=lambda: None, metadata={"owner": "me"}))
    result = await orchestra.run(dag, hooks=[Look()])
    (ctx,) = contexts
    assert ctx.task is dag.tasks["a"]
    assert ctx.task.metadata == {"owner": "me"}
    assert ctx.attempt == 1
    assert ctx.executor is None
    assert ctx.run_id == result.run_id


async def test_async_and_sync_hooks_decide() -> None:
    class AsyncSkip(TaskHooks):
        async def before_execute(self, ctx: TaskHookContext) -> Skip | None:
            await anyio.lowlevel.checkpoint()
            return Skip("optional") if ctx.task.metadata.get("optional") else None

    ran: list[str] = []
    dag = DAG("skip")
    dag.add(Task(id="a", fn=lambda: ran.append("a")))
    dag.add(Task(id="opt", fn=lambda: ran.append("opt"), metadata={"optional": True}))
    dag.add(Task(id="after_opt", fn=lambda: ran.append("after"), deps=["opt"]))
    result = await orchestra.run(dag, hooks=[AsyncSkip()])
    assert ran == ["a"]
    assert result.states == {"a": S.SUCCEEDED, "opt": S.SKIPPED, "after_opt": S.SKIPPED}
    assert result.ok
    assert result.reasons["opt"] == "skipped by AsyncSkip.before_execute: optional"
    assert result.attempts["opt"] == 1
    assert result.attempts["after_opt"] == 0


async def test_before_execute_fail_fails_without_running() -> None:
    class Gate(TaskHooks):
        def before_execute(self, ctx: TaskHookContext) -> Fail:
            return Fail("not today")

    ran: list[str] = []
    dag = DAG("gate")
    dag.add(Task(id="a", fn=lambda: ran.append("a"), retries=5))
    result = await orchestra.run(dag, hooks=[Gate()])
    assert ran == []
    assert result.states["a"] is S.FAILED
    error = result.errors["a"]
    assert isinstance(error, TaskFailed)
    assert error.reason == "not today"
    assert result.reasons["a"] == "failed by Gate.before_execute: not today"


async def test_on_failure_skip_keeps_error_and_run_ok() -> None:
    class Forgive(TaskHooks):
        def on_failure(self, ctx: TaskHookContext, error: BaseException) -> Skip:
            return Skip("best effort")

    dag = DAG("forgive")
    dag.add(Task(id="a", fn=Flaky(9), retries=3))
    dag.add(Task(id="b", fn=lambda: 1, deps=["a"]))
    result = await orchestra.run(dag, hooks=[Forgive()])
    assert result.ok
    assert result.states == {"a": S.SKIPPED, "b": S.SKIPPED}
    assert result.attempts["a"] == 1  # Skip wins over the task's own retries
    assert isinstance(result.errors["a"], ConnectionError)


async def test_on_failure_fail_beats_retry_and_task_retries() -> None:
    class AlwaysRetry(TaskHooks):
        def on_failure(self, ctx: TaskHookContext, error: BaseException) -> Retry:
            return Retry(0)

    class Stop(TaskHooks):
        def on_failure(self, ctx: TaskHookContext, error: BaseException) -> Fail | None:
            return Fail("enough") if ctx.attempt >= 2 else None

    dag = DAG("fail")
    dag.add(Task(id="a", fn=Flaky(9), retries=10))
    result = await orchestra.run(dag, hooks=[AlwaysRetry(), Stop()])
    assert result.attempts["a"] == 2
    assert result.states["a"] is S.FAILED
    assert isinstance(result.errors["a"], ConnectionError)
    assert result.reasons["a"] == "failed by Stop.on_failure: enough"


async def test_no_opinion_falls_back_to_task_retries_then_fails() -> None:
    rec = Recorder()
    dag = DAG("policy")
    dag.add(Task(id="a", fn=Flaky(9), retries=2, retry_delay=0.001))
    result = await orchestra.run(dag, hooks=[rec])
    assert result.attempts["a"] == 3
    assert result.states["a"] is S.FAILED
    assert str(result.errors["a"]) == "call 3"
    assert "a" not in result.reasons  # a plain failure, no decision


async def test_longest_retry_delay_wins() -> None:
    delays: list[float] = []

    class Short(TaskHooks):
        def on_failure(self, ctx: TaskHookContext, error: BaseException) -> Retry:
            return Retry(0.0)

    class Long(TaskHooks):
        def on_failure(self, ctx: TaskHookContext, error: BaseException) -> Retry:
            return Retry(0.02)

    class Clock(TaskHooks):
        async def before_execute(self, ctx: TaskHookContext) -> None:
            delays.append(anyio.current_time())  # the loop's clock: an async hook's

    dag = DAG("delay")
    dag.add(Task(id="a", fn=Flaky(1)))
    result = await orchestra.run(dag, hooks=[Short(), Long(), Clock()])
    assert result.ok
    assert delays[1] - delays[0] >= 0.02


async def test_hook_that_raises_is_isolated_and_recorded(caplog: pytest.LogCaptureFixture) -> None:
    class Broken(TaskHooks):
        def before_execute(self, ctx: TaskHookContext) -> None:
            raise RuntimeError("hook bug")

    rec = Recorder()
    dag = DAG("iso")
    dag.add(Task(id="a", fn=lambda: 1))
    with caplog.at_level(logging.WARNING, logger="orchestra"):
        result = await orchestra.run(dag, hooks=[Broken(), rec])
    assert result.ok
    assert result.outputs == {"a": 1}
    (error,) = result.hook_errors
    assert isinstance(error, HookError)
    assert (error.hook, error.moment, error.subject) == ("Broken", "before_execute", "a")
    assert isinstance(error.__cause__, RuntimeError)
    assert "hook bug" in caplog.text
    assert ("before", "a", 1) in rec.events  # the other hooks still ran


async def test_fail_closed_hook_error_fails_the_task() -> None:
    class Strict(TaskHooks):
        fail_closed = True

        async def before_execute(self, ctx: TaskHookContext) -> None:
            raise RuntimeError("guard could not run")

    ran: list[int] = []
    dag = DAG("closed")
    dag.add(Task(id="a", fn=lambda: ran.append(1), retries=3))
    result = await orchestra.run(dag, hooks=[Strict()])
    assert ran == []
    assert result.states["a"] is S.FAILED
    assert "guard could not run" in result.reasons["a"]
    assert len(result.hook_errors) == 1


async def test_fail_closed_after_execute_error_fails_and_drops_output() -> None:
    class Strict(TaskHooks):
        fail_closed = True

        def after_execute(self, ctx: TaskHookContext, result: Any) -> None:
            raise ValueError("audit failed")

    dag = DAG("closed")
    dag.add(Task(id="a", fn=lambda: 1))
    result = await orchestra.run(dag, hooks=[Strict()])
    assert result.states["a"] is S.FAILED
    assert "a" not in result.outputs


@pytest.mark.parametrize(
    ("moment", "answer"),
    [
        ("before_execute", Retry(1)),
        ("before_execute", "skip"),
        ("after_execute", Skip()),
        ("on_failure", orchestra.Delegate("other")),
        ("on_failure", True),
    ],
)
async def test_wrong_answer_is_a_recorded_hook_error(moment: str, answer: object) -> None:
    def answer_fn(self: TaskHooks, ctx: TaskHookContext, *rest: Any) -> object:
        return answer

    hook = type("Wrong", (TaskHooks,), {moment: answer_fn})()
    dag = DAG("wrong")
    dag.add(Task(id="a", fn=Flaky(1), retries=1))
    result = await orchestra.run(dag, hooks=[hook])
    assert result.ok  # the run went on: the task's own retry policy applied
    assert result.outputs == {"a": "ok"}
    assert {e.moment for e in result.hook_errors} == {moment}
    assert "expected" in str(result.hook_errors[0])


def test_object_that_is_not_a_hook_is_refused() -> None:
    dag = DAG("d")
    dag.add(Task(id="a", fn=lambda: None))
    with pytest.raises(TypeError, match="is not a TaskHooks"):
        orchestra.run_sync(dag, hooks=[object()])


def test_only_overridden_methods_are_called() -> None:
    class OnlyAfter(TaskHooks):
        def after_execute(self, ctx: TaskHookContext, result: Any) -> None:
            pass

    chain = orchestra.HookChain([OnlyAfter()])
    moments = ("before_execute", "after_execute", "on_failure")
    assert [chain.has(moment) for moment in moments] == [False, True, False]


async def test_trigger_rules() -> None:
    dag = DAG("rules")

    def boom() -> None:
        raise ValueError("boom")

    class SkipMarked(TaskHooks):
        def before_execute(self, ctx: TaskHookContext) -> Skip | None:
            return Skip() if ctx.task.metadata.get("skip") else None

    dag.add(Task(id="ok", fn=lambda: 1))
    dag.add(Task(id="bad", fn=boom))
    dag.add(Task(id="skipped", fn=lambda: 1, metadata={"skip": True}))
    for rule in ("all_success", "all_done", "none_failed"):
        dag.add(Task(id=f"{rule}_after_bad", fn=lambda **kw: kw, deps=["ok", "bad"], trigger=rule))
        dag.add(
            Task(id=f"{rule}_after_skip", fn=lambda **kw: kw, deps=["ok", "skipped"], trigger=rule)
        )
    dag.add(Task(id="downstream_of_upstream_failed", fn=lambda: 1, deps=["all_success_after_bad"]))
    dag.add(
        Task(
            id="none_failed_far",
            fn=lambda: 1,
            deps=["all_success_after_bad"],
            trigger="none_failed",
        )
    )
    result = await orchestra.run(dag, hooks=[SkipMarked()])
    st = result.states
    assert st["all_success_after_bad"] is S.UPSTREAM_FAILED
    assert st["all_success_after_skip"] is S.SKIPPED
    assert st["all_done_after_bad"] is S.SUCCEEDED
    assert st["all_done_after_skip"] is S.SUCCEEDED
    assert st["none_failed_after_bad"] is S.UPSTREAM_FAILED
    assert st["none_failed_after_skip"] is S.SUCCEEDED
    assert st["downstream_of_upstream_failed"] is S.UPSTREAM_FAILED
    assert st["none_failed_far"] is S.UPSTREAM_FAILED
    # all_done gets the outputs that exist; missing ones arrive as None
    assert result.outputs["all_done_after_bad"] == {"ok": 1, "bad": None}
    assert result.outputs["none_failed_after_skip"] == {"ok": 1, "skipped": None}
    assert not result.ok


async def test_independent_branches_go_on_after_a_failure() -> None:
    dag = DAG("branches")

    async def boom() -> None:
        raise ValueError("left broke")

    async def slow() -> str:
        await anyio.sleep(0.01)
        return "right"

    dag.add(Task(id="left", fn=boom))
    dag.add(Task(id="left2", fn=lambda: 1, deps=["left"]))
    dag.add(Task(id="right", fn=slow))
    dag.add(Task(id="right2", fn=lambda right: right * 2, deps=["right"]))
    result = await orchestra.run(dag)
    assert result.states == {
        "left": S.FAILED,
        "left2": S.UPSTREAM_FAILED,
        "right": S.SUCCEEDED,
        "right2": S.SUCCEEDED,
    }
    assert result.outputs["right2"] == "rightright"


async def test_fail_fast_cancels_the_rest() -> None:
    dag = DAG("ff")
    started: list[str] = []
    quick_done = anyio.Event()

    async def boom() -> None:
        await quick_done.wait()  # fail once "quick" ended, however loaded the machine
        await anyio.wait_all_tasks_blocked()  # ... and settled (a loop pass may come first)
        raise ValueError("first failure")

    async def forever() -> None:
        started.append("forever")
        await anyio.sleep_forever()

    def quick() -> str:
        quick_done.set()  # inline: it returns and settles before boom wakes up
        return "done"

    dag.add(Task(id="boom", fn=boom))
    dag.add(Task(id="forever", fn=forever))
    dag.add(Task(id="quick", fn=quick, inline=True))
    dag.add(Task(id="later", fn=lambda: 1, deps=["forever"]))
    dag.add(Task(id="after_boom", fn=lambda: 1, deps=["boom"]))
    with anyio.fail_after(5):
        result = await orchestra.run(dag, fail_fast=True)
    assert started == ["forever"]
    assert result.states == {
        "boom": S.FAILED,
        "forever": S.CANCELLED,
        "quick": S.SUCCEEDED,
        "later": S.CANCELLED,
        "after_boom": S.UPSTREAM_FAILED,
    }
    assert result.outputs == {"quick": "done"}
    assert not result.ok


async def test_timeout_fails_attempt_then_retry() -> None:
    calls: list[int] = []

    async def slow_then_fast() -> str:
        calls.append(1)
        if len(calls) == 1:
            await anyio.sleep_forever()
        return "fast"

    dag = DAG("timeout")
    dag.add(Task(id="a", fn=slow_then_fast, timeout=0.05, retries=1))
    rec = Recorder()
    with anyio.fail_after(5):
        result = await orchestra.run(dag, hooks=[rec])
    assert result.outputs == {"a": "fast"}
    assert ("failure", "a", 1, "TimeoutError") in rec.events


async def test_timeout_of_a_sync_body_in_a_thread() -> None:
    release = threading.Event()

    def blocked() -> None:
        release.wait(5)

    dag = DAG("timeout")
    dag.add(Task(id="a", fn=blocked, timeout=0.05))
    try:
        with anyio.fail_after(5):
            result = await orchestra.run(dag)
    finally:
        release.set()
    assert result.states["a"] is S.FAILED
    assert isinstance(result.errors["a"], TimeoutError)


async def test_max_concurrency_is_respected() -> None:
    running = 0
    peak = 0

    async def body() -> None:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await anyio.sleep(0.001)
        running -= 1

    dag = DAG("limit")
    for i in range(40):
        dag.add(Task(id=f"t{i}", fn=body))
    result = await orchestra.run(dag, max_concurrency=3)
    assert result.ok
    assert peak == 3


async def test_a_chain_runs_on_one_worker_however_high_the_cap() -> None:
    # Workers start as bodies wait while tasks are ready: a chain never needs a second.
    # (Before, a run started max_concurrency workers at once: 64 tasks for this chain.)
    before = len(anyio.get_running_tasks())  # this test's own
    seen: list[int] = []

    async def body() -> None:
        seen.append(len(anyio.get_running_tasks()) - before)
        await anyio.lowlevel.checkpoint()  # it waits: a worker would start if one were due

    dag = DAG("chain")
    for i in range(100):
        dag.add(Task(id=f"t{i}", fn=body, deps=[f"t{i - 1}"] if i else []))
    result = await orchestra.run(dag)
    assert result.ok
    assert seen == [1] * 100


async def test_sources_run_in_place_start_one_worker_not_one_each() -> None:
    # Bodies run in place need no worker per source: one starts, and one more is on its
    # way (should the body wait). Before, this run started 64 workers before any body ran.
    before = len(anyio.get_running_tasks())  # this test's own
    seen: list[int] = []

    async def body() -> None:
        seen.append(len(anyio.get_running_tasks()) - before)

    dag = DAG("wide")
    dag.add_many(Task(id=f"t{i}", fn=body) for i in range(100))
    result = await orchestra.run(dag, max_concurrency=64)
    assert result.ok, result.errors
    assert len(seen) == 100
    assert seen[0] == 2  # the first worker, and the one it woke as it took the first task


async def test_a_task_added_with_an_option_after_a_plan_is_planned_with_it() -> None:
    # A DAG whose tasks set no option is planned with one rule for all; a task that sets
    # one, added after that plan, gets its own.
    async def bad() -> None:
        raise ValueError("boom")

    async def cleanup() -> str:
        return "cleaned"

    dag = DAG("late option")
    dag.add(Task(id="a", fn=bad))
    dag.validate()  # planned: no task sets an option
    dag.add(Task(id="b", fn=cleanup, deps=["a"], trigger="all_done"))
    result = await orchestra.run(dag)
    assert result.states["a"] is S.FAILED
    assert result.states["b"] is S.SUCCEEDED
    assert result.outputs["b"] == "cleaned"


async def test_bodies_that_wait_start_a_worker_each_up_to_an_uncapped_run() -> None:
    everyone = anyio.Event()
    running = 0

    async def body() -> None:
        nonlocal running
        running += 1
        if running == 50:
            everyone.set()
        with anyio.fail_after(30):  # reached only if the workers stopped short of 50
            await everyone.wait()

    dag = DAG("wide")
    for i in range(50):
        dag.add(Task(id=f"t{i}", fn=body))
    result = await orchestra.run(dag, max_concurrency=None)
    assert result.ok, result.errors
    assert running == 50


async def test_the_run_and_each_task_say_how_long_they_took() -> None:
    async def body() -> None:
        await anyio.sleep(0.05)

    dag = DAG("timed")
    dag.add(Task(id="a", fn=body))
    dag.add(Task(id="b", fn=body, deps=["a"]))
    result = await orchestra.run(dag)
    assert 0.05 <= result.durations["a"] < 30
    assert 0.05 <= result.durations["b"] < 30
    assert result.durations["a"] + result.durations["b"] <= result.duration < 60


async def test_sync_bodies_run_in_threads_unless_inline() -> None:
    loop_thread = threading.get_ident()
    dag = DAG("threads")
    dag.add(Task(id="threaded", fn=threading.get_ident))
    dag.add(Task(id="inline", fn=threading.get_ident, inline=True))
    result = await orchestra.run(dag)
    assert result.outputs["threaded"] != loop_thread
    assert result.outputs["inline"] == loop_thread


VAR: contextvars.ContextVar[str] = contextvars.ContextVar("VAR", default="unset")


async def test_caller_context_reaches_bodies_and_hooks() -> None:
    seen: dict[str, str] = {}

    class Look(TaskHooks):
        def before_execute(self, ctx: TaskHookContext) -> None:
            seen[f"hook:{ctx.task.id}"] = VAR.get()

    dag = DAG("ctx")
    dag.add(Task(id="thread", fn=VAR.get))
    dag.add(Task(id="inline", fn=VAR.get, inline=True))

    async def in_loop() -> str:
        return VAR.get()

    dag.add(Task(id="async", fn=in_loop, deps=["thread"]))
    token = VAR.set("caller")
    try:
        result = await orchestra.run(dag, hooks=[Look()])
    finally:
        VAR.reset(token)
    assert result.outputs == {"thread": "caller", "inline": "caller", "async": "caller"}
    assert set(seen.values()) == {"caller"}


async def test_hard_cap_on_attempts() -> None:
    class Stubborn(TaskHooks):
        def on_failure(self, ctx: TaskHookContext, error: BaseException) -> Retry:
            return Retry(0)

    dag = DAG("cap")
    dag.add(Task(id="a", fn=Flaky(10**9), inline=True))
    result = await orchestra.run(dag, hooks=[Stubborn()], max_attempts=7)
    assert result.attempts["a"] == 7
    assert result.states["a"] is S.FAILED
    assert "attempt cap of 7 reached" in result.reasons["a"]


async def test_default_hard_cap() -> None:
    class Stubborn(TaskHooks):
        def on_failure(self, ctx: TaskHookContext, error: BaseException) -> Retry:
            return Retry(0)

    dag = DAG("cap")
    dag.add(Task(id="a", fn=Flaky(10**9), inline=True))
    result = await orchestra.run(dag, hooks=[Stubborn()])
    assert result.attempts["a"] == orchestra.dag.DEFAULT_MAX_ATTEMPTS


async def test_retry_budget_turns_retry_into_fail() -> None:
    dag = DAG("budget")
    for i in range(5):
        dag.add(Task(id=f"t{i}", fn=Flaky(10**9), retries=3, inline=True))
    result = await orchestra.run(dag, retry_budget=4, max_concurrency=1)
    assert sum(result.attempts.values()) == 5 + 4
    assert all(s is S.FAILED for s in result.states.values())
    budget_reasons = [r for r in result.reasons.values() if "retry budget of 4 exhausted" in r]
    assert len(budget_reasons) >= 1
    assert all(isinstance(e, ConnectionError) for e in result.errors.values())


async def test_retry_budget_zero_allows_no_retry() -> None:
    dag = DAG("budget")
    dag.add(Task(id="a", fn=Flaky(1), retries=3))
    result = await orchestra.run(dag, retry_budget=0)
    assert result.attempts["a"] == 1
    assert result.states["a"] is S.FAILED
    assert result.reasons["a"] == "failed: run's retry budget of 0 exhausted"


async def test_cancelling_run_cancels_tasks_and_retry_sleeps() -> None:
    started = anyio.Event()
    retrying = anyio.Event()

    async def forever() -> None:
        started.set()
        await anyio.sleep_forever()

    async def done() -> str:
        return "x"

    class SeeRetry(AfterRun):
        async def on_failure(self, ctx: TaskHookContext, error: BaseException) -> None:
            retrying.set()  # the task's own retries decide: Retry(3600)

    dag = DAG("cancel")
    dag.add(Task(id="forever", fn=forever))
    dag.add(Task(id="sleepy_retry", fn=Flaky(10), retries=5, retry_delay=3600))
    dag.add(Task(id="never", fn=lambda: 1, deps=["forever"]))
    dag.add(Task(id="done", fn=done))
    hook = SeeRetry()
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(partial(orchestra.run, dag, hooks=[hook]))
            await started.wait()
            await retrying.wait()
            # Every task is now parked: forever asleep, sleepy_retry in its retry sleep,
            # done settled. No clock involved.
            await anyio.wait_all_tasks_blocked()
            tg.cancel_scope.cancel()
    [result] = hook.results  # after_run sees the states reached
    assert result.states == {
        "forever": S.CANCELLED,
        "sleepy_retry": S.CANCELLED,
        "never": S.CANCELLED,
        "done": S.SUCCEEDED,
    }
    assert result.attempts["sleepy_retry"] == 1
    assert result.outputs == {"done": "x"}


async def test_cancel_scope_around_run_propagates() -> None:
    dag = DAG("cancel")
    dag.add(Task(id="forever", fn=anyio.sleep_forever))
    with anyio.move_on_after(0.02) as scope:
        await orchestra.run(dag)
    assert scope.cancelled_caught


async def test_keyboard_interrupt_is_never_retried_and_propagates() -> None:
    calls: list[int] = []

    def interrupt() -> None:
        calls.append(1)
        raise KeyboardInterrupt

    rec = Recorder()
    dag = DAG("kbd")
    dag.add(Task(id="a", fn=interrupt, retries=5, inline=True))
    dag.add(Task(id="b", fn=anyio.sleep_forever))
    with pytest.raises(KeyboardInterrupt):
        await orchestra.run(dag, hooks=[rec])
    assert calls == [1]
    assert ("failure", "a", 1, "KeyboardInterrupt") in rec.events


def test_run_sync_on_both_backends() -> None:
    dag = DAG("sync")
    dag.add(Task(id="a", fn=lambda: 1))
    for backend in ("asyncio", "trio"):
        assert orchestra.run_sync(dag, backend=backend).outputs == {"a": 1}


async def test_agent_task_without_dispatcher_is_refused() -> None:
    dag = DAG("agents")
    dag.add(Task(id="a", fn=lambda: "question", agent="researcher"))
    with pytest.raises(DAGError, match="agent 'researcher'"):
        await orchestra.run(dag)


async def test_empty_dag() -> None:
    result = await orchestra.run(DAG("empty"))
    assert result.ok
    assert result.states == {}


async def test_run_result_repr_is_a_summary() -> None:
    dag = DAG("r")
    dag.add(Task(id="a", fn=lambda: 1))
    result = await orchestra.run(dag)
    assert repr(result).startswith("<RunResult ok=True succeeded=1 ")


class AfterRun(TaskHooks):
    """Keeps the ``RunResult`` of a run that raises or is cancelled (after_run sees it)."""

    def __init__(self) -> None:
        self.results: list[orchestra.RunResult] = []

    def after_run(self, ctx: orchestra.RunContext, result: orchestra.RunResult) -> None:
        self.results.append(result)


async def test_fatal_error_records_states_then_propagates_bare() -> None:
    started = anyio.Event()

    async def interrupt() -> None:
        await started.wait()
        raise SystemExit(3)

    async def forever() -> None:
        started.set()
        await anyio.sleep_forever()

    dag = DAG("fatal")
    dag.add(Task(id="exit", fn=interrupt))
    dag.add(Task(id="forever", fn=forever))
    dag.add(Task(id="after", fn=lambda: 1, deps=["exit"], trigger="all_done"))
    hook = AfterRun()
    with pytest.raises(SystemExit) as info:
        await orchestra.run(dag, hooks=[hook])
    assert info.value.code == 3
    [result] = hook.results
    assert result.states == {"exit": S.FAILED, "forever": S.CANCELLED, "after": S.CANCELLED}
    assert isinstance(result.errors["exit"], SystemExit)


async def test_keyboard_interrupt_in_a_hook_propagates_and_is_recorded() -> None:
    class Interrupting(AfterRun):
        def before_execute(self, ctx: TaskHookContext) -> None:
            raise KeyboardInterrupt

    dag = DAG("fatal")
    dag.add(Task(id="a", fn=lambda: 1))
    hook = Interrupting()
    with pytest.raises(KeyboardInterrupt):
        await orchestra.run(dag, hooks=[hook])
    assert hook.results[0].states == {"a": S.FAILED}
