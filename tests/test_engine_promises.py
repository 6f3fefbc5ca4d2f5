"""The engine's promises: a timeout bounds the whole attempt, hooks included; several
BaseExceptions at once are each kept; a ``def`` hook of a ``blocking`` object that hangs
never hangs the run (an inline one is reported: ``test_hook_inline.py``)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

import orchestra
from orchestra import DAG, RunResult, Task, TaskHookContext, TaskHooks, TaskState
from orchestra.skills import load

pytestmark = pytest.mark.anyio
S = TaskState


class SlowBefore(TaskHooks):
    timeout = None  # the task's timeout, not the hook's, must end the attempt

    def __init__(self, sync: bool) -> None:
        self.sync = sync

    async def before_execute(self, ctx: TaskHookContext) -> None:
        await anyio.sleep(30)


class SlowBeforeDef(TaskHooks):
    timeout = None
    blocking = True  # its def hooks run in threads: the attempt's deadline abandons them

    def before_execute(self, ctx: TaskHookContext) -> None:
        time.sleep(3)


@pytest.mark.parametrize("hook", [SlowBefore(sync=False), SlowBeforeDef()])
async def test_a_task_timeout_ends_an_attempt_stuck_in_its_before_hook(hook: TaskHooks) -> None:
    ran: list[int] = []
    dag = DAG("slow-hook")
    dag.add(Task(id="t", fn=lambda: ran.append(1), timeout=0.2, retries=1))
    started = time.monotonic()
    with anyio.fail_after(10):
        result = await orchestra.run(dag, hooks=[hook])
    assert result.states["t"] is S.FAILED
    assert isinstance(result.errors["t"], TimeoutError)
    assert result.attempts["t"] == 2  # the timeout is the attempt's failure: retries apply
    assert ran == []  # the body never started
    assert time.monotonic() - started < 2.9  # two attempts of 0.2 s, not the hook's 3 s


async def test_a_task_timeout_ends_an_attempt_stuck_in_a_yaml_task_created_hook(
    tmp_path: Path,
) -> None:
    path = tmp_path / "orchestra.yaml"
    path.write_text(
        textwrap.dedent(
            """
            hooks:
              TaskCreated:
                - hooks: [{type: command, command: 'sleep 8', timeout: 30}]
            """
        )
    )
    registry = load(path, project_dir=tmp_path)
    dag = DAG("yaml-slow")
    dag.add(Task(id="t", fn=lambda: "ran", timeout=0.5))
    started = time.monotonic()
    with anyio.fail_after(20):
        async with registry:
            result = await orchestra.run(dag, hooks=[registry.as_task_hooks()])
    assert result.states["t"] is S.FAILED
    assert isinstance(result.errors["t"], TimeoutError)
    assert time.monotonic() - started < 6  # the 8 s hook process was killed with the attempt


async def test_a_task_timeout_covers_after_execute_hooks_too() -> None:
    class SlowAfter(TaskHooks):
        timeout = None

        async def after_execute(self, ctx: TaskHookContext, result: Any) -> None:
            await anyio.sleep(30)

    dag = DAG("slow-after")
    dag.add(Task(id="t", fn=lambda: 1, timeout=0.2))
    with anyio.fail_after(10):
        result = await orchestra.run(dag, hooks=[SlowAfter()])
    assert result.states["t"] is S.FAILED
    assert isinstance(result.errors["t"], TimeoutError)


class Fatal(BaseException):
    pass


async def test_simultaneous_base_exceptions_each_end_their_task_failed_and_are_raised() -> None:
    barrier = threading.Barrier(2, timeout=5)
    seen: list[RunResult] = []

    class Seen(TaskHooks):
        def after_run(self, ctx: orchestra.RunContext, result: RunResult) -> None:
            seen.append(result)

    def interrupted() -> None:
        barrier.wait()
        raise KeyboardInterrupt

    def fatal() -> None:
        barrier.wait()
        raise Fatal("mine")

    dag = DAG("two-fatal")
    dag.add(Task(id="interrupted", fn=interrupted))
    dag.add(Task(id="fatal", fn=fatal))
    dag.add(Task(id="after", fn=lambda: 1, deps=["interrupted", "fatal"], trigger="all_done"))
    caught: BaseException | None = None
    with anyio.fail_after(10):
        try:
            await orchestra.run(dag, hooks=[Seen()])
        except BaseException as exc:  # a bare KeyboardInterrupt too: caught, not propagated
            caught = exc
    [result] = seen
    assert result.states["interrupted"] is S.FAILED
    assert result.states["fatal"] is S.FAILED
    assert isinstance(result.errors["interrupted"], KeyboardInterrupt)
    assert isinstance(result.errors["fatal"], Fatal)
    assert result.states["after"] is S.CANCELLED
    assert isinstance(caught, BaseExceptionGroup)
    assert {type(e) for e in caught.exceptions} == {KeyboardInterrupt, Fatal}


async def test_a_single_base_exception_is_raised_as_itself() -> None:
    def fatal() -> None:
        raise Fatal("alone")

    dag = DAG("one-fatal")
    dag.add(Task(id="fatal", fn=fatal))
    with pytest.raises(Fatal, match="alone"):
        await orchestra.run(dag)


class Hangs(TaskHooks):
    timeout = 0.2
    blocking = True

    def before_execute(self, ctx: TaskHookContext) -> None:
        time.sleep(30)


async def test_a_def_hook_past_its_timeout_is_a_hook_error_and_the_run_goes_on() -> None:
    dag = DAG("hang")
    dag.add(Task(id="t", fn=lambda: "ran"))
    dag.add(Task(id="u", fn=lambda t: t + "!", deps=["t"]))
    started = time.monotonic()
    with anyio.fail_after(10):
        result = await orchestra.run(dag, hooks=[Hangs()])
    assert result.ok
    assert result.outputs == {"t": "ran", "u": "ran!"}
    assert [e.moment for e in result.hook_errors] == ["before_execute", "before_execute"]
    assert "timed out after 0.2 s" in str(result.hook_errors[0])
    assert time.monotonic() - started < 5


def test_a_hung_def_hook_never_holds_the_process_open_at_exit(tmp_path: Path) -> None:
    script = tmp_path / "hang.py"
    script.write_text(
        textwrap.dedent(
            """
            import time
            import orchestra
            from orchestra import DAG, Task, TaskHooks

            class Hangs(TaskHooks):
                timeout = 0.2
                blocking = True
                def on_end(self, ctx, state):
                    time.sleep(1e6)

            dag = DAG("hang")
            dag.add(Task(id="t", fn=lambda: 1))
            result = orchestra.run_sync(dag, hooks=[Hangs()])
            print(result.ok, len(result.hook_errors))
            """
        )
    )
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "1"]
    assert time.monotonic() - started < 30  # not the hook's 1e6 s
