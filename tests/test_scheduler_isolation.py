"""Bodies isolated like tasks, a fair event loop, fail_fast that keeps every failure."""

from __future__ import annotations

import contextvars
import decimal
import gc
import threading
import time
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

import anyio
import anyio.from_thread
import pytest

import orchestra
from orchestra import DAG, Task, TaskHooks
from orchestra import TaskState as S

pytestmark = pytest.mark.anyio

seen: contextvars.ContextVar[str] = contextvars.ContextVar("seen", default="unset")


def _dag_of(n: int, body: Any, **options: Any) -> DAG:
    dag = DAG("iso")
    for i in range(n):
        dag.add(Task(id=f"t{i}", fn=body, **options))
    return dag


@pytest.mark.parametrize("kind", ["async", "inline", "thread"])
async def test_a_context_variable_set_by_one_body_is_never_seen_by_another(kind: str) -> None:
    saw: list[str] = []
    token = seen.set("caller")  # bodies start from the run's context: they see this
    try:
        if kind == "async":

            async def body() -> None:
                saw.append(seen.get())
                seen.set(f"body {len(saw)}")
                await anyio.lowlevel.checkpoint()

            dag = _dag_of(200, body)
        else:

            def sync_body() -> None:
                saw.append(seen.get())
                seen.set(f"body {len(saw)}")

            dag = _dag_of(200, sync_body, inline=kind == "inline")
        result = await orchestra.run(dag, max_concurrency=4)
        assert result.ok
        assert seen.get() == "caller"  # nor does the caller see the bodies' values
    finally:
        seen.reset(token)
    assert saw == ["caller"] * 200


async def test_hooks_that_set_context_variables_do_not_leak_either() -> None:
    saw: list[str] = []

    class Marks(TaskHooks):
        def before_execute(self, ctx: orchestra.TaskHookContext) -> None:
            saw.append(seen.get())
            seen.set(ctx.task.id)

    async def body() -> None:
        return None

    result = await orchestra.run(_dag_of(50, body), hooks=[Marks()], max_concurrency=2)
    assert result.ok
    assert saw == ["unset"] * 50


def _decimal_run(backend: str) -> dict[str, Any]:
    async def narrow() -> str:
        decimal.getcontext().prec = 3
        await anyio.lowlevel.checkpoint()
        return str(decimal.Decimal(1) / decimal.Decimal(3))

    async def wide() -> str:
        await anyio.lowlevel.checkpoint()
        return str(decimal.Decimal(1) / decimal.Decimal(3))

    dag = DAG("decimal")
    for i in range(20):  # narrow and wide bodies interleaved on 2 workers
        dag.add(Task(id=f"n{i}", fn=narrow))
        dag.add(Task(id=f"w{i}", fn=wide))
    return dict(orchestra.run_sync(dag, max_concurrency=2, backend=backend).outputs)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_decimal_context_set_by_one_body_does_not_change_another(backend: str) -> None:
    # In a fresh context (a new thread's), as a fresh program has: no decimal context yet.
    outputs = contextvars.Context().run(_decimal_run, backend)
    assert {outputs[f"n{i}"] for i in range(20)} == {"0.333"}
    assert {outputs[f"w{i}"] for i in range(20)} == {"0." + "3" * 28}


async def test_bodies_that_change_their_context_keep_cancel_scopes_and_timeouts() -> None:
    # A body that sets a variable makes its worker hand over to a new one: the body must
    # still start and finish in one task (cancel scopes and timeouts bind to it).
    async def scoped(i: int) -> str:
        seen.set(f"t{i}")
        with anyio.move_on_after(0.001) as scope:
            await anyio.sleep_forever()
        with anyio.fail_after(5):
            await anyio.lowlevel.checkpoint()
        return f"{seen.get()} {scope.cancelled_caught}"

    dag = DAG("scopes")
    for i in range(30):
        dag.add(Task(id=f"t{i}", fn=partial(scoped, i)))
    result = await orchestra.run(dag, max_concurrency=3)
    assert result.ok, result.errors
    assert result.outputs == {f"t{i}": f"t{i} True" for i in range(30)}


async def test_a_run_whose_last_body_changes_its_context_ends() -> None:
    # The other workers wait idle by then: the worker that hands over wakes them to end.
    async def first() -> None:
        await anyio.lowlevel.checkpoint()  # meanwhile the other workers find nothing to do

    async def last() -> str:
        seen.set("last")
        return "done"

    dag = DAG("last")
    dag.add(Task(id="first", fn=first))
    dag.add(Task(id="last", fn=last, deps=["first"]))
    with anyio.fail_after(10):  # a hang guard, far above the run's few milliseconds
        result = await orchestra.run(dag, max_concurrency=4)
    assert result.outputs == {"first": None, "last": "done"}
    assert seen.get() == "unset"


async def test_a_timed_out_body_that_changed_its_context_ends_failed() -> None:
    async def slow() -> None:
        seen.set("slow")
        await anyio.sleep_forever()

    dag = DAG("timeout")
    dag.add(Task(id="slow", fn=slow, timeout=0.01))
    dag.add(Task(id="after", fn=lambda: seen.get(), inline=True))
    result = await orchestra.run(dag, max_concurrency=1)
    assert result.states == {"slow": S.FAILED, "after": S.SUCCEEDED}
    assert isinstance(result.errors["slow"], TimeoutError)
    assert result.outputs["after"] == "unset"


async def test_sync_bodies_in_threads_reach_the_loop_with_anyio_from_thread() -> None:
    async def on_loop(x: int) -> int:
        await anyio.lowlevel.checkpoint()
        return x * 2

    def body(i: int) -> tuple[int, bool]:
        return anyio.from_thread.run(on_loop, i), threading.current_thread().name != "MainThread"

    dag = DAG("threads")
    for i in range(20):
        dag.add(Task(id=f"t{i}", fn=partial(body, i)))
    result = await orchestra.run(dag, max_concurrency=4)
    assert result.ok, result.errors
    assert result.outputs == {f"t{i}": (i * 2, True) for i in range(20)}


async def test_sync_body_errors_and_cancellation_in_the_thread_pool() -> None:
    release = threading.Event()

    def boom() -> None:
        raise KeyError("from a thread")

    def stuck() -> str:
        release.wait(10)  # abandoned when the run is cancelled; freed below
        return "late"

    dag = DAG("pool")
    dag.add(Task(id="boom", fn=boom))
    dag.add(Task(id="stuck", fn=stuck, timeout=0.05))
    try:
        result = await orchestra.run(dag)
    finally:
        release.set()
    assert result.states == {"boom": S.FAILED, "stuck": S.FAILED}
    assert isinstance(result.errors["boom"], KeyError)
    assert isinstance(result.errors["stuck"], TimeoutError)


# -- fairness: bounds 4x the bench's targets (25 ms), for a loaded 2-core machine ----------

BOUND = 4 * 0.025


async def _machine_stall() -> float:
    """The largest gap a 10 ms heartbeat sees with nothing else running (0.3 s).

    On a machine shared with other work the OS alone can stall the process for longer
    than ``BOUND``; the fairness bounds below add twice this, so they measure the
    scheduler, not the neighbours. On a quiet machine it is about 10 ms.

    It first runs a full garbage collection: in a long test session the heap holds
    millions of objects, and a full collection that the test's own allocations happen
    to trigger stops the whole interpreter for 0.1-0.5 s (measured: 159 ms over 3.2M
    objects), a pause no scheduler can slice. Collected now, the next one is far off.
    """
    gc.collect()
    last = time.perf_counter()
    worst = 0.0
    for _ in range(30):
        await anyio.sleep(0.01)
        now = time.perf_counter()
        worst = max(worst, now - last)
        last = now
    return worst


async def _cpu_50us() -> None:
    end = time.perf_counter() + 50e-6
    while time.perf_counter() < end:
        pass


TRIES = 5
"""Tries of each fairness test: a neighbour's burst can stall any one of them past the
bound; a scheduler that does not slice its work misses it on every try (a 64 x 64 batch
of these bodies holds the loop for 0.2 s)."""


async def _heartbeat_gap() -> float:
    """The largest gap of a 10 ms heartbeat beside 6,000 CPU-bound bodies."""
    dag = _dag_of(6_000, _cpu_50us)  # 0.3 s of bodies: one 64 x 64 batch would be 0.2 s
    gaps: list[float] = []
    running = True

    async def heartbeat() -> None:
        last = time.perf_counter()
        while running:
            await anyio.sleep(0.01)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    async with anyio.create_task_group() as tg:
        tg.start_soon(heartbeat)
        await anyio.sleep(0.02)
        result = await orchestra.run(dag, max_concurrency=64)
        running = False
    assert result.ok
    assert len(gaps) >= 3
    return max(gaps)


async def _within_bound(measure: Callable[[], Awaitable[float]]) -> list[str]:
    """Up to ``TRIES`` measures, stopping at the first within its bound; [] if one was.

    Each try's bound adds the machine's stall measured just before and just after it,
    the larger: a neighbour's burst that starts during the try shows in the second.
    """
    missed = []
    for _ in range(TRIES):
        before = await _machine_stall()
        value = await measure()
        bound = BOUND + 2 * max(before, await _machine_stall())
        if value < bound:
            return []
        missed.append(f"{value * 1e3:.0f} ms (bound {bound * 1e3:.0f})")
    return missed


async def test_a_heartbeat_beside_cpu_bound_bodies_keeps_beating() -> None:
    missed = await _within_bound(_heartbeat_gap)
    assert not missed, f"largest heartbeat gaps {', '.join(missed)}"


async def _timeout_lateness() -> float:
    """How late a 50 ms task timeout fires among 6,000 CPU-bound bodies."""
    fired: list[float] = []

    async def waits() -> None:
        start = time.perf_counter()
        try:
            await anyio.sleep_forever()
        finally:
            fired.append(time.perf_counter() - start)

    dag = DAG("late")
    dag.add(Task(id="timeout", fn=waits, timeout=0.05))
    for i in range(6_000):
        dag.add(Task(id=f"cpu{i}", fn=_cpu_50us))
    result = await orchestra.run(dag, max_concurrency=64)
    assert result.states["timeout"] is S.FAILED
    return fired[0] - 0.05


async def test_a_task_timeout_fires_on_time_among_cpu_bound_bodies() -> None:
    missed = await _within_bound(_timeout_lateness)
    assert not missed, f"fired late by {', '.join(missed)}"


# -- fail_fast keeps every real failure ------------------------------------------------


async def test_fail_fast_two_simultaneous_failures_with_an_async_on_failure_hook() -> None:
    both_failed = anyio.Event()
    b_in_hook = anyio.Event()
    failing: list[str] = []

    class Report(TaskHooks):
        async def on_failure(self, ctx: orchestra.TaskHookContext, error: BaseException) -> None:
            if ctx.task.id == "b":
                b_in_hook.set()
                await anyio.sleep_forever()  # still reporting when "a" stops the run
            await b_in_hook.wait()

    async def fails(name: str) -> None:
        failing.append(name)
        if len(failing) == 2:
            both_failed.set()
        await both_failed.wait()
        raise ValueError(name)

    async def forever() -> None:
        await anyio.sleep_forever()

    dag = DAG("ff")
    dag.add(Task(id="a", fn=partial(fails, "a")))
    dag.add(Task(id="b", fn=partial(fails, "b")))
    dag.add(Task(id="c", fn=forever))
    with anyio.fail_after(5):
        result = await orchestra.run(dag, hooks=[Report()], fail_fast=True)
    assert result.states == {"a": S.FAILED, "b": S.FAILED, "c": S.CANCELLED}
    assert [str(result.errors[t]) for t in ("a", "b")] == ["a", "b"]
    assert not result.ok


class Fatal(BaseException):
    pass


async def test_two_fatal_errors_both_kept_and_raised_together() -> None:
    both = anyio.Event()
    arrived: list[str] = []
    kept: dict[str, BaseException] = {}
    results: list[orchestra.RunResult] = []

    class Keep(TaskHooks):
        async def on_failure(self, ctx: orchestra.TaskHookContext, error: BaseException) -> None:
            kept[ctx.task.id] = error
            if ctx.task.id == "b":
                await anyio.sleep_forever()  # cancelled by a's fatal error

        def after_run(self, ctx: orchestra.RunContext, result: orchestra.RunResult) -> None:
            results.append(result)

    async def fatal(name: str) -> None:
        arrived.append(name)
        if len(arrived) == 2:
            both.set()
        await both.wait()
        raise Fatal(name)

    dag = DAG("fatal")
    dag.add(Task(id="b", fn=partial(fatal, "b")))
    dag.add(Task(id="a", fn=partial(fatal, "a")))
    with anyio.fail_after(5), pytest.raises(BaseExceptionGroup) as info:
        await orchestra.run(dag, hooks=[Keep()])
    assert set(kept) == {"a", "b"}
    assert sorted(str(e) for e in info.value.exceptions) == ["a", "b"]
    [result] = results  # each task FAILED with its own error, as after_run saw it
    assert dict(result.states) == {"a": S.FAILED, "b": S.FAILED}
    assert {tid: str(e) for tid, e in result.errors.items()} == {"a": "a", "b": "b"}
