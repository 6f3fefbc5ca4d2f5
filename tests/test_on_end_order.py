"""An upstream's ``on_end`` returns before its dependents' hooks are called."""

from __future__ import annotations

import time

import pytest

import orchestra
from orchestra import DAG, TaskHookContext, TaskHooks, TaskState

pytestmark = pytest.mark.anyio


class SlowEnd(TaskHooks):
    """A def ``on_end`` that takes a while (it runs in a thread), and the order of calls."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def on_end(self, ctx: TaskHookContext, state: TaskState) -> None:
        if ctx.task.id == "first":
            time.sleep(0.2)  # a notification that takes its time
        self.calls.append(("on_end", ctx.task.id))

    def before_execute(self, ctx: TaskHookContext) -> None:
        self.calls.append(("before_execute", ctx.task.id))


async def test_a_slow_on_end_comes_before_the_dependents_hooks() -> None:
    dag = DAG("order")

    @dag.task
    async def first() -> int:
        return 1

    @dag.task(deps=[first])
    async def second(first: int) -> int:
        return first + 1

    @dag.task
    async def beside() -> int:  # no upstream: it need not wait for anything
        return 0

    hooks = SlowEnd()
    result = await orchestra.run(dag, hooks=[hooks])
    assert result.ok
    calls = hooks.calls
    assert calls.index(("on_end", "first")) < calls.index(("before_execute", "second"))
    assert sorted(calls) == sorted(
        [
            (moment, t)
            for t in ("first", "second", "beside")
            for moment in ("before_execute", "on_end")
        ]
    )
