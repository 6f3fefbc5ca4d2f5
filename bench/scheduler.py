"""Scheduler benchmark: orchestra against baselines measured in the same process.

Shapes (10,000 no-op tasks each): ``wide`` (10,000 independent tasks and one sink),
``chain`` (10,000 in a line), ``layered`` (100 layers of 100, each node with 3 random
deps in the previous layer, fixed seed). Prints tasks/s (median of repeats) and ratios:

(a) floor: ``graphlib.TopologicalSorter`` driving raw asyncio tasks under ``Semaphore(64)``
(b) ``orchestra.run(max_concurrency=64)``, no hooks, async bodies
(c) the same with 5 no-op ``TaskHooks`` (per hook call overhead derived from c - b)
(d) sync bodies: orchestra (thread offload, inline) against dask's synchronous and
    threaded schedulers, and Hamilton's sequential driver on a 1,000-node layered graph

and the peak memory growth per node of a 100,000-node layered DAG built and run.

Run: ``make bench`` (or ``python bench/scheduler.py [--quick]``).
"""

from __future__ import annotations

import asyncio
import gc
import graphlib
import os
import random
import statistics
import sys
import time
import tracemalloc
import types
from collections.abc import Callable
from typing import Any

import orchestra
from orchestra import DAG, Task, TaskHooks

QUICK = "--quick" in sys.argv
REPEAT = 3 if QUICK else 5
N = 10_000

Graph = dict[str, list[str]]


def wide(n: int = N) -> Graph:
    g: Graph = {f"t{i}": [] for i in range(n)}
    g["sink"] = list(g)
    return g


def chain(n: int = N) -> Graph:
    return {f"t{i}": ([f"t{i - 1}"] if i else []) for i in range(n)}


def layered(layers: int = 100, width: int = 100, seed: int = 7) -> Graph:
    rng = random.Random(seed)
    g: Graph = {}
    for layer in range(layers):
        for j in range(width):
            prev = [f"l{layer - 1}_{k}" for k in range(width)] if layer else []
            g[f"l{layer}_{j}"] = rng.sample(prev, 3) if prev else []
    return g


SHAPES: dict[str, Callable[[], Graph]] = {"wide": wide, "chain": chain, "layered": layered}


async def anoop() -> None:
    return None


def snoop(**_: Any) -> None:
    return None


def build(graph: Graph, fn: Callable[..., Any], *, inline: bool = False) -> DAG:
    dag = DAG("bench")
    for tid, deps in graph.items():
        dag.add(Task(id=tid, fn=fn, deps=deps, inline=inline))
    return dag


async def floor(graph: Graph) -> None:
    ts = graphlib.TopologicalSorter(graph)
    ts.prepare()
    sem = asyncio.Semaphore(64)
    done: asyncio.Queue[str] = asyncio.Queue()
    tasks = set()

    async def one(node: str) -> None:
        async with sem:
            await anoop()
        done.put_nowait(node)

    while ts.is_active():
        for node in ts.get_ready():
            t = asyncio.create_task(one(node))
            tasks.add(t)
            t.add_done_callback(tasks.discard)
        ts.done(await done.get())


class NoopHook(TaskHooks):
    def before_execute(self, ctx: orchestra.TaskHookContext) -> None:
        return None

    def after_execute(self, ctx: orchestra.TaskHookContext, result: Any) -> None:
        return None

    def on_failure(self, ctx: orchestra.TaskHookContext, error: BaseException) -> None:
        return None


def timed(fn: Callable[[], Any]) -> float:
    best = []
    for _ in range(REPEAT):
        gc.collect()
        t0 = time.perf_counter()
        fn()
        best.append(time.perf_counter() - t0)
    return statistics.median(best)


def rate(n: int, seconds: float) -> str:
    return f"{n / seconds / 1000:8.1f}k/s"


def dask_graph(graph: Graph) -> dict[str, Any]:
    def body(*_: Any) -> None:
        return None

    return {tid: (body, *deps) for tid, deps in graph.items()}


def hamilton_driver(graph: Graph) -> tuple[Any, list[str]]:
    os.environ.setdefault("HAMILTON_TELEMETRY_ENABLED", "false")  # offline
    from hamilton import driver  # type: ignore[import-untyped]

    src = []
    for tid, deps in graph.items():
        params = ", ".join(f"{d}: int" for d in deps)
        src.append(f"def {tid}({params}) -> int:\n    return 0\n")
    module = types.ModuleType("bench_hamilton_graph")
    sys.modules[module.__name__] = module  # Hamilton keeps the functions of this module
    exec("\n".join(src), module.__dict__)  # generated benchmark graph
    dr = driver.Builder().with_modules(module).build()
    return dr, list(graph)


def main() -> None:
    print(f"orchestra scheduler benchmark, {N} no-op tasks per shape, median of {REPEAT}")
    print(f"python {sys.version.split()[0]}, asyncio backend\n")
    hook_costs = []
    for name, make in SHAPES.items():
        graph = make()
        n = len(graph)
        dag_async = build(graph, anoop)
        dag_async.validate()
        hooks = [NoopHook() for _ in range(5)]
        t_floor = timed(lambda g=graph: asyncio.run(floor(g)))
        t_b = timed(lambda d=dag_async: orchestra.run_sync(d, max_concurrency=64))
        t_c = timed(lambda d=dag_async, h=hooks: orchestra.run_sync(d, max_concurrency=64, hooks=h))
        dag_thread = build(graph, snoop)
        dag_inline = build(graph, snoop, inline=True)
        t_thread = timed(lambda d=dag_thread: orchestra.run_sync(d, max_concurrency=64))
        t_inline = timed(lambda d=dag_inline: orchestra.run_sync(d, max_concurrency=64))
        import dask
        import dask.threaded

        dg = dask_graph(graph)
        keys = list(graph)
        t_dask_sync = timed(lambda g=dg, k=keys: dask.get(g, k))
        t_dask_thr = timed(lambda g=dg, k=keys: dask.threaded.get(g, k))
        per_hook_us = (t_c - t_b) / (n * 10) * 1e6  # before + after on each of 5 hooks
        hook_costs.append(per_hook_us)
        print(f"[{name}] {n} tasks")
        print(f"  (a) floor asyncio+graphlib  {rate(n, t_floor)}")
        print(f"  (b) orchestra, no hooks     {rate(n, t_b)}   b/a = {t_floor / t_b:5.2f}")
        print(
            f"  (c) orchestra, 5 no-op hooks{rate(n, t_c)}   c/a = {t_floor / t_c:5.2f}"
            f"   +{per_hook_us:.2f} us per hook call"
        )
        print(f"  (d) orchestra sync, threads {rate(n, t_thread)}")
        print(f"      orchestra sync, inline  {rate(n, t_inline)}")
        print(
            f"      dask synchronous        {rate(n, t_dask_sync)}"
            f"   b/dask-sync = {t_dask_sync / t_b:5.2f}"
            f"   inline/dask-sync = {t_dask_sync / t_inline:5.2f}"
        )
        print(
            f"      dask threaded           {rate(n, t_dask_thr)}"
            f"   threads/dask-threaded = {t_dask_thr / t_thread:5.2f}"
        )
        print()

    # Hamilton's sequential driver on a 1,000-node layered graph.
    small = layered(layers=10, width=100)
    dr, outputs = hamilton_driver(small)
    t_ham = timed(lambda: dr.execute(outputs))
    dag_small = build(small, snoop, inline=True)
    t_small = timed(lambda: orchestra.run_sync(dag_small, max_concurrency=64))
    n = len(small)
    print(
        f"[layered 1,000] Hamilton driver {rate(n, t_ham)}   orchestra inline {rate(n, t_small)}"
        f"   inline/hamilton = {t_ham / t_small:5.2f}"
    )
    print(f"mean per hook call (5 no-op hooks): {statistics.mean(hook_costs):.2f} us")

    # Memory: a 100,000-node layered DAG, built and run.
    big = layered(layers=1000, width=100, seed=11)
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    dag_big = build(big, anoop)
    result = orchestra.run_sync(dag_big, max_concurrency=64)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert result.ok
    print(
        f"[memory] 100,000-node layered DAG: peak growth {(peak - base) / len(big):.0f} B/node"
        f" (graph spec dicts excluded)"
    )


if __name__ == "__main__":
    main()
