"""Hook cost benchmark: a run with hooks against the same run without them, in one process.

On each anyio backend (asyncio, trio), a run of ``TASKS`` independent no-op async tasks
(``orchestra.run(dag)``, the default ``hook_timeout`` of 60 s), in CPU time per task,
median with [min-max] over interleaved rounds (each round runs every contender once, in
the order below, each after a ``gc.collect()``):

- no hooks (the baseline: the same DAG, the same run, nothing registered);
- one hook object whose ``before_execute`` and ``after_execute`` are ``def``: called
  inline, as pluggy calls hooks (target at most 2.5x the run without hooks);
- the same object with ``async def`` methods (target at most 3x on asyncio, 4x on trio);
- the ``def`` object with ``blocking = True`` (each call in a worker thread, abandoned
  past its timeout): no target, the figure says what ``blocking`` costs.

Every ratio is against the run without hooks, never against another kind of hook (which
would reward making one kind slower): each round's run against that round's run without
hooks, then the median of those ratios, with their [min-max] (as ``bench/scheduler.py``
judges), so a change of the machine's load weighs on both sides of a ratio alike.

Each figure is also printed as ``FIGURE name value unit`` for ``make bench BASE=<rev>``.

Run: ``python bench/hook_costs.py [--quick]``.
"""

from __future__ import annotations

import gc
import statistics
import sys
import time
from typing import Any

import anyio

import orchestra
from orchestra import DAG, Task, TaskHooks

QUICK = "--quick" in sys.argv
TASKS = 3_000
ROUNDS = 7 if QUICK else 25
BACKENDS = ("asyncio", "trio")
TARGETS = {"def": {"asyncio": 2.5, "trio": 2.5}, "async def": {"asyncio": 3.0, "trio": 4.0}}
missed: list[str] = []


class DefHooks(TaskHooks):
    def before_execute(self, ctx: orchestra.TaskHookContext) -> None:
        return None

    def after_execute(self, ctx: orchestra.TaskHookContext, result: object) -> None:
        return None


class AsyncHooks(TaskHooks):
    async def before_execute(self, ctx: orchestra.TaskHookContext) -> None:
        return None

    async def after_execute(self, ctx: orchestra.TaskHookContext, result: object) -> None:
        return None


class BlockingHooks(DefHooks):
    blocking = True


async def noop() -> None:
    return None


def dag_of(n: int) -> DAG:
    dag = DAG("hook-costs")
    for i in range(n):
        dag.add(Task(id=f"t{i}", fn=noop))
    return dag


CONTENDERS: dict[str, tuple[type[TaskHooks], ...]] = {
    "no hooks": (),
    "def": (DefHooks,),
    "async def": (AsyncHooks,),
    "def, blocking": (BlockingHooks,),
}


async def cpu_per_task(dag: DAG, hooks: list[Any]) -> float:
    gc.collect()  # no run pays for the garbage of the one before
    cpu = time.process_time()
    result = await orchestra.run(dag, hooks=hooks)
    assert result.ok
    assert not result.hook_errors, result.hook_errors
    return (time.process_time() - cpu) / len(result.states)


def spread(values: list[float], scale: float = 1.0, unit: str = "") -> str:
    return (
        f"{statistics.median(values) * scale:5.2f}{unit} "
        f"[{min(values) * scale:.2f}-{max(values) * scale:.2f}]"
    )


async def section(backend: str) -> None:
    dag = dag_of(TASKS)
    samples: dict[str, list[float]] = {name: [] for name in CONTENDERS}
    for classes in CONTENDERS.values():  # warm up
        await cpu_per_task(dag, [c() for c in classes])
    for _ in range(ROUNDS):
        for name, classes in CONTENDERS.items():
            samples[name].append(await cpu_per_task(dag, [c() for c in classes]))
    base = samples["no hooks"]
    print(
        f"[{backend}] {TASKS}-task run, hooks on before_execute + after_execute: CPU per task "
        f"and ratio to the same round's run without hooks, median [min-max] of {ROUNDS} rounds"
    )
    for name, values in samples.items():
        ratios = [v / b for v, b in zip(values, base, strict=True)]
        ratio = statistics.median(ratios)
        target = TARGETS.get(name, {}).get(backend)
        if target is None:
            judged = "" if name == "no hooks" else "(no target)"
        else:
            met = ratio <= target
            judged = f"{'MET   ' if met else 'MISSED'} (target <= {target:g}x)"
            if not met:
                missed.append(f"{backend} {name} {ratio:.2f}x")
        print(
            f"  {name:<14} {spread(values, 1e6, ' µs'):>24}  "
            f"{spread(ratios, unit='x'):>20} no hooks  {judged}"
        )
        slug = name.replace(" ", "_").replace(",", "")
        print(f"FIGURE {backend}/{slug} {statistics.median(values) * 1e6:.4g} us")


def main() -> None:
    print(f"orchestra from {orchestra.__file__}, python {sys.version.split()[0]}")
    for backend in BACKENDS:
        anyio.run(section, backend, backend=backend)
    if missed:
        print("MISSED: " + "; ".join(missed))


if __name__ == "__main__":
    main()
