"""Hook timeouts: every ``async`` hook call stays bounded, whatever it does before it waits.

``HookChain`` arms no deadline for a hook that finishes without waiting (the common case,
and the cheap one); these tests pin that a hook that does wait is still cut at its
timeout, on both backends, counts as a hook error, and leaves the chain's other hooks
running, and that cancellation from outside still reaches a waiting hook.
"""

from __future__ import annotations

import time
from collections.abc import Generator
from typing import Any

import anyio
import pytest

from orchestra import DAG, Fail, HookChain, HookError, Skip, Task, TaskHookContext, TaskHooks, run

pytestmark = pytest.mark.anyio


def ctx() -> TaskHookContext:
    return TaskHookContext(task=Task(id="t", fn=lambda: None), attempt=1, executor=None, run_id="r")


class Recorder(TaskHooks):
    """Records its calls; answers ``Skip`` so the merged decision shows it ran."""

    def __init__(self, calls: list[str]) -> None:
        self.calls = calls

    async def before_execute(self, ctx: TaskHookContext) -> Skip:
        self.calls.append(type(self).__name__)
        return Skip(type(self).__name__)


class First(Recorder):
    pass


class Last(Recorder):
    pass


class Hangs(TaskHooks):
    """Does some work at once, then waits forever (inside a scope of its own on trio)."""

    def __init__(self, calls: list[str]) -> None:
        self.calls = calls

    async def before_execute(self, ctx: TaskHookContext) -> Fail:
        self.calls.append("Hangs")
        try:
            await anyio.sleep(3600)
        finally:
            self.calls.append("Hangs cleaned up")
        return Fail("never")


async def test_a_hanging_hook_is_cut_and_the_others_still_run() -> None:
    calls: list[str] = []
    errors: list[HookError] = []
    chain = HookChain([First(calls), Hangs(calls), Last(calls)], timeout=0.05)
    with anyio.fail_after(10):
        decision = await chain.call("before_execute", ctx(), subject="t", on_error=errors.append)
    assert calls == ["First", "Hangs", "Hangs cleaned up", "Last"]
    assert decision == (Skip("First"), "First.before_execute")
    assert [str(e) for e in errors] == ["hook Hangs.before_execute for 't' timed out after 0.05 s"]


async def test_the_time_before_the_first_wait_counts_against_the_timeout() -> None:
    calls: list[str] = []

    class BusyThenWaits(TaskHooks):
        async def before_execute(self, ctx: TaskHookContext) -> Fail:
            time.sleep(0.15)  # noqa: ASYNC251 - the whole timeout spent before the first wait
            await anyio.lowlevel.checkpoint()
            calls.append("past its first wait")
            await anyio.sleep(3600)
            return Fail("never")

    errors: list[HookError] = []
    chain = HookChain([BusyThenWaits()], timeout=0.1)
    with anyio.fail_after(10):
        assert await chain.call("before_execute", ctx(), on_error=errors.append) == (None, None)
    assert calls == []  # cut at its first wait: its time was up already
    assert [str(e) for e in errors] == ["hook BusyThenWaits.before_execute timed out after 0.1 s"]


async def test_a_hook_that_waits_many_times_within_its_timeout_answers() -> None:
    class Waits(TaskHooks):
        async def before_execute(self, ctx: TaskHookContext) -> Skip:
            for _ in range(5):
                await anyio.lowlevel.checkpoint()
            with anyio.move_on_after(30):  # a scope of its own, opened after a wait
                await anyio.sleep(0.01)
            return Skip("waited")

    chain = HookChain([Waits()], timeout=5)
    assert await chain.call("before_execute", ctx()) == (Skip("waited"), "Waits.before_execute")


async def test_a_hook_error_after_a_wait_is_isolated_and_its_own_timeout_error_is_not_ours() -> (
    None
):
    class Raises(TaskHooks):
        async def before_execute(self, ctx: TaskHookContext) -> None:
            await anyio.lowlevel.checkpoint()
            raise TimeoutError("the backend was slow")

    errors: list[HookError] = []
    chain = HookChain([Raises()], timeout=30)
    assert await chain.call("before_execute", ctx(), on_error=errors.append) == (None, None)
    assert [str(e) for e in errors] == [
        "hook Raises.before_execute raised TimeoutError: the backend was slow"
    ]


async def test_cancellation_from_outside_reaches_a_waiting_hook() -> None:
    calls: list[str] = []
    chain = HookChain([Hangs(calls)], timeout=60)
    with anyio.move_on_after(0.05) as scope:
        await chain.call("before_execute", ctx())
    assert scope.cancelled_caught  # the caller's own cancellation, not a hook error
    assert calls == ["Hangs", "Hangs cleaned up"]


async def test_an_awaitable_that_is_not_a_coroutine_is_cut_too() -> None:
    class Forever:
        def __await__(self) -> Generator[Any, Any, None]:
            return anyio.sleep(3600).__await__()

    class Returns(TaskHooks):
        def before_execute(self, ctx: TaskHookContext) -> Any:
            return Forever()

    errors: list[HookError] = []
    with anyio.fail_after(10):
        await HookChain([Returns()], timeout=0.05).call(
            "before_execute", ctx(), on_error=errors.append
        )
    assert [str(e) for e in errors] == ["hook Returns.before_execute timed out after 0.05 s"]


async def test_a_hanging_hook_in_a_run_is_cut_and_the_task_still_runs() -> None:
    calls: list[str] = []
    dag = DAG("cut")
    dag.add(Task(id="a", fn=lambda: 1))
    with anyio.fail_after(10):
        result = await run(dag, hooks=[Hangs(calls)], hook_timeout=0.05)
    assert result.ok
    assert result.outputs["a"] == 1
    assert calls == ["Hangs", "Hangs cleaned up"]
    assert [str(e) for e in result.hook_errors] == [
        "hook Hangs.before_execute for 'a' timed out after 0.05 s"
    ]
