"""DAG events benchmark: what ``registry.as_task_hooks()`` costs a run that has no DAG event.

Zero cost when unused: a registry whose hooks are all on other events (``PreToolUse``,
``SessionStart``: none of ``RunStart``, ``AttemptStart``, ``AttemptEnd``,
``AttemptRetry``, ``EdgeSelected``, ``RunEnd``, ``TaskCreated``, ``TaskCompleted``)
gives a ``TaskHooks`` that overrides no moment, so the scheduler pays nothing per task.
Measured on 10,000 no-op async tasks (``wide``: independent tasks and one sink), on both
anyio backends: the run with ``hooks=[registry.as_task_hooks()]`` against the same run
with ``hooks=[]``, interleaved rounds in one process, the ratio's median and min-max, in
CPU time of this process (the bodies are async no-ops on the loop's thread: no other
thread works for the run), which other processes on a shared machine disturb far less
than wall time. Target: the median ratio at most 1.05.

For scale, three more rows: no hooks against no hooks (the noise of this machine), a
Python ``async def before_execute`` that answers None, and a registry with one
``AttemptStart`` hook whose matcher matches no task (the adapter builds each attempt's
payload, the registry finds no hook to run).

Run: ``python bench/dag_events.py [--quick]``.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio

import orchestra
from orchestra import DAG, Task, TaskHookContext, TaskHooks
from orchestra.skills import HookRegistry, load

QUICK = "--quick" in sys.argv
ROUNDS = 7 if QUICK else 21
RUNS = 10  # runs per sample: a 10,000-task run takes ~10-20 ms, too short to time alone
N = 2_000 if QUICK else 10_000
TARGET = 1.05

OTHER_EVENTS = """
hooks:
  PreToolUse:
    - matcher: Bash
      hooks: [{type: command, command: 'true'}]
  SessionStart:
    - hooks: [{type: prompt, prompt: hello}]
"""
UNMATCHED_START = """
hooks:
  AttemptStart:
    - matcher: no-such-task
      hooks: [{type: command, command: 'true'}]
"""


async def noop() -> None:
    return None


class Listening(TaskHooks):
    """A Python hook at every attempt's start that has no opinion."""

    async def before_execute(self, ctx: TaskHookContext) -> None:
        return None


def wide(n: int) -> DAG:
    dag = DAG("wide")
    for i in range(n):
        dag.add(Task(id=f"t{i}", fn=noop))
    dag.add(Task(id="sink", fn=noop, deps=[f"t{i}" for i in range(0, n, max(1, n // 100))]))
    return dag


def registry(folder: Path, text: str, name: str) -> HookRegistry:
    path = folder / f"{name}.yaml"
    path.write_text(text)
    return load(path, project_dir=folder)


def timed_run(backend: str, dag: DAG, hooks: list[object]) -> float:
    """CPU seconds ``RUNS`` runs of ``dag`` take, one after the other, per run."""

    async def runs() -> None:
        for _ in range(RUNS):
            result = await orchestra.run(dag, hooks=hooks)
            assert result.ok

    start = time.process_time()
    anyio.run(runs, backend=backend)
    return (time.process_time() - start) / RUNS


def compare(backend: str, dag: DAG, label: str, hooks: list[object]) -> float:
    """Interleaved rounds of a plain run and a run with ``hooks``; prints the ratio row."""
    timed_run(backend, dag, [])  # warm up both
    timed_run(backend, dag, hooks)
    ratios: list[float] = []
    plain: list[float] = []
    for i in range(ROUNDS):
        if i % 2:
            with_hooks = timed_run(backend, dag, hooks)
            without = timed_run(backend, dag, [])
        else:
            without = timed_run(backend, dag, [])
            with_hooks = timed_run(backend, dag, hooks)
        plain.append(without)
        ratios.append(with_hooks / without)
    median = statistics.median(ratios)
    print(
        f"  {label:<44} ratio {median:5.3f} (min {min(ratios):.3f}, max {max(ratios):.3f})"
        f"   plain run {statistics.median(plain) * 1e3:7.1f} ms CPU"
    )
    return median


def main() -> None:
    print(f"DAG events: {N} no-op async tasks, {ROUNDS} interleaved rounds of {RUNS} runs")
    dag = wide(N)
    verdicts: list[bool] = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        other = registry(folder, OTHER_EVENTS, "other").as_task_hooks()
        unmatched = registry(folder, UNMATCHED_START, "unmatched").as_task_hooks()
        for backend in ("asyncio", "trio"):
            print(f"{backend}:")
            compare(backend, dag, "no hooks / no hooks (noise)", [])
            ratio = compare(backend, dag, "registry without DAG events / no hooks", [other])
            verdicts.append(ratio <= TARGET)
            compare(backend, dag, "python async before_execute / no hooks", [Listening()])
            compare(backend, dag, "AttemptStart hook matching no task / no hooks", [unmatched])
    verdict = "PASS" if all(verdicts) else "FAIL"
    print(f"verdict: {verdict} (target: a registry without DAG events at most {TARGET:.2f}x)")


if __name__ == "__main__":
    main()
