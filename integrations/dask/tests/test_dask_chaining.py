"""Chained runs: dependents reach dask before their upstreams end, and the driver still decides."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import anyio.to_thread
import pytest
from distributed import Client, Event
from orchestra_dask import DaskExecutor

import orchestra
from orchestra import DAG, Replace, Skip, Task, TaskHookContext, TaskHooks, TaskState

pytestmark = pytest.mark.anyio

S = TaskState


def keys_on_scheduler(client: Client, prefix: str) -> list[str]:
    """The keys dask's scheduler holds whose task id starts with ``prefix``."""
    return sorted(
        client.run_on_scheduler(
            lambda dask_scheduler: [
                str(k) for k in dask_scheduler.tasks if str(k).startswith(prefix)
            ]
        )
    )


def wait_for_keys(client: Client, prefix: str, count: int) -> list[str]:
    """Poll the scheduler until it holds ``count`` keys starting with ``prefix`` (or 30 s)."""
    deadline = time.monotonic() + 30
    while True:
        keys = keys_on_scheduler(client, prefix)
        if len(keys) >= count or time.monotonic() > deadline:
            return keys
        time.sleep(0.02)


def gone(client: Client, prefix: str) -> list[str]:
    """Poll until the scheduler forgot every key starting with ``prefix`` (or 30 s): the
    client releases keys over a batched stream. The keys left, if any."""
    deadline = time.monotonic() + 30
    while (keys := keys_on_scheduler(client, prefix)) and time.monotonic() < deadline:
        time.sleep(0.02)
    return keys


def ran(log: Path) -> list[str]:
    return log.read_text().split() if log.exists() else []


def logged(log: Path, name: str, value: Any) -> Any:
    with log.open("a") as f:
        f.write(f"{name}\n")
    return value


async def run_in_thread(dag: DAG, client: Client, backend: str, **kwargs: Any) -> Any:
    def go() -> orchestra.RunResult:
        return orchestra.run_sync(
            dag, executor=DaskExecutor(client), max_concurrency=None, backend=backend, **kwargs
        )

    return await anyio.to_thread.run_sync(go)


async def test_dependents_reach_dask_while_their_upstream_runs(
    client: Client, anyio_backend: str, tmp_path: Path
) -> None:
    tag = uuid.uuid4().hex[:8]
    go = f"go-{tag}"
    log = tmp_path / "ran"

    def first() -> int:
        Event(go).wait(60)
        return logged(log, "first", 1)

    dag = DAG(f"chained-{tag}")
    dag.add(Task(id=f"a{tag}", fn=first))
    dag.add(
        Task(id=f"b{tag}", fn=lambda **up: logged(log, "b", sum(up.values()) + 1), deps=[f"a{tag}"])
    )
    dag.add(
        Task(id=f"c{tag}", fn=lambda **up: logged(log, "c", sum(up.values()) + 1), deps=[f"b{tag}"])
    )
    async with anyio.create_task_group() as tg:
        results: list[orchestra.RunResult] = []

        async def run() -> None:
            results.append(await run_in_thread(dag, client, anyio_backend))

        tg.start_soon(run)
        # While a's body waits, b and c are already on dask's scheduler: no driver round trip.
        keys = await anyio.to_thread.run_sync(wait_for_keys, client, f"c{tag}-", 1)
        assert ran(log) == []
        await anyio.to_thread.run_sync(Event(go, client=client).set)
    [result] = results
    assert keys
    assert keys[0].startswith(f"c{tag}-")
    assert result.ok, result.errors
    assert result.outputs == {f"c{tag}": 3}
    assert dict(result.attempts) == {f"a{tag}": 1, f"b{tag}": 1, f"c{tag}": 1}
    assert ran(log) == ["first", "b", "c"]
    assert await anyio.to_thread.run_sync(gone, client, f"b{tag}") == []


async def test_a_failed_upstream_runs_no_dependent_body(
    client: Client, anyio_backend: str, tmp_path: Path
) -> None:
    tag = uuid.uuid4().hex[:8]
    log = tmp_path / "ran"

    def boom() -> int:
        time.sleep(0.2)  # its dependents are submitted meanwhile
        raise ValueError("upstream broke")

    dag = DAG(f"chained-fail-{tag}")
    dag.add(Task(id=f"a{tag}", fn=boom))
    dag.add(Task(id=f"b{tag}", fn=lambda **up: logged(log, "b", 1), deps=[f"a{tag}"]))
    dag.add(Task(id=f"c{tag}", fn=lambda **up: logged(log, "c", 1), deps=[f"b{tag}"]))
    dag.add(Task(id=f"side{tag}", fn=lambda: logged(log, "side", 1)))
    result = await run_in_thread(dag, client, anyio_backend)
    assert result.states[f"a{tag}"] is S.FAILED
    assert isinstance(result.errors[f"a{tag}"], ValueError)
    assert result.states[f"b{tag}"] is S.UPSTREAM_FAILED
    assert result.states[f"c{tag}"] is S.UPSTREAM_FAILED
    assert result.attempts[f"b{tag}"] == 0
    assert result.attempts[f"c{tag}"] == 0
    assert f"b{tag}" not in result.errors  # an upstream's error is not the dependent's attempt
    assert ran(log) == ["side"]
    assert await anyio.to_thread.run_sync(gone, client, f"b{tag}") == []
    assert await anyio.to_thread.run_sync(gone, client, f"c{tag}") == []


async def test_a_retried_upstream_feeds_its_dependent_once(
    client: Client, anyio_backend: str, tmp_path: Path
) -> None:
    tag = uuid.uuid4().hex[:8]
    log = tmp_path / "ran"
    tries = tmp_path / "tries"

    def flaky() -> int:
        time.sleep(0.1)
        if len(ran(tries)) < 1:
            logged(tries, "try", None)
            raise ConnectionError("first attempt fails")
        return 20

    dag = DAG(f"chained-retry-{tag}")
    dag.add(Task(id=f"a{tag}", fn=flaky, retries=1))
    dag.add(
        Task(id=f"b{tag}", fn=lambda **up: logged(log, "b", sum(up.values()) + 1), deps=[f"a{tag}"])
    )
    result = await run_in_thread(dag, client, anyio_backend)
    assert result.ok, result.errors
    assert result.outputs == {f"b{tag}": 21}
    assert dict(result.attempts) == {f"a{tag}": 2, f"b{tag}": 1}
    assert ran(log) == ["b"]


class Recovers(TaskHooks):
    """Recovers the upstream's failure with a value of its own."""

    def on_failure(self, ctx: TaskHookContext, error: BaseException) -> Replace | None:
        return Replace(100) if ctx.task.id.startswith("a") else None


async def test_an_output_a_hook_gives_replaces_the_chained_inputs(
    client: Client, anyio_backend: str, tmp_path: Path
) -> None:
    tag = uuid.uuid4().hex[:8]
    log = tmp_path / "ran"

    def boom() -> int:
        time.sleep(0.1)
        raise ValueError("recovered by a hook")

    dag = DAG(f"chained-replace-{tag}")
    dag.add(Task(id=f"a{tag}", fn=boom))
    dag.add(
        Task(id=f"b{tag}", fn=lambda **up: logged(log, "b", sum(up.values()) + 1), deps=[f"a{tag}"])
    )
    result = await run_in_thread(dag, client, anyio_backend, hooks=[Recovers()])
    assert result.ok, result.errors
    assert result.states[f"a{tag}"] is S.SUCCEEDED
    assert result.outputs == {f"b{tag}": 101}
    assert ran(log) == ["b"]


class SkipsB(TaskHooks):
    """A ``before_execute`` hook: the driver decides before each body, so nothing chains."""

    def before_execute(self, ctx: TaskHookContext) -> Skip | None:
        return Skip("not this one") if ctx.task.id.startswith("b") else None


async def test_a_before_execute_hook_keeps_each_body_behind_its_decision(
    client: Client, anyio_backend: str, tmp_path: Path
) -> None:
    tag = uuid.uuid4().hex[:8]
    log = tmp_path / "ran"

    def first() -> int:
        time.sleep(0.2)
        return logged(log, "a", 1)

    dag = DAG(f"chained-hook-{tag}")
    dag.add(Task(id=f"a{tag}", fn=first))
    dag.add(Task(id=f"b{tag}", fn=lambda **up: logged(log, "b", 1), deps=[f"a{tag}"]))
    result = await run_in_thread(dag, client, anyio_backend, hooks=[SkipsB()])
    assert result.states[f"b{tag}"] is S.SKIPPED
    assert result.attempts[f"b{tag}"] == 1
    assert ran(log) == ["a"]


async def test_a_chained_task_with_bad_dask_options_fails_with_the_error(
    client: Client, anyio_backend: str
) -> None:
    tag = uuid.uuid4().hex[:8]
    dag = DAG(f"chained-bad-{tag}")
    dag.add(Task(id=f"a{tag}", fn=lambda: 1))
    dag.add(Task(id=f"b{tag}", fn=lambda **up: 2, deps=[f"a{tag}"], metadata={"dask": 5}))
    result = await run_in_thread(dag, client, anyio_backend)
    assert result.states[f"a{tag}"] is S.SUCCEEDED
    assert result.states[f"b{tag}"] is S.FAILED
    assert isinstance(result.errors[f"b{tag}"], TypeError)
    assert "metadata['dask'] must be a mapping" in str(result.errors[f"b{tag}"])
