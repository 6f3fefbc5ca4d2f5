"""Records are built by keyword, and ``started_at`` reads the monotonic clock."""

from __future__ import annotations

import time
from typing import Any

import anyio
import pytest
from tenacity import stop_after_delay

import orchestra
from orchestra import (
    DAG,
    Dispatcher,
    ExecutionMode,
    RunResult,
    SubagentHookContext,
    SubagentHooks,
    SubagentResult,
    Task,
    TaskHookContext,
    TaskHooks,
)

SHIFT = 1e9  # 31 years: no machine's uptime, so the shifted clock cannot be mistaken


@pytest.mark.parametrize(
    ("record", "args"),
    [
        (TaskHookContext, (Task(id="t", fn=print), 1, None, "run")),
        (SubagentHookContext, (None, "a", ExecutionMode.SYNC, "text", 1)),
        (SubagentResult, ("a", "out", 1)),
        (RunResult, (True, {}, {}, {}, {}, "run")),
        (Task, ("t", print)),
    ],
)
def test_wide_records_are_built_by_keyword(record: type, args: tuple[Any, ...]) -> None:
    with pytest.raises(TypeError, match="positional argument"):
        record(*args)


@pytest.fixture
def shifted_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """``time.monotonic`` far from every other clock (the event loop follows it too)."""
    real = time.monotonic
    monkeypatch.setattr(time, "monotonic", lambda: real() + SHIFT)


@pytest.mark.usefixtures("shifted_clock")
def test_task_started_at_is_monotonic() -> None:
    seen: list[float] = []

    class Look(TaskHooks):
        def on_failure(self, ctx: TaskHookContext, error: BaseException) -> None:
            seen.append(ctx.started_at)

    def flaky() -> None:
        raise ConnectionError("down")

    dag = DAG("clock")
    dag.add(Task(id="a", fn=flaky, retries=1))
    before = time.monotonic()
    orchestra.run_sync(dag, hooks=[Look()])
    after = time.monotonic()
    assert len(seen) == 2
    assert seen[0] == seen[1]  # the first attempt's start, on every attempt
    assert before <= seen[0] <= after


@pytest.mark.usefixtures("shifted_clock")
def test_dispatch_started_at_is_monotonic() -> None:
    seen: list[float] = []

    class Look(SubagentHooks):
        def before_dispatch(self, ctx: SubagentHookContext) -> None:
            seen.append(ctx.started_at)

    class Echo:
        name = "echo"

        async def run(self, task: str, ctx: Any) -> str:
            return task

    async def main() -> None:
        await Dispatcher([Echo()], hooks=[Look()]).dispatch("echo", "hi")

    before = time.monotonic()
    anyio.run(main)
    after = time.monotonic()
    assert before <= seen[0] <= after


@pytest.mark.usefixtures("shifted_clock")
def test_retry_policy_stop_after_delay_measures_from_started_at() -> None:
    # RetryPolicy compares started_at with time.monotonic(): both must be one clock, or
    # stop_after_delay would stop at once (or never).
    calls: list[int] = []

    def flaky() -> None:
        calls.append(1)
        raise ConnectionError("down")

    dag = DAG("delay")
    dag.add(Task(id="a", fn=flaky, inline=True))
    policy = orchestra.RetryPolicy(stop=stop_after_delay(3600))
    result = orchestra.run_sync(dag, hooks=[policy], max_attempts=4)
    assert result.attempts["a"] == 4  # retried until the attempt cap, not stopped at once
