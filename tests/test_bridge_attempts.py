"""``orchestra.bridge``: the attempt driver, fed events, answering what an engine does."""

from __future__ import annotations

import time
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import orchestra
from orchestra import Fail, HookChain, Replace, Retry, Skip, TaskFailed, TaskHooks, TaskState
from orchestra.bridge import (
    AttemptDriver,
    DoFail,
    DoGive,
    DoRun,
    DoSkip,
    DoSleep,
    GiveOutput,
    RetryBudget,
    TaskAttempts,
)

TASK = orchestra.Task(id="t", fn=lambda: None)


def context(a: TaskAttempts) -> orchestra.TaskHookContext:
    return HookChain.task_context(
        task=a.task, attempt=a.attempt, executor=None, run_id="r", errors=a.errors,
        started_at=a.started_at, inputs=a.inputs, notes=a.notes,
    )  # fmt: skip


def begin(*hooks: object, max_attempts: int = 100, **how: Any) -> TaskAttempts:
    driver = AttemptDriver(HookChain(hooks), max_attempts=max_attempts)
    return driver.begin(how.pop("task", TASK), {"x": 1}, context=context, **how)


class Ends(TaskHooks):
    def __init__(self) -> None:
        self.ends: list[tuple[int, TaskState]] = []

    def on_end(self, ctx: Any, state: TaskState) -> None:
        self.ends.append((ctx.attempt, state))


class Answers(Ends):
    """Answers each moment from a script."""

    def __init__(self, before: Any = None, after: Any = None, failure: Any = None) -> None:
        super().__init__()
        self.answers = {"before": before, "after": after, "failure": failure}

    def before_execute(self, ctx: Any) -> Any:
        return self.answers["before"]

    def after_execute(self, ctx: Any, result: Any) -> Any:
        return self.answers["after"]

    def on_failure(self, ctx: Any, error: BaseException) -> Any:
        return self.answers["failure"]


def test_every_answer_of_one_run() -> None:
    hooks = Answers(before=Replace({"x": 2}), after=Replace("out!"), failure=Retry(0.5))
    attempts = begin(hooks)
    assert attempts.started() == DoRun({"x": 2})
    assert attempts.failed(ConnectionError("503")) == DoSleep(0.5)
    assert attempts.started() == DoRun({"x": 2})
    end = attempts.succeeded("out")
    assert end == DoGive("out!")
    assert end.state is TaskState.SUCCEEDED
    assert hooks.ends == [(2, TaskState.SUCCEEDED)]
    assert attempts.ended is end
    assert attempts.attempt == 2
    with pytest.raises(RuntimeError, match="already ended"):
        attempts.started()


def test_given_output_no_body_runs() -> None:
    hooks = Answers(before=Replace(GiveOutput({})))
    end = begin(hooks).started()
    assert end == DoGive({}, "output given by Answers.before_execute")
    assert hooks.ends == [(1, TaskState.SUCCEEDED)]


@pytest.mark.parametrize(
    ("answer", "kind", "reason"),
    [
        (Skip("not today"), DoSkip, "skipped by Answers.before_execute: not today"),
        (Fail("no"), DoFail, "failed by Answers.before_execute: no"),
    ],
)
def test_refused_before_the_body(answer: Any, kind: type, reason: str) -> None:
    hooks = Answers(before=answer)
    end = begin(hooks).started()
    assert type(end) is kind
    assert end.reason == reason
    if kind is DoFail:
        assert isinstance(end.error, TaskFailed)
    assert end.decision == answer  # the hook's own words, as a model should read them
    assert hooks.ends == [(1, end.state)]


def test_failure_outcomes() -> None:
    error = ValueError("bad")
    recovered = begin(Answers(failure=Replace(42)))
    recovered.started()
    assert recovered.failed(error) == DoGive(42, "recovered by Answers.on_failure", error)
    skipped = begin(Answers(failure=Skip("optional")))
    skipped.started()
    skip = Skip("optional")
    assert skipped.failed(error) == DoSkip("skipped by Answers.on_failure: optional", error, skip)
    plain = begin(Ends())
    plain.started()
    assert plain.failed(error) == DoFail(error)
    failed = begin(Answers(failure=Fail("broken")))
    failed.started()
    end = failed.failed(error)
    assert type(end) is DoFail
    assert end.reason == "failed by Answers.on_failure: broken"
    assert "orchestra: failed by Answers.on_failure: broken" in error.__notes__


def test_cap_and_budget_refuse_a_retry() -> None:
    capped = begin(Answers(failure=Retry()), max_attempts=2)
    for _ in range(2):
        capped.started()
        end = capped.failed(OSError("x"))
    assert type(end) is DoFail
    assert end.reason == "failed by orchestra: attempt cap of 2 reached"
    budget = RetryBudget(1)
    first, second = (begin(Answers(failure=Retry()), budget=budget) for _ in range(2))
    first.started()
    assert first.failed(OSError("x")) == DoSleep(0.0)
    second.started()
    end = second.failed(OSError("x"))
    assert type(end) is DoFail
    assert "retry budget of 1 exhausted" in (end.reason or "")


def test_the_tasks_own_retries_decide_when_no_hook_does() -> None:
    task = orchestra.Task(id="t", fn=lambda: None, retries=1, retry_delay=0.25)
    attempts = begin(Ends(), task=task)
    attempts.started()
    assert attempts.failed(OSError("x")) == DoSleep(0.25)
    attempts.started()
    assert type(attempts.failed(OSError("x"))) is DoFail


def test_a_raising_hook_is_no_opinion_unless_fail_closed() -> None:
    class Raises(TaskHooks):
        fail_closed = False

        def before_execute(self, ctx: Any) -> None:
            raise RuntimeError("hook bug")

    errors: list[orchestra.HookError] = []
    assert type(begin(Raises(), on_error=errors.append).started()) is DoRun
    closed = Raises()
    closed.fail_closed = True
    end = begin(closed, on_error=errors.append).started()
    assert type(end) is DoFail
    assert len(errors) == 2


def test_never_ran_calls_on_end_once_with_attempt_0() -> None:
    hooks = Ends()
    attempts = begin(hooks)
    attempts.never_ran(TaskState.UPSTREAM_FAILED)
    assert hooks.ends == [(0, TaskState.UPSTREAM_FAILED)]
    with pytest.raises(RuntimeError):
        attempts.never_ran(TaskState.UPSTREAM_FAILED)


def test_run_sync_drives_every_attempt() -> None:
    calls: list[Any] = []

    def body(inputs: Any) -> Any:
        calls.append(inputs)
        if len(calls) < 3:
            raise ConnectionError("503")
        return "ok"

    hooks = Answers(failure=Retry(0.01))
    started = time.monotonic()
    end = begin(hooks).run_sync(body)
    assert end == DoGive("ok")
    assert len(calls) == 3
    assert time.monotonic() - started >= 0.02
    assert hooks.ends == [(3, TaskState.SUCCEEDED)]


def test_passthrough_errors_are_not_failures() -> None:
    class Control(Exception):
        pass

    def body(inputs: Any) -> Any:
        raise Control

    hooks = Answers(failure=Retry())
    with pytest.raises(Control):
        begin(hooks).run_sync(body, passthrough=(Control,))
    assert hooks.ends == []


@pytest.mark.anyio
async def test_async_form_with_async_hooks() -> None:
    class Async(Ends):
        async def on_failure(self, ctx: Any, error: BaseException) -> Any:
            return Retry() if ctx.attempt < 2 else Skip("gave up")

    async def body(inputs: Any) -> Any:
        raise OSError("down")

    hooks = Async()
    end = await begin(hooks).run_async(body)
    assert type(end) is DoSkip
    assert end.reason == "skipped by Async.on_failure: gave up"
    assert hooks.ends == [(2, TaskState.SKIPPED)]


def test_sync_form_with_async_hooks() -> None:
    class Async(Ends):
        async def before_execute(self, ctx: Any) -> Any:
            return Replace({"x": 5})

    hooks = Async()
    assert begin(hooks).run_sync(lambda inputs: inputs["x"]) == DoGive(5)
    assert hooks.ends == [(1, TaskState.SUCCEEDED)]


@given(st.lists(st.sampled_from(["retry", "skip", "fail", "replace", "none"]), max_size=8))
def test_on_end_exactly_once_whatever_the_answers(script: list[str]) -> None:
    """Whatever the on_failure hooks answer, the work ends once, with on_end once."""
    answers = {
        "retry": Retry(), "skip": Skip(), "fail": Fail(), "replace": Replace(0), "none": None,
    }  # fmt: skip

    class Scripted(Ends):
        def on_failure(self, ctx: Any, error: BaseException) -> Any:
            return answers[script[ctx.attempt - 1]] if ctx.attempt <= len(script) else None

    hooks = Scripted()

    def body(inputs: Any) -> Any:
        raise OSError("down")

    end = begin(hooks, max_attempts=5).run_sync(body)
    assert len(hooks.ends) == 1
    assert hooks.ends[0][1] is end.state
