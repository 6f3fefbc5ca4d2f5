"""Dask benchmark: orchestra + ``DaskExecutor`` against plain dask on the same graph.

The graph: 2,000 tasks in 20 layers of 100, each task taking 2 random upstreams of the
layer before (fixed seed); every body sleeps 10 ms and returns a small int. Both sides
run on the same ``LocalCluster`` (worker processes), from the same process, alternately:

(a) plain dask: ``client.submit`` per task with the upstream futures as arguments (dask
    resolves them on the cluster), then ``client.gather`` of the last layer;
(b) ``orchestra.run(dag, executor=DaskExecutor(client))``: one dask task per attempt,
    results back to the driver, hooks and decisions there; once with no hooks and once
    with one no-op ``TaskHooks``.

Prints wall times (median of the repeats), the CPU seconds this process spent (the
scheduler and the client live here too: on a small machine they are the bottleneck) and
the overhead ratio of wall times (b) / (a); target <= 1.1.

Then the data case: a chain of 10 tasks each making a new 50 MB buffer from its upstream's,
as plain dask futures and through orchestra (outputs stay on the cluster), with the
driver's peak RSS growth sampled every 10 ms; targets: wall <= 1.3x, growth <= 100 MB.

Run: ``.venv/bin/python bench/dask_cluster.py [--quick] [--workers N] [--threads N]``.
"""

from __future__ import annotations

import argparse
import random
import statistics
import threading
import time
from typing import Any

import psutil
from distributed import Client, LocalCluster
from orchestra_dask import DaskExecutor

import orchestra
from orchestra import DAG, Task, TaskHooks

LAYERS, WIDTH, FAN_IN, SLEEP = 20, 100, 2, 0.010
TARGET = 1.1
CHAIN, CHUNK, CHAIN_TARGET, RSS_TARGET_MB = 10, 50_000_000, 1.3, 100

Graph = dict[str, list[str]]


def layered(layers: int = LAYERS, width: int = WIDTH, seed: int = 7) -> Graph:
    rng = random.Random(seed)
    g: Graph = {}
    for layer in range(layers):
        prev = [f"l{layer - 1}_{k}" for k in range(width)] if layer else []
        for j in range(width):
            g[f"l{layer}_{j}"] = rng.sample(prev, FAN_IN) if prev else []
    return g


def work(*upstream: int, **named: int) -> int:
    """The body on both sides: 10 ms of sleep, then a small int."""
    time.sleep(SLEEP)
    return 1 + max((*upstream, *named.values()), default=0) % 7


def plain_dask(client: Client, graph: Graph) -> tuple[float, float]:
    cpu, started = time.process_time(), time.perf_counter()
    futures: dict[str, Any] = {}
    for key, deps in graph.items():  # insertion order is topological
        futures[key] = client.submit(work, *(futures[d] for d in deps), key=key, pure=False)
    sinks = [futures[k] for k in graph if k.startswith(f"l{LAYERS - 1}_")]
    client.gather(sinks)
    elapsed = time.perf_counter() - started, time.process_time() - cpu
    del futures, sinks
    return elapsed


class NoOp(TaskHooks):
    def after_execute(self, ctx: orchestra.TaskHookContext, result: Any) -> None:
        pass


def orchestra_dag(graph: Graph) -> DAG:
    dag = DAG("bench-dask")
    for key, deps in graph.items():
        dag.add(Task(id=key, fn=work, deps=deps))
    return dag


def with_orchestra(
    client: Client, dag: DAG, hooks: list[TaskHooks], concurrency: int, backend: str
) -> tuple[float, float]:
    executor = DaskExecutor(client)
    cpu, started = time.process_time(), time.perf_counter()
    result = orchestra.run_sync(
        dag, executor=executor, hooks=hooks, max_concurrency=concurrency, backend=backend
    )
    elapsed = time.perf_counter() - started, time.process_time() - cpu
    assert result.ok, result.errors
    return elapsed


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


def peak_rss(fn: Any) -> tuple[float, float]:
    """Wall seconds of ``fn()`` and the driver's peak RSS growth meanwhile, in MB."""
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
    started = time.perf_counter()
    try:
        fn()
    finally:
        elapsed = time.perf_counter() - started
        running = False
        sampler.join()
    return elapsed, (peak - before) / 1e6


def chain_plain(client: Client) -> None:
    future = client.submit(first_chunk, pure=False)
    for _ in range(1, CHAIN):
        future = client.submit(next_chunk, future, pure=False)
    assert client.submit(len, future, pure=False).result() == CHUNK


def chain_orchestra(client: Client, dag: DAG, backend: str) -> None:
    result = orchestra.run_sync(dag, executor=DaskExecutor(client), backend=backend)
    assert result.outputs == {"size": CHUNK}, result.errors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 repeats instead of 5")
    parser.add_argument("--workers", type=int, default=2, help="worker processes (2)")
    parser.add_argument("--threads", type=int, default=16, help="threads per worker (16)")
    parser.add_argument("--backend", default="asyncio", choices=["asyncio", "trio"])
    args = parser.parse_args()
    repeat = 2 if args.quick else 5
    graph = layered()
    dag = orchestra_dag(graph)
    slots = args.workers * args.threads
    concurrency = 2 * slots  # results travel back while other bodies run
    ideal = len(graph) * SLEEP / slots
    print(
        f"{len(graph)} tasks ({LAYERS} layers x {WIDTH}, fan-in {FAN_IN}), {SLEEP * 1e3:.0f} ms "
        f"each; LocalCluster {args.workers} worker processes x {args.threads} threads; "
        f"orchestra max_concurrency={concurrency}, {args.backend}; ideal {ideal:.3f} s"
    )
    with (
        LocalCluster(
            n_workers=args.workers,
            threads_per_worker=args.threads,
            processes=True,
            dashboard_address=":0",
        ) as cluster,
        Client(cluster) as client,
    ):
        plain_dask(client, graph)  # warm-up: imports, connections
        with_orchestra(client, dag, [], concurrency, args.backend)
        times: dict[str, list[tuple[float, float]]] = {
            "dask": [],
            "orchestra": [],
            "orchestra+hook": [],
        }
        for _ in range(repeat):
            times["dask"].append(plain_dask(client, graph))
            times["orchestra"].append(with_orchestra(client, dag, [], concurrency, args.backend))
            times["orchestra+hook"].append(
                with_orchestra(client, dag, [NoOp()], concurrency, args.backend)
            )
    med = {name: statistics.median(t for t, _ in ts) for name, ts in times.items()}
    for name, ts in times.items():
        runs = " ".join(f"{t:.3f}" for t, _ in ts)
        cpu = statistics.median(c for _, c in ts)
        print(f"  {name:<15} median {med[name]:.3f} s  cpu {cpu:.3f} s  (runs: {runs})")
    for name in ("orchestra", "orchestra+hook"):
        ratio = med[name] / med["dask"]
        verdict = "ok" if ratio <= TARGET else "OVER TARGET"
        print(f"overhead ratio {name} / dask: {ratio:.2f} (target <= {TARGET}: {verdict})")
    chain = chain_dag()
    print(f"\nchain of {CHAIN} tasks passing {CHUNK / 1e6:.0f} MB; 2 worker processes x 1 thread")
    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
        ) as cluster,
        Client(cluster) as client,
    ):
        chain_plain(client)  # warm-up
        runs: dict[str, list[tuple[float, float]]] = {"dask": [], "orchestra": []}
        for _ in range(repeat):
            runs["dask"].append(peak_rss(lambda: chain_plain(client)))
            runs["orchestra"].append(peak_rss(lambda: chain_orchestra(client, chain, args.backend)))
    wall = {name: statistics.median(t for t, _ in r) for name, r in runs.items()}
    for name, r in runs.items():
        growth = max(g for _, g in r)
        print(f"  {name:<15} median {wall[name]:.3f} s  driver peak RSS growth {growth:.0f} MB")
    ratio = wall["orchestra"] / wall["dask"]
    growth = max(g for _, g in runs["orchestra"])
    ok = ratio <= CHAIN_TARGET and growth <= RSS_TARGET_MB
    print(
        f"chain ratio orchestra / dask: {ratio:.2f} (target <= {CHAIN_TARGET}), driver growth "
        f"{growth:.0f} MB (target <= {RSS_TARGET_MB}): {'ok' if ok else 'OVER TARGET'}"
    )


if __name__ == "__main__":
    main()
