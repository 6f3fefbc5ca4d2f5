"""``def`` hooks are called inline; past their timeout they are reported while they run.

A ``blocking = True`` hook object's ``def`` hooks run in worker threads, where the
timeout abandons them and the run goes on (DESIGN.md, "Hook traits").
"""

from __future__ import annotations

import contextvars
import logging
import os
import threading
import time
from collections.abc import Iterator

import anyio
import pytest

import orchestra
from orchestra import (
    DAG,
    Fail,
    HookChain,
    HookError,
    Replace,
    Skip,
    Task,
    TaskHookContext,
    TaskHooks,
)

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


class _Reports(logging.Handler):
    """The ``orchestra`` logger's "still running" warnings, and an event per hook label."""

    def __init__(self, labels: list[str]) -> None:
        super().__init__(logging.WARNING)
        self.seen = {label: threading.Event() for label in labels}
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if "still running" not in message:
            return
        self.messages.append(message)
        for label, event in self.seen.items():
            if message.startswith(f"hook {label} "):
                event.set()


def test_hung_def_hooks_called_now_in_two_threads_are_each_reported_while_they_run() -> None:
    # A sync engine (Hamilton's driver, a Prefect task) calls hooks here and now, in
    # threads of its own: each thread's hung call is watched and named on its own.
    class HungA(TaskHooks):
        timeout = 0.2

        def before_execute(self, ctx: TaskHookContext) -> Skip:
            returned["A"] = not reports.seen["HungA.before_execute"].wait(LONG)
            return Skip("too late to count")

    class HungB(TaskHooks):
        timeout = 0.2

        def after_execute(self, ctx: TaskHookContext, result: object) -> Replace:
            returned["B"] = not reports.seen["HungB.after_execute"].wait(LONG)
            return Replace("too late to count")

    reports = _Reports(["HungA.before_execute", "HungB.after_execute"])
    returned: dict[str, bool] = {}  # True: it returned without having been reported
    answers: dict[str, object] = {}
    errors: list[HookError] = []
    logger = logging.getLogger("orchestra")
    logger.addHandler(reports)

    def call(name: str, chain: HookChain, moment: str, *args: object) -> None:
        answers[name] = chain.call_now(moment, *args, subject=name, on_error=errors.append)

    threads = [
        threading.Thread(target=call, args=("a", HookChain([HungA()]), "before_execute", ctx())),
        threading.Thread(
            target=call, args=("b", HookChain([HungB()]), "after_execute", ctx(), "out")
        ),
    ]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(LONG + 10)
    finally:
        for event in reports.seen.values():
            event.set()  # never leave a hook waiting
        logger.removeHandler(reports)
    assert returned == {"A": False, "B": False}, "a hook returned before its report"
    assert answers == {"a": (None, None), "b": (None, None)}  # late answers are dropped
    by_label = {m.split(" ")[1]: m for m in reports.messages}
    assert set(by_label) == {"HungA.before_execute", "HungB.after_execute"}
    for label, subject in (("HungA.before_execute", "a"), ("HungB.after_execute", "b")):
        message = by_label[label]
        assert message.startswith(f"hook {label} for {subject!r} is still running after ")
        assert "past its timeout of 0.2 s" in message
        # never reported before its timeout: the watchdog counts from the look that saw it
        assert float(message.split("still running after ")[1].split(" s")[0]) >= 0.2
    assert sorted((e.hook, e.moment, e.subject) for e in errors) == [
        ("HungA", "before_execute", "a"),
        ("HungB", "after_execute", "b"),
    ]
    assert all("past its timeout of 0.2 s" in str(e) for e in errors)


def test_a_hook_that_calls_hooks_is_watched_while_the_hooks_it_calls_run() -> None:
    # A hook that calls hooks (a nested run, say): the outer call is timed from the look
    # that first saw it, the inner call on its own, under its own timeout.
    class Inner(TaskHooks):
        timeout = LONG  # never late here

        def before_execute(self, ctx: TaskHookContext) -> None:
            reports.seen["Outer.before_execute"].wait(LONG)  # held until the outer's report

    class Outer(TaskHooks):
        timeout = 0.2

        def before_execute(self, ctx: TaskHookContext) -> None:
            HookChain([Inner()]).call_now("before_execute", ctx, subject="inner")

    reports = _Reports(["Outer.before_execute", "Inner.before_execute"])
    errors: list[HookError] = []
    logger = logging.getLogger("orchestra")
    logger.addHandler(reports)
    try:
        answer = HookChain([Outer()]).call_now(
            "before_execute", ctx(), subject="outer", on_error=errors.append
        )
    finally:
        for event in reports.seen.values():
            event.set()  # never leave a hook waiting
        logger.removeHandler(reports)
    assert answer == (None, None)
    assert len(reports.messages) == 1
    assert reports.messages[0].startswith("hook Outer.before_execute for 'outer' is still running")
    assert [(e.hook, e.moment, e.subject) for e in errors] == [("Outer", "before_execute", "outer")]


async def test_with_blocking_the_run_ends_while_the_hung_hook_still_runs() -> None:
    class HungAfter(TaskHooks):
        blocking = True
        timeout = 0.2

        def __init__(self) -> None:
            self.release = threading.Event()
            self.returned = threading.Event()

        def after_execute(self, ctx: TaskHookContext, result: object) -> None:
            self.release.wait(LONG)
            self.returned.set()

    hook = HungAfter()
    try:
        with anyio.fail_after(LONG):
            result = await orchestra.run(two_tasks(), hooks=[hook])
        still_running = not hook.returned.is_set()
    finally:
        hook.release.set()
    assert still_running, "the run waited for its abandoned hook"
    assert result.ok
    assert result.outputs == {"t": "ran", "u": "ran!"}
    assert [(e.hook, e.moment, e.subject) for e in result.hook_errors] == [
        ("HungAfter", "after_execute", "t"),
        ("HungAfter", "after_execute", "u"),
    ]
    assert all("timed out after 0.2 s" in str(e) for e in result.hook_errors)
    assert hook.returned.wait(LONG)  # released, its thread ends on its own


@pytest.mark.filterwarnings("ignore:This process:DeprecationWarning")  # 3.12+: fork, threads
def test_a_def_hook_that_forks_returns_in_the_child_too() -> None:
    # The child has none of the parent's watched calls (the watchdog's record of them is
    # cleared at the fork): the hook that forked returns there without an error too.
    class Forks(TaskHooks):
        timeout = LONG

        def before_execute(self, ctx: TaskHookContext) -> None:
            here.append(os.fork())

    here: list[int] = []
    errors: list[HookError] = []
    answer = HookChain([Forks()]).call_now("before_execute", ctx(), on_error=errors.append)
    if here == [0]:  # the child: report through its exit status, run nothing more
        os._exit(0 if (answer, errors) == ((None, None), []) else 1)
    [child] = here
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert (answer, errors) == ((None, None), [])
