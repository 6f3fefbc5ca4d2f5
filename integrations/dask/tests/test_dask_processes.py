"""On one cluster of worker processes: workers that die, and data that stays there.

A worker killed in the middle of a task: the failure reaches on_failure, a Retry recovers,
and the tasks merely queued on that worker are not failed with it. A chain passing 50 MB
from task to task leaves the driver's memory alone.
"""

from __future__ import annotations

import os
import signal
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest
from distributed import Client, Event
from distributed.scheduler import KilledWorker
from orchestra_dask import DaskExecutor
from process_cluster import ProcessCluster

import orchestra
from orchestra import DAG, Retry, Task, TaskHookContext, TaskHooks, TaskState

# Under load a cluster of processes takes minutes to start or to bring a worker back.
pytestmark = [pytest.mark.anyio, pytest.mark.timeout(600)]


@pytest.fixture
def client(process_cluster: ProcessCluster) -> Client:
    """The cluster, its two workers up (a test before may have killed one)."""
    return process_cluster.up()


class RetryKilledWorkers(TaskHooks):
    def __init__(self, retry: bool = True) -> None:
        self.failures: list[tuple[str, int, BaseException]] = []
        self.retry = retry

    def on_failure(self, ctx: TaskHookContext, error: BaseException) -> Retry | None:
        self.failures.append((ctx.task.id, ctx.attempt, error))
        return Retry() if self.retry and isinstance(error, KilledWorker) else None


async def test_killed_worker_reaches_on_failure_and_retry_completes(
    client: Client, tmp_path: Path
) -> None:
    marker = tmp_path / "killed-pid"
    dag = DAG("fragile")

    @dag.task
    def prepare() -> int:
        return 20

    @dag.task(deps=[prepare])
    def fragile(prepare: int) -> tuple[int, int]:
        if not marker.exists():
            marker.write_text(str(os.getpid()))
            time.sleep(0.3)  # a death right at the start may be taken for a queued task
            os.kill(os.getpid(), signal.SIGKILL)
        return prepare + 1, os.getpid()

    @dag.task(deps=[fragile])
    def report(fragile: tuple[int, int]) -> int:
        return fragile[0] * 2

    hooks = RetryKilledWorkers()
    result = await orchestra.run(dag, executor=DaskExecutor(client, outputs="all"), hooks=[hooks])

    assert result.ok, result.errors
    assert result.states["report"] is TaskState.SUCCEEDED
    assert result.outputs["report"] == 42
    killed_pid = int(marker.read_text())
    assert result.outputs["fragile"][1] != killed_pid  # completed on a live worker
    [(tid, attempt, error)] = hooks.failures
    assert (tid, attempt) == ("fragile", 1)
    assert isinstance(error, KilledWorker)
    assert "died while this attempt's body was running" in "".join(error.__notes__)
    assert result.attempts == {"prepare": 1, "fragile": 2, "report": 1}


async def test_killed_worker_without_a_retry_fails_the_task(client: Client) -> None:
    dag = DAG("fragile-no-retry")

    @dag.task
    def doomed() -> None:
        time.sleep(0.3)
        os.kill(os.getpid(), signal.SIGKILL)

    # After the death: a task queued on the same worker at that moment would have died
    # with it (dask counts it as suspicious too).
    @dag.task(deps=[doomed], trigger="all_done")
    def fine(doomed: None) -> str:
        return "fine"

    result = await orchestra.run(dag, executor=DaskExecutor(client, outputs="all"))

    assert result.states == {"doomed": TaskState.FAILED, "fine": TaskState.SUCCEEDED}
    assert isinstance(result.errors["doomed"], KilledWorker)


async def test_one_worker_death_fails_only_the_task_that_was_running(client: Client) -> None:
    [victim] = sorted(client.scheduler_info()["workers"])[:1]
    tag = uuid.uuid4().hex
    dag = DAG("one-death")
    here = {"workers": [victim], "allow_other_workers": True}

    def die() -> None:
        Event(f"running-{tag}").set()
        Event(f"queued-{tag}").wait(120)  # the others are queued behind it by now
        os.kill(os.getpid(), signal.SIGKILL)

    dag.add(Task(id="killer", fn=die, metadata={"dask": {**here, "priority": 10}}))
    for n in range(4):  # one thread per worker: these wait in the victim's queue
        dag.add(Task(id=f"queued{n}", fn=lambda n=n: n, metadata={"dask": here}))

    async def queue_then_kill() -> None:
        await anyio.to_thread.run_sync(Event(f"running-{tag}", client=client).wait, 120)

        def queued_on_victim(dask_scheduler: Any) -> int:
            ws = dask_scheduler.workers.get(victim)
            return 0 if ws is None else len(ws.processing)

        deadline = anyio.current_time() + 120  # generous: a loaded machine is slow
        while (queued := client.run_on_scheduler(queued_on_victim)) != 5:
            assert anyio.current_time() < deadline, f"{queued} of 5 tasks on the victim"
            await anyio.sleep(0.01)
        Event(f"queued-{tag}", client=client).set()

    hooks = RetryKilledWorkers(retry=False)
    async with anyio.create_task_group() as tg:
        tg.start_soon(queue_then_kill)
        result = await orchestra.run(
            dag, executor=DaskExecutor(client, outputs="all"), hooks=[hooks]
        )

    assert result.states["killer"] is TaskState.FAILED
    [(tid, attempt, error)] = hooks.failures  # nobody else failed
    assert (tid, attempt) == ("killer", 1)
    assert isinstance(error, KilledWorker)
    assert victim in "".join(error.__notes__)
    for n in range(4):
        assert result.states[f"queued{n}"] is TaskState.SUCCEEDED
        assert result.outputs[f"queued{n}"] == n
        assert result.attempts[f"queued{n}"] == 1  # submitted again, not counted


async def test_a_chain_passing_50_mb_leaves_the_driver_memory_alone(client: Client) -> None:
    size = 50_000_000
    dag = DAG("big-chain")
    dag.add(Task(id="s0", fn=lambda: bytearray(size)))
    for n in range(1, 10):
        dag.add(Task(id=f"s{n}", fn=partial_grow(f"s{n - 1}"), deps=[f"s{n - 1}"]))
    dag.add(Task(id="digest", fn=lambda s9: (len(s9), s9[:3].hex()), deps=["s9"]))

    process = psutil.Process()
    before = process.memory_info().rss
    peak = before
    running = True

    def sample() -> None:
        nonlocal peak
        while running:
            peak = max(peak, process.memory_info().rss)
            threading.Event().wait(0.01)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        result = await orchestra.run(dag, executor=DaskExecutor(client))
    finally:
        running = False
        sampler.join()

    assert result.ok, result.errors
    assert result.outputs == {"digest": (size, "090909")}
    growth = (peak - before) / 2**20
    assert growth < 300, f"the driver grew by {growth:.0f} MiB"  # was +1.8 GiB


def partial_grow(upstream: str) -> Any:
    def grow(**kwargs: bytearray) -> bytearray:
        data = bytearray(kwargs[upstream])  # a new 50 MB buffer on the worker
        data[:3] = bytes((data[0] + 1,)) * 3
        return data

    grow.__name__ = f"grow_{upstream}"
    return grow


async def test_a_guarded_tool_in_a_body_is_guarded_in_the_worker_process(
    client: Client, tmp_path: Path
) -> None:
    """The registry reaches the worker process as its files and options, loaded there."""
    from orchestra.skills import load

    config = tmp_path / "orchestra.yaml"
    config.write_text(
        "hooks:\n  PreToolUse:\n    - matcher: Bash\n      hooks:\n        - type: command\n"
        "          command: \"grep -q 'rm -rf' && echo 'no rm -rf here' >&2 && exit 2 || exit 0\"\n"
    )
    registry = load(config, project_dir=tmp_path)

    @registry.guard("Bash")
    def bash(command: str) -> str:
        return f"ran {command}"

    def unsafe() -> tuple[int, str]:
        try:
            bash(command="rm -rf /")
        except orchestra.ToolDenied as exc:
            return os.getpid(), f"denied: {exc}"
        return os.getpid(), "ran"

    dag = DAG("guarded-elsewhere")
    dag.add(Task(id="unsafe", fn=unsafe))
    result = await orchestra.run(dag, executor=DaskExecutor(client))
    pid, said = result.outputs["unsafe"]
    assert pid != os.getpid()  # it ran in a worker process
    assert "no rm -rf here" in said
