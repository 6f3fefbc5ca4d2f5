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
import dask
import pytest
from distributed import Client, Event, LocalCluster, get_worker
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from orchestra_dask import DaskExecutor, RemoteOutput

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
            memory_limit="1GiB",
            resources={"slot": 100},
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
    result = await orchestra.run(dag, executor=DaskExecutor(client, outputs="all"), hooks=[hooks])

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


async def test_a_queued_task_is_not_timed_out_by_its_time_in_the_queue(client: Client) -> None:
    dag = DAG("queued")
    slots = sum(client.nthreads().values())
    tag = uuid.uuid4().hex

    def occupy(n: int) -> Callable[[], str]:
        def block() -> str:
            Event(f"started-{tag}-{n}").set()
            Event(f"release-{tag}").wait(60)
            return "released"

        return block

    for n in range(slots):  # every worker thread busy, first in line
        dag.add(Task(id=f"busy{n}", fn=occupy(n), metadata={"dask": {"priority": 10}}))

    @dag.task(timeout=0.5)
    def quick() -> str:
        return "ran within its timeout"

    async def release_later() -> None:
        for n in range(slots):
            await anyio.to_thread.run_sync(Event(f"started-{tag}-{n}", client=client).wait, 60)
        await anyio.sleep(1.0)  # `quick` waits twice its timeout in dask's queue
        Event(f"release-{tag}", client=client).set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(release_later)
        result = await orchestra.run(dag, executor=DaskExecutor(client, outputs="all"))

    assert result.ok, result.errors
    assert result.outputs["quick"] == "ran within its timeout"
    assert result.durations["quick"] > 0.5  # it did wait longer than its timeout


async def test_a_sync_body_past_its_timeout_fails_the_attempt(client: Client) -> None:
    dag = DAG("timeout")
    stuck, _, release = add_blocking_task(dag, "stuck", timeout=0.2)
    try:
        result = await orchestra.run(dag, executor=DaskExecutor(client))
    finally:
        Event(release, client=client).set()

    assert result.states[stuck] is TaskState.FAILED
    error = result.errors[stuck]
    assert isinstance(error, TimeoutError)
    assert "past its timeout of 0.2 s" in str(error)
    await eventually(lambda: keys_with_prefix(client, f"{stuck}-") == [])


async def test_an_async_body_past_its_timeout_is_cancelled_on_the_worker(client: Client) -> None:
    dag = DAG("async-timeout")
    cancelled = f"cancelled-{uuid.uuid4().hex}"

    @dag.task(timeout=0.2, retries=1)
    async def sleeper() -> None:
        try:
            await anyio.sleep(30)
        except anyio.get_cancelled_exc_class():
            Event(cancelled).set()
            raise

    result = await orchestra.run(dag, executor=DaskExecutor(client))

    assert result.states["sleeper"] is TaskState.FAILED
    assert isinstance(result.errors["sleeper"], TimeoutError)
    assert result.attempts["sleeper"] == 2  # a timeout is a failure like any other
    assert await anyio.to_thread.run_sync(Event(cancelled, client=client).wait, 10)


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


def what_dask_got() -> dict[str, Any]:
    """Inside a body: the options dask recorded for the task running it."""
    worker = get_worker()
    state = worker.state.tasks[worker.get_current_task()]
    return {
        "worker": worker.address,
        "priority": state.priority[0] if state.priority else None,
        "resources": state.resource_restrictions,
        "annotations": state.annotations,
    }


async def test_dask_options_pass_through(client: Client) -> None:
    worker = sorted(client.scheduler_info()["workers"])[-1]
    dag = DAG("placed")
    everywhere = {"resources": {"slot": 1}, "annotations": {"team": "data"}}
    dag.add(
        Task(
            id="placed",
            fn=what_dask_got,
            metadata={
                "dask": {
                    "workers": [worker],
                    "allow_other_workers": False,
                    "priority": 7,
                    "annotations": {"stage": "load"},
                }
            },
        )
    )
    dag.add(Task(id="plain", fn=what_dask_got))

    with dask.annotate(owner="driver"):  # the driver's own annotations go along too
        result = await orchestra.run(
            dag, executor=DaskExecutor(client, options=everywhere, outputs="all")
        )

    assert result.ok, result.errors
    placed, plain = result.outputs["placed"], result.outputs["plain"]
    assert placed["worker"] == worker
    assert placed["priority"] == -7
    assert placed["resources"] == {"slot": 1}
    assert placed["annotations"]["stage"] == "load"  # the task's, over the executor's
    assert plain["resources"] == {"slot": 1}
    assert plain["annotations"]["team"] == "data"
    assert plain["annotations"]["owner"] == "driver"


async def test_dask_retries_and_unknown_options_are_refused(client: Client) -> None:
    with pytest.raises(ValueError, match="retries= is refused: orchestra decides retries"):
        DaskExecutor(client, options={"retries": 2})
    with pytest.raises(ValueError, match="unknown dask option"):
        DaskExecutor(client, options={"gpus": 1})
    dag = DAG("refused")

    @dag.task(metadata={"dask": {"retries": 3}})
    def dask_retries() -> None:
        pass

    @dag.task(metadata={"dask": {"annotations": {"retries": 3}}})
    def annotated_retries() -> None:
        pass

    @dag.task(metadata={"dask": {"gpus": 1}})
    def unknown() -> None:
        pass

    @dag.task(metadata={"dask": ["workers"]})
    def not_a_mapping() -> None:
        pass

    result = await orchestra.run(dag, executor=DaskExecutor(client))

    assert result.count(TaskState.FAILED) == 4
    assert "orchestra decides retries" in str(result.errors["dask_retries"])
    assert "orchestra decides retries" in str(result.errors["annotated_retries"])
    assert "unknown dask option(s) gpus" in str(result.errors["unknown"])
    assert isinstance(result.errors["not_a_mapping"], TypeError)


def test_bad_arguments_are_refused(client: Client) -> None:
    with pytest.raises(ValueError, match="outputs must be 'leaves', 'all'"):
        DaskExecutor(client, outputs="some")
    with pytest.raises(ValueError, match="requeues must be an int >= 0"):
        DaskExecutor(client, requeues=-1)


class SeesHandles(TaskHooks):
    needs_outputs = False

    def __init__(self) -> None:
        self.seen: dict[str, Any] = {}

    def after_execute(self, ctx: TaskHookContext, result: Any) -> None:
        self.seen[ctx.task.id] = result


async def test_outputs_stay_on_the_cluster_and_are_released(client: Client) -> None:
    dag = DAG(f"remote-{uuid.uuid4().hex[:8]}")

    @dag.task
    def source() -> list[int]:
        return list(range(1000))

    @dag.task(deps=[source])
    def evens(source: list[int]) -> list[int]:
        return source[::2]

    @dag.task(deps=[source, evens])
    def summary(source: list[int], evens: list[int]) -> tuple[int, int]:
        return len(source), len(evens)

    hooks = SeesHandles()
    result = await orchestra.run(dag, executor=DaskExecutor(client), hooks=[hooks])

    assert result.outputs == {"summary": (1000, 500)}  # leaves only, fetched at the end
    assert all(isinstance(v, RemoteOutput) for v in hooks.seen.values())
    assert hooks.seen["source"].task_id == "source"
    assert hooks.seen["source"].key.startswith("source-")
    assert "RemoteOutput task='source'" in repr(hooks.seen["source"])
    del hooks
    await eventually(lambda: keys_with_prefix(client, "source-") == [])
    await eventually(lambda: keys_with_prefix(client, "evens-") == [])


async def test_a_scattered_dataset_used_by_20_tasks(client: Client) -> None:
    client.wait_for_workers(2, timeout=60)
    # hash=False: a key of its own. With dask's content hash the asyncio and trio runs of
    # this test scatter the same key on the shared cluster, and the first run's release
    # of it can race the second run's scatter ("Could not find data").
    [dataset] = client.scatter([list(range(20_000))], broadcast=True, hash=False)
    dag = DAG("scattered")

    def part(n: int) -> Callable[[], int]:
        def body() -> int:
            return sum(dataset.result()[n::20])  # closes over the scattered future

        return body

    for n in range(20):
        dag.add(Task(id=f"part{n}", fn=part(n)))

    @dag.task(deps=[f"part{n}" for n in range(20)])
    def total(**parts: int) -> int:
        return sum(parts.values())

    result = await orchestra.run(dag, executor=DaskExecutor(client))

    assert result.ok, result.errors
    assert result.outputs == {"total": sum(range(20_000))}


SCRIPT = """
def part(n):
    return lambda: sum(table.result()[n::4])
"""


async def test_a_scattered_future_a_script_reads_as_a_global(client: Client) -> None:
    # docs/integrations/dask.md's block: a script's top-level `table` is a global of its
    # lambdas, not a closure; cloudpickle sends such a body by value, with the future.
    client.wait_for_workers(2, timeout=60)
    [table] = client.scatter([list(range(1000))], broadcast=True, hash=False)
    script: dict[str, object] = {"__name__": "a_script", "table": table}
    exec(SCRIPT, script)  # a module nobody can import: its functions travel by value
    dag = DAG("scattered-global")
    for n in range(4):
        dag.add(Task(id=f"part{n}", fn=script["part"](n)))  # type: ignore[operator]

    result = await orchestra.run(dag, executor=DaskExecutor(client))

    assert result.ok, result.errors
    assert sum(result.outputs.values()) == 499500


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
        result = await orchestra.run(dag, executor=DaskExecutor(aclient, outputs="all"))
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

    assert orchestra_dask.__all__ == ["SUBMIT_OPTIONS", "DaskExecutor", "RemoteOutput"]
    assert orchestra_dask.DaskExecutor.__module__ == "orchestra_dask"
    assert orchestra_dask.RemoteOutput.__module__ == "orchestra_dask"
    assert orchestra_dask.__doc__ is not None
    assert "DaskExecutor(client)" in orchestra_dask.__doc__
