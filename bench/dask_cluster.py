"""Dask benchmark: orchestra + ``DaskExecutor`` against plain dask on the same graphs.

Both sides run on the same ``LocalCluster`` (worker processes), from this process, in
interleaved rounds (plain dask, then orchestra, then the next round), and each figure is
the median over the rounds. Plain dask is ``client.submit`` per task with the upstream
futures as arguments (dask resolves them on the cluster), then ``client.gather`` of the
leaves; orchestra is ``orchestra.run(dag, executor=DaskExecutor(client),
max_concurrency=None)`` (every ready task submitted: dask schedules, as with plain
futures), hooks and decisions in this process.

The cases:

- **2,000 tasks x 10 ms**: 20 layers of 100, each task on 2 random upstreams of the layer
  before (fixed seed); every body sleeps 10 ms and returns a small int. Target <= 1.1x.
  Also shown: orchestra with one ``after_execute`` hook that needs the outputs (every
  output fetched to this process), for information.
- **500 mixed tasks**: each on 0 to 3 random earlier tasks (fixed seed); bodies, in turn
  by a seeded draw: sync sleeps of 0-20 ms, ``async def`` sleeps of 0-20 ms, 1-3 ms of
  pure-Python work, and payloads of 0.1-1 MB that their dependents read. Target <= 1.3x.
- **50 MB chain**: 10 tasks each making a new 50 MB buffer from its upstream's (2 worker
  processes x 1 thread), with this process's peak RSS growth sampled every 10 ms. Targets:
  wall <= 1.3x, growth <= 100 MB.

Ratios are orchestra / plain dask, in wall time (the issue's targets) and in CPU time: of
this process (``process_time``: the driver, but also dask's scheduler and client, which a
``LocalCluster`` runs here) and of the worker processes. On a small, shared machine the
CPU ratios are the steadier ones; both are printed, with a verdict against each target.

Run: ``.venv/bin/python bench/dask_cluster.py [--quick] [--rounds N] [--workers N]
[--threads N] [--backend trio] [--concurrency N]``.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import threading
import time
from collections.abc import Callable
from typing import Any

import psutil
from distributed import Client, LocalCluster
from orchestra_dask import DaskExecutor

import orchestra
from orchestra import DAG, Task, TaskHooks

LAYERS, WIDTH, FAN_IN, SLEEP = 20, 100, 2, 0.010
MIXED = 500
CHAIN, CHUNK, RSS_TARGET_MB = 10, 50_000_000, 100
TARGETS = {"2,000 tasks x 10 ms": 1.1, "500 mixed tasks": 1.3, "50 MB chain": 1.3}

# A graph: task id -> (body, upstream ids), in topological order.
Graph = dict[str, tuple[Callable[..., Any], list[str]]]
Figures = tuple[float, float, float]  # wall seconds, this process's CPU, the workers' CPU


def score(value: Any) -> int:
    return value if isinstance(value, int) else len(value) % 7


def work(*upstream: Any, **named: Any) -> int:
    """The body of the 2,000-task case: 10 ms of sleep, then a small int."""
    time.sleep(SLEEP)
    return 1 + max(map(score, (*upstream, *named.values())), default=0) % 7


def layered(layers: int = LAYERS, width: int = WIDTH, seed: int = 7) -> Graph:
    rng = random.Random(seed)
    g: Graph = {}
    for layer in range(layers):
        prev = [f"l{layer - 1}_{k}" for k in range(width)] if layer else []
        for j in range(width):
            g[f"l{layer}_{j}"] = (work, rng.sample(prev, FAN_IN) if prev else [])
    return g


def sleeper(seconds: float) -> Callable[..., int]:
    def sleep(*upstream: Any, **named: Any) -> int:
        time.sleep(seconds)
        return 1 + sum(map(score, (*upstream, *named.values()))) % 7

    return sleep


def async_sleeper(seconds: float) -> Callable[..., Any]:
    async def nap(*upstream: Any, **named: Any) -> int:
        await asyncio.sleep(seconds)
        return 2 + sum(map(score, (*upstream, *named.values()))) % 7

    return nap


def cruncher(rounds: int) -> Callable[..., int]:
    def crunch(*upstream: Any, **named: Any) -> int:
        total = sum(map(score, (*upstream, *named.values())))
        for i in range(rounds):
            total = (total * 31 + i) % 1_000_003
        return total % 7

    return crunch


def producer(size: int) -> Callable[..., bytes]:
    def produce(*upstream: Any, **named: Any) -> bytes:
        return bytes([sum(map(score, (*upstream, *named.values()))) % 251]) * size

    return produce


def mixed(n: int = MIXED, seed: int = 11) -> Graph:
    rng = random.Random(seed)
    g: Graph = {}
    for i in range(n):
        kind = rng.choice(("sleep", "async", "cpu", "data"))
        if kind == "sleep":
            body = sleeper(rng.uniform(0, 0.020))
        elif kind == "async":
            body = async_sleeper(rng.uniform(0, 0.020))
        elif kind == "cpu":
            body = cruncher(rng.randrange(10_000, 30_000))  # ~1-3 ms
        else:
            body = producer(rng.randrange(100_000, 1_000_000))
        ids = list(g)
        g[f"m{i}_{kind}"] = (body, rng.sample(ids[-50:], min(len(ids), rng.randrange(4))))
    return g


def as_dag(name: str, graph: Graph) -> DAG:
    dag = DAG(name)
    for key, (body, deps) in graph.items():
        dag.add(Task(id=key, fn=body, deps=deps))
    return dag


def leaves(graph: Graph) -> list[str]:
    used = {d for _, deps in graph.values() for d in deps}
    return [k for k in graph if k not in used]


def workers_cpu() -> float:
    total = 0.0
    for child in psutil.Process().children(recursive=True):
        try:
            t = child.cpu_times()
        except psutil.Error:
            continue
        total += t.user + t.system
    return total


def measured(fn: Callable[[], object]) -> Figures:
    kids, cpu, started = workers_cpu(), time.process_time(), time.perf_counter()
    fn()
    wall = time.perf_counter() - started
    return wall, time.process_time() - cpu, workers_cpu() - kids


def plain_dask(client: Client, graph: Graph) -> None:
    futures: dict[str, Any] = {}
    for key, (body, deps) in graph.items():
        futures[key] = client.submit(body, *(futures[d] for d in deps), key=key, pure=False)
    client.gather([futures[k] for k in leaves(graph)])


class NeedsOutputs(TaskHooks):
    def after_execute(self, ctx: orchestra.TaskHookContext, result: Any) -> None:
        pass


def with_orchestra(
    client: Client, dag: DAG, args: argparse.Namespace, hooks: list[TaskHooks] | None = None
) -> None:
    result = orchestra.run_sync(
        dag,
        executor=DaskExecutor(client),
        hooks=hooks or [],
        max_concurrency=args.concurrency,
        backend=args.backend,
    )
    assert result.ok, result.errors


def first_chunk() -> bytearray:
    return bytearray(CHUNK)


def next_chunk(upstream: bytearray) -> bytearray:
    data = bytearray(upstream)  # a new 50 MB buffer
    data[0] = (data[0] + 1) % 256
    return data


def chain_dag() -> DAG:
    dag = DAG("bench-chain")
    dag.add(Task(id="c0", fn=first_chunk))
    for n in range(1, CHAIN):
        dag.add(Task(id=f"c{n}", fn=lambda **up: next_chunk(*up.values()), deps=[f"c{n - 1}"]))
    dag.add(Task(id="size", fn=lambda **up: len(*up.values()), deps=[f"c{CHAIN - 1}"]))
    return dag


def chain_plain(client: Client) -> None:
    future = client.submit(first_chunk, pure=False)
    for _ in range(1, CHAIN):
        future = client.submit(next_chunk, future, pure=False)
    assert client.submit(len, future, pure=False).result() == CHUNK


def chain_orchestra(client: Client, dag: DAG, args: argparse.Namespace) -> None:
    result = orchestra.run_sync(dag, executor=DaskExecutor(client), backend=args.backend)
    assert result.outputs == {"size": CHUNK}, result.errors


def with_peak_rss(fn: Callable[[], object]) -> tuple[Figures, float]:
    """``measured(fn)`` and this process's peak RSS growth meanwhile, in MB."""
    process = psutil.Process()
    before = peak = process.memory_info().rss
    running = True

    def sample() -> None:
        nonlocal peak
        while running:
            peak = max(peak, process.memory_info().rss)
            time.sleep(0.01)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        figures = measured(fn)
    finally:
        running = False
        sampler.join()
    return figures, (peak - before) / 1e6


def rounds(variants: dict[str, Callable[[], object]], n: int) -> dict[str, list[Figures]]:
    """The figures of each variant in ``n`` interleaved rounds (after a warm-up)."""
    for fn in variants.values():
        fn()
    runs: dict[str, list[Figures]] = {name: [] for name in variants}
    for _ in range(n):
        for name, fn in variants.items():
            runs[name].append(measured(fn))
    return runs


def median(runs: list[Figures]) -> Figures:
    wall, cpu, kids = zip(*runs, strict=True)
    return statistics.median(wall), statistics.median(cpu), statistics.median(kids)


def table(case: str, runs: dict[str, list[Figures]], target: float | None) -> list[str]:
    """Print the case's figures; return the verdict lines for its orchestra variants.

    Besides the ratios of the medians, the spread of the ratios round by round (each
    orchestra round against the plain dask round just before it): median [min - max].
    """
    figures = {name: median(rs) for name, rs in runs.items()}
    base = figures["dask"]
    verdicts = []
    print(f"\n{case}")
    for name, (wall, cpu, kids) in figures.items():
        ratios = ""
        if name != "dask":
            ratios = (
                f"  ratios: wall {wall / base[0]:.2f}x, this process's CPU {cpu / base[1]:.2f}x, "
                f"workers' CPU {kids / base[2]:.2f}x"
            )
        print(f"  {name:<22} wall {wall:6.3f} s  cpu {cpu:6.3f} s  workers {kids:6.3f} s{ratios}")
        if name != "dask":
            print(f"  {'':<22} round by round: {spread(runs[name], runs['dask'])}")
        if name == "orchestra" and target is not None:
            verdicts.append(verdict(case, wall / base[0], cpu / base[1], target))
    return verdicts


def spread(mine: list[Figures], base: list[Figures]) -> str:
    """The per-round ratios of wall and this process's CPU: median [min - max]."""

    def one(k: int) -> str:
        ratios = sorted(m[k] / b[k] for m, b in zip(mine, base, strict=True))
        return f"{statistics.median(ratios):.2f}x [{ratios[0]:.2f}-{ratios[-1]:.2f}]"

    return f"wall {one(0)}, CPU {one(1)}"


def verdict(case: str, wall: float, cpu: float, target: float) -> str:
    def ok(ratio: float) -> str:
        return "ok" if ratio <= target else "MISSED"

    return (
        f"{case:<22} target <= {target}x: wall {wall:.2f}x ({ok(wall)}), "
        f"CPU of this process {cpu:.2f}x ({ok(cpu)})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 rounds instead of 5")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (5)")
    parser.add_argument("--workers", type=int, default=2, help="worker processes (2)")
    parser.add_argument("--threads", type=int, default=16, help="threads per worker (16)")
    parser.add_argument("--backend", default="asyncio", choices=["asyncio", "trio"])
    parser.add_argument(
        "--concurrency", type=int, default=None, help="orchestra's max_concurrency (None)"
    )
    args = parser.parse_args()
    n = 2 if args.quick else args.rounds
    layered_graph, mixed_graph = layered(), mixed()
    layered_dag, mixed_dag = (
        as_dag("bench-layered", layered_graph),
        as_dag("bench-mixed", mixed_graph),
    )
    print(
        f"LocalCluster {args.workers} worker processes x {args.threads} threads; orchestra on "
        f"{args.backend}, max_concurrency={args.concurrency}; median of {n} interleaved rounds"
    )
    verdicts: list[str] = []
    with (
        LocalCluster(
            n_workers=args.workers,
            threads_per_worker=args.threads,
            processes=True,
            dashboard_address=":0",
        ) as cluster,
        Client(cluster) as client,
    ):
        case = "2,000 tasks x 10 ms"
        figures = rounds(
            {
                "dask": lambda: plain_dask(client, layered_graph),
                "orchestra": lambda: with_orchestra(client, layered_dag, args),
                "orchestra+outputs hook": lambda: with_orchestra(
                    client, layered_dag, args, [NeedsOutputs()]
                ),
            },
            n,
        )
        verdicts += table(case, figures, TARGETS[case])
        case = "500 mixed tasks"
        figures = rounds(
            {
                "dask": lambda: plain_dask(client, mixed_graph),
                "orchestra": lambda: with_orchestra(client, mixed_dag, args),
            },
            n,
        )
        verdicts += table(case, figures, TARGETS[case])
    verdicts.append(chain_case(args, n))
    print("\nverdicts:")
    for line in verdicts:
        print(f"  {line}")


def chain_case(args: argparse.Namespace, n: int) -> str:
    case = "50 MB chain"
    chain = chain_dag()
    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
        ) as cluster,
        Client(cluster) as client,
    ):
        variants: dict[str, Callable[[], object]] = {
            "dask": lambda: chain_plain(client),
            "orchestra": lambda: chain_orchestra(client, chain, args),
        }
        for fn in variants.values():
            fn()
        runs: dict[str, list[tuple[Figures, float]]] = {name: [] for name in variants}
        for _ in range(n):
            for name, fn in variants.items():
                runs[name].append(with_peak_rss(fn))
    table(
        f"{case} (2 worker processes x 1 thread)",
        {name: [f for f, _ in r] for name, r in runs.items()},
        None,
    )
    figures = {name: median([f for f, _ in r]) for name, r in runs.items()}
    growth = {name: max(g for _, g in r) for name, r in runs.items()}
    print(
        f"  peak RSS growth here: dask {growth['dask']:.0f} MB, "
        f"orchestra {growth['orchestra']:.0f} MB"
    )
    base, mine = figures["dask"], figures["orchestra"]
    line = verdict(case, mine[0] / base[0], mine[1] / base[1], TARGETS[case])
    fits = "ok" if growth["orchestra"] <= RSS_TARGET_MB else "MISSED"
    rss = f"driver RSS growth {growth['orchestra']:.0f} MB (target <= {RSS_TARGET_MB}: {fits})"
    return f"{line}; {rss}"


if __name__ == "__main__":
    main()
