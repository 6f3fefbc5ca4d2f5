"""``def`` hooks are called inline; past their timeout they are reported while they run.

A ``blocking = True`` hook object's ``def`` hooks run in worker threads, where the
timeout abandons them and the run goes on (DESIGN.md, "Hook traits").
"""

from __future__ import annotations

import contextvars
import logging
import threading
import time
from collections.abc import Iterator

import anyio
import pytest

import orchestra
from orchestra import DAG, Fail, HookChain, HookError, Skip, Task, TaskHookContext, TaskHooks

pytestmark = pytest.mark.anyio

LONG = 30.0  # how long a "hung" hook waits at most: the tests release it long before


def ctx() -> TaskHookContext:
    return TaskHookContext(task=Task(id="t", fn=lambda: None), attempt=1, executor=None, run_id="r")


class _Warnings(logging.Handler):
    """Keeps the ``orchestra`` logger's warnings; sets ``seen`` on one that says ``still``."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []
        self.seen = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        self.messages.append(message)
        if "still running" in message:
            self.seen.set()


@pytest.fixture
def warnings() -> Iterator[_Warnings]:
    handler = _Warnings()
    logger = logging.getLogger("orchestra")
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)


def two_tasks() -> DAG:
    dag = DAG("hang")
    dag.add(Task(id="t", fn=lambda: "ran"))
    dag.add(Task(id="u", fn=lambda t: t + "!", deps=["t"]))
    return dag


async def test_a_def_hook_runs_inline_in_the_callers_thread_and_context() -> None:
    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")
    seen: list[tuple[str, str]] = []

    class Sees(TaskHooks):
        def before_execute(self, ctx: TaskHookContext) -> None:
            seen.append((threading.current_thread().name, var.get()))

    var.set("caller's")
    decision = await HookChain([Sees()]).call("before_execute", ctx())
    assert decision == (None, None)
    assert seen == [(threading.current_thread().name, "caller's")]


async def test_a_def_hook_of_a_run_is_called_on_the_loop_thread() -> None:
    threads: list[str] = []

    class Sees(TaskHooks):
        def before_execute(self, ctx: TaskHookContext) -> None:
            threads.append(threading.current_thread().name)

        def after_execute(self, ctx: TaskHookContext, result: object) -> None:
            threads.append(threading.current_thread().name)

    result = await orchestra.run(two_tasks(), hooks=[Sees()])
    assert result.ok
    assert threads == [threading.current_thread().name] * 4


async def test_a_hung_def_hook_is_reported_by_name_while_it_runs(warnings: _Warnings) -> None:
    class Hung(TaskHooks):
        timeout = 0.3

        def before_execute(self, ctx: TaskHookContext) -> Skip | None:
            if ctx.task.id != "t":
                return None
            # held until the warning about it is logged (from the watchdog's thread)
            warnings.seen.wait(LONG)
            return Skip("too late to count")

    started = time.monotonic()
    with anyio.fail_after(LONG + 10):
        result = await orchestra.run(two_tasks(), hooks=[Hung()])
    took = time.monotonic() - started
    assert warnings.seen.is_set(), "no warning while the hook ran"
    assert took < LONG  # the warning came while it ran, and released it
    still = [m for m in warnings.messages if "still running" in m]
    assert still[0].startswith("hook Hung.before_execute for 't' is still running after ")
    assert "past its timeout of 0.3 s" in still[0]
    assert "blocking = True" in still[0]
    # when it returned: a hook error, its answer dropped (the task ran)
    assert result.ok
    assert result.outputs == {"t": "ran", "u": "ran!"}
    error = result.hook_errors[0]
    assert (error.hook, error.moment, error.subject) == ("Hung", "before_execute", "t")
    assert "past its timeout of 0.3 s" in str(error)


async def test_a_late_def_hook_of_a_fail_closed_object_fails_the_task() -> None:
    class Slow(TaskHooks):
        timeout = 0.05
        fail_closed = True

        def before_execute(self, ctx: TaskHookContext) -> None:
            time.sleep(0.3)  # reported between 0.05 s and 0.05 s plus two looks

    errors: list[HookError] = []
    decision, by = await HookChain([Slow()]).call(
        "before_execute", ctx(), subject="t", on_error=errors.append
    )
    assert type(decision) is Fail
    assert by == "Slow.before_execute"
    assert [e.moment for e in errors] == ["before_execute"]
    assert "returned after" in str(errors[0])


async def test_a_quick_def_hook_is_never_reported(warnings: _Warnings) -> None:
    class Quick(TaskHooks):
        timeout = 0.05

        def before_execute(self, ctx: TaskHookContext) -> Skip:
            return Skip("quick")

    for _ in range(200):
        assert await HookChain([Quick()]).call("before_execute", ctx()) == (
            Skip("quick"),
            "Quick.before_execute",
        )
    await anyio.sleep(0.1)  # the watchdog looks several times meanwhile
    assert warnings.messages == []


class HungBlocking(TaskHooks):
    blocking = True
    timeout = 0.3

    def __init__(self) -> None:
        self.release = threading.Event()
        self.threads: list[str] = []

    def before_execute(self, ctx: TaskHookContext) -> Fail:
        self.threads.append(threading.current_thread().name)
        self.release.wait(LONG)
        return Fail("never counted")


async def test_with_blocking_a_hung_def_hook_is_abandoned_and_the_run_goes_on() -> None:
    hook = HungBlocking()
    started = time.monotonic()
    try:
        with anyio.fail_after(LONG):
            result = await orchestra.run(two_tasks(), hooks=[hook])
        took = time.monotonic() - started
    finally:
        hook.release.set()
    assert result.ok
    assert result.outputs == {"t": "ran", "u": "ran!"}
    assert [e.moment for e in result.hook_errors] == ["before_execute", "before_execute"]
    assert "timed out after 0.3 s" in str(result.hook_errors[0])
    assert took < LONG / 2  # two timeouts, not the hook's wait
    assert threading.current_thread().name not in hook.threads


def test_with_blocking_call_now_waits_at_most_the_timeout() -> None:
    hook = HungBlocking()
    errors: list[HookError] = []
    chain = HookChain([hook])
    try:
        assert chain.awaits("before_execute")  # it runs in a thread: an engine may await it
        decision = chain.call_now("before_execute", ctx(), subject="t", on_error=errors.append)
    finally:
        hook.release.set()
    assert decision == (None, None)
    assert [str(e) for e in errors] == [
        "hook HungBlocking.before_execute for 't' timed out after 0.3 s"
    ]


def test_blocking_must_be_a_bool() -> None:
    class Says(TaskHooks):
        blocking = "yes"

        def before_execute(self, ctx: TaskHookContext) -> None:
            return None

    with pytest.raises(TypeError, match=r"Says\.blocking must be True or False, got 'yes'"):
        HookChain([Says()])


async def test_an_async_hook_without_an_await_point_answers_and_one_with_is_still_cut() -> None:
    class Answers(TaskHooks):
        timeout = 0.05

        async def before_execute(self, ctx: TaskHookContext) -> Skip:
            return Skip("at once")  # no await point: it cannot suspend, nothing to bound

    class Waits(TaskHooks):
        timeout = 0.05

        async def before_execute(self, ctx: TaskHookContext) -> Skip:
            await anyio.sleep(LONG)
            return Skip("never")

    errors: list[HookError] = []
    with anyio.fail_after(LONG / 3):
        first = await HookChain([Answers()]).call("before_execute", ctx())
        second = await HookChain([Waits()]).call(
            "before_execute", ctx(), subject="t", on_error=errors.append
        )
    assert first == (Skip("at once"), "Answers.before_execute")
    assert second == (None, None)
    assert [str(e) for e in errors] == ["hook Waits.before_execute for 't' timed out after 0.05 s"]
