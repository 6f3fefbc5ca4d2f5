"""DaskExecutor against real LocalClusters (threads and processes), on asyncio and trio."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import anyio.to_thread
import pytest
from distributed import Client, Event, LocalCluster, get_worker
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from orchestra_dask import DaskExecutor

import orchestra
from orchestra import DAG, Retry, Task, TaskHookContext, TaskHooks, TaskState

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module", params=["threads", "processes"])
def client(request: pytest.FixtureRequest) -> Iterator[Client]:
    processes = request.param == "processes"
    with (
        LocalCluster(
            n_workers=2,
            threads_per_worker=2,
            processes=processes,
            dashboard_address=":0",
        ) as cluster,
        Client(cluster) as client,
    ):
        yield client


class Recorder(TaskHooks):
    def __init__(self, retry_until: int = 0) -> None:
        self.events: list[tuple[str, str, int, Any]] = []
        self.retry_until = retry_until

    def after_execute(self, ctx: TaskHookContext, result: Any) -> None:
        self.events.append(("after", ctx.task.id, ctx.attempt, result))

    def on_failure(self, ctx: TaskHookContext, error: BaseException) -> Retry | None:
        self.events.append(("failure", ctx.task.id, ctx.attempt, error))
        return Retry() if ctx.attempt < self.retry_until else None


def keys_with_prefix(client: Client, prefix: str) -> list[str]:
    def on_scheduler(dask_scheduler: Any, prefix: str) -> list[str]:
        return [k for k in dask_scheduler.tasks if str(k).startswith(prefix)]

    return list(client.run_on_scheduler(on_scheduler, prefix=prefix))


async def eventually(check: Callable[[], bool]) -> None:
    """Wait until ``check()`` holds: the client talks to the scheduler over a batched stream."""
    for _ in range(3000):  # 30 s at most
        if check():
            return
        await anyio.sleep(0.01)
    raise AssertionError(f"still false after 30 s: {check}")


def cancel_events(client: Client) -> int:
    return sum(1 for _, msg in client.get_events(client.id) if msg.get("action") == "cancel")


async def test_outputs_and_upstream_kwargs_flow(client: Client) -> None:
    dag = DAG("flow")

    @dag.task
    def numbers() -> list[int]:
        return [1, 2, 3]

    @dag.task
    async def offset() -> int:
        await anyio.lowlevel.checkpoint()
        return 10

    @dag.task(deps=[numbers, offset])
    def total(numbers: list[int], offset: int) -> tuple[int, int]:
        return sum(numbers) + offset, os.getpid()

    @dag.task(deps=[total])
    async def where(total: tuple[int, int]) -> str:
        await anyio.lowlevel.checkpoint()
        return get_worker().address

    hooks = Recorder()
    result = await orchestra.run(dag, executor=DaskExecutor(client), hooks=[hooks])

    assert result.ok, result.errors
    assert result.outputs["numbers"] == [1, 2, 3]
    assert result.outputs["total"][0] == 16
    assert result.outputs["where"] in client.scheduler_info()["workers"]
    on_cluster = client.cluster.processes if client.cluster is not None else False
    assert (result.outputs["total"][1] != os.getpid()) is on_cluster
    assert sorted(e[1] for e in hooks.events) == ["numbers", "offset", "total", "where"]


async def test_exception_reaches_on_failure(client: Client) -> None:
    dag = DAG("boom")

    @dag.task
    def explode() -> None:
        raise LookupError("no such row")

    @dag.task(deps=[explode])
    def after(explode: None) -> None:
        pass

    hooks = Recorder()
    result = await orchestra.run(dag, executor=DaskExecutor(client), hooks=[hooks])

    assert not result.ok
    assert result.states == {"explode": TaskState.FAILED, "after": TaskState.UPSTREAM_FAILED}
    [(moment, tid, attempt, error)] = hooks.events
    assert (moment, tid, attempt) == ("failure", "explode", 1)
    assert isinstance(error, LookupError)
    assert str(error) == "no such row"
    assert result.errors["explode"] is error


async def test_retry_from_a_hook_resubmits(client: Client, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    dag = DAG("flaky")

    @dag.task
    def flaky() -> int:
        with runs.open("a") as f:
            f.write("x")
        count = len(runs.read_text())
        if count < 3:
            raise RuntimeError(f"attempt {count} fails")
        return count

    hooks = Recorder(retry_until=5)
    result = await orchestra.run(dag, executor=DaskExecutor(client), hooks=[hooks])

    assert result.ok, result.errors
    assert result.outputs["flaky"] == 3
    assert result.attempts["flaky"] == 3
    assert runs.read_text() == "xxx"  # the body really ran three times, no cached failure
    assert [(e[0], e[2], str(e[3])) for e in hooks.events] == [
        ("failure", 1, "attempt 1 fails"),
        ("failure", 2, "attempt 2 fails"),
        ("after", 3, "3"),
    ]
    await eventually(lambda: keys_with_prefix(client, "flaky-") == [])  # nothing left behind


async def test_task_retries_resubmit_too(client: Client, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    dag = DAG("retries")

    @dag.task(retries=1)
    def once_bad() -> str:
        first = not runs.exists()
        runs.touch()
        if first:
            raise RuntimeError("first time")
        return "ok"

    result = await orchestra.run(dag, executor=DaskExecutor(client))
    assert result.ok, result.errors
    assert result.attempts["once_bad"] == 2


def add_blocking_task(dag: DAG, name: str, **options: Any) -> tuple[str, str, str]:
    """Add a task that sets the ``started`` dask Event, then waits for ``release``."""
    tag = uuid.uuid4().hex
    task_id, started, release = f"{name}_{tag}", f"started-{tag}", f"release-{tag}"

    def block() -> str:
        Event(started).set()
        Event(release).wait(60)
        return "too late"

    dag.add(Task(id=task_id, fn=block, **options))
    return task_id, started, release


async def test_fail_fast_cancels_running_futures(client: Client) -> None:
    dag = DAG("fail-fast")
    slow, started, release = add_blocking_task(dag, "slow")

    @dag.task
    def bad() -> None:
        Event(started).wait(60)
        raise ValueError("bad")

    before = cancel_events(client)
    try:
        result = await orchestra.run(dag, executor=DaskExecutor(client), fail_fast=True)
    finally:
        Event(release, client=client).set()

    assert result.states == {slow: TaskState.CANCELLED, "bad": TaskState.FAILED}
    await eventually(lambda: cancel_events(client) == before + 1)
    await eventually(lambda: keys_with_prefix(client, f"{slow}-") == [])


async def test_outer_cancel_cancels_the_future(client: Client) -> None:
    dag = DAG("outer-cancel")
    wait, started, release = add_blocking_task(dag, "wait")
    before = cancel_events(client)
    outcome: list[orchestra.RunResult] = []
    try:
        async with anyio.create_task_group() as tg:

            async def run() -> None:
                outcome.append(await orchestra.run(dag, executor=DaskExecutor(client)))

            tg.start_soon(run)
            await anyio.to_thread.run_sync(Event(started, client=client).wait, 60)
            tg.cancel_scope.cancel()
    finally:
        Event(release, client=client).set()

    assert outcome == []  # the run was cancelled, not finished
    await eventually(lambda: cancel_events(client) == before + 1)
    await eventually(lambda: keys_with_prefix(client, f"{wait}-") == [])


async def test_task_timeout_cancels_the_future(client: Client) -> None:
    dag = DAG("timeout")
    stuck, _, release = add_blocking_task(dag, "stuck", timeout=0.2)
    before = cancel_events(client)
    try:
        result = await orchestra.run(dag, executor=DaskExecutor(client))
    finally:
        Event(release, client=client).set()

    assert result.states[stuck] is TaskState.FAILED
    assert isinstance(result.errors[stuck], TimeoutError)
    await eventually(lambda: cancel_events(client) == before + 1)
    await eventually(lambda: keys_with_prefix(client, f"{stuck}-") == [])


async def test_trace_context_reaches_the_worker(client: Client) -> None:
    dag = DAG("traced")

    @dag.task
    def remote_context() -> tuple[int, bool, bool]:
        ctx = trace.get_current_span().get_span_context()
        return ctx.trace_id, ctx.is_valid, ctx.is_remote

    @dag.task
    async def remote_context_async() -> tuple[int, bool, bool]:
        ctx = trace.get_current_span().get_span_context()
        return ctx.trace_id, ctx.is_valid, ctx.is_remote

    tracer = TracerProvider().get_tracer("test")
    with tracer.start_as_current_span("driver") as span:
        result = await orchestra.run(dag, executor=DaskExecutor(client))
    trace_id = span.get_span_context().trace_id

    assert result.ok, result.errors
    assert result.outputs["remote_context"] == (trace_id, True, True)
    assert result.outputs["remote_context_async"] == (trace_id, True, True)


async def test_no_trace_context_without_a_span(client: Client) -> None:
    dag = DAG("untraced")

    @dag.task
    def remote_context() -> bool:
        return trace.get_current_span().get_span_context().is_valid

    result = await orchestra.run(dag, executor=DaskExecutor(client))
    assert result.outputs == {"remote_context": False}


async def test_a_worker_tracer_provider_continues_the_trace(client: Client) -> None:
    dag = DAG("worker-spans")

    @dag.task
    def traced_body() -> tuple[int, int | None]:
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
            InMemorySpanExporter,
        )

        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        with provider.get_tracer("worker").start_as_current_span("work"):
            pass
        [span] = exporter.get_finished_spans()
        assert span.context is not None
        return span.context.trace_id, span.parent.span_id if span.parent else None

    tracer = TracerProvider().get_tracer("test")
    with tracer.start_as_current_span("driver") as driver:
        result = await orchestra.run(dag, executor=DaskExecutor(client))

    assert result.ok, result.errors
    trace_id, parent = result.outputs["traced_body"]
    assert trace_id == driver.get_span_context().trace_id
    assert parent is not None


async def test_submit_options_from_metadata(client: Client) -> None:
    worker = sorted(client.scheduler_info()["workers"])[-1]
    dag = DAG("placed")

    @dag.task(metadata={"dask": {"workers": [worker], "allow_other_workers": False}})
    def placed() -> str:
        return str(get_worker().address)

    @dag.task(metadata={"dask": {"gpus": 1}})
    def refused() -> None:
        pass

    hooks = Recorder()
    result = await orchestra.run(dag, executor=DaskExecutor(client), hooks=[hooks])

    assert result.outputs == {"placed": worker}
    assert result.states["refused"] is TaskState.FAILED
    assert isinstance(result.errors["refused"], ValueError)
    assert "gpus" in str(result.errors["refused"])


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_asynchronous_client_on_the_driver_loop(client: Client) -> None:
    address = client.scheduler.address
    dag = DAG("async-client")

    @dag.task
    def one() -> int:
        return 1

    @dag.task(deps=[one])
    async def two(one: int) -> int:
        return one + 1

    @dag.task(deps=[one])
    def broken(one: int) -> None:
        raise KeyError("missing")

    async with Client(address, asynchronous=True) as aclient:
        result = await orchestra.run(dag, executor=DaskExecutor(aclient))
        assert result.outputs == {"one": 1, "two": 2}
        assert isinstance(result.errors["broken"], KeyError)

        slow_dag = DAG("async-client-cancel")
        _, started, release = add_blocking_task(slow_dag, "slow")

        async def cancels() -> int:
            events = await aclient.get_events(aclient.id)
            return sum(1 for _, msg in events if msg.get("action") == "cancel")

        before = await cancels()
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(lambda: orchestra.run(slow_dag, executor=DaskExecutor(aclient)))
                await Event(started, client=aclient).wait()
                tg.cancel_scope.cancel()
        finally:
            await Event(release, client=aclient).set()
        for _ in range(3000):  # the cancel travels on the client's batched stream
            if await cancels() == before + 1:
                break
            await anyio.sleep(0.01)
        else:
            raise AssertionError("the dask future was not cancelled")


def test_async_backend_is_checked(client: Client) -> None:
    with pytest.raises(ValueError, match="async_backend"):
        DaskExecutor(client, async_backend="curio")
    assert DaskExecutor(client, async_backend="trio").async_backend == "trio"


def test_public_names() -> None:
    import orchestra_dask

    assert orchestra_dask.__all__ == ["SUBMIT_OPTIONS", "DaskExecutor"]
    assert orchestra_dask.DaskExecutor.__module__ == "orchestra_dask"
    assert orchestra_dask.__doc__ is not None
    assert "DaskExecutor(client)" in orchestra_dask.__doc__
