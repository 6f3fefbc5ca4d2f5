"""Tracing benchmark: what orchestra's tracing costs per task.

10,000 independent no-op async tasks, ``orchestra.run(max_concurrency=64)``, in three
configurations:

(a) no tracing SDK configured (the OpenTelemetry API's default proxy provider)
(b) the SDK: a ``TracerProvider`` with a ``BatchSpanProcessor`` and an in-memory exporter
    (so every run and task-attempt span is made, queued and exported)
(c) the same SDK, with orchestra's tracing switched off by its own switch
    (``ORCHESTRA_TRACING=off``)

Targets: (a) within 5% of (c), since with no SDK a run must skip span work; (b) at most
30 µs per task over (c).

The global tracer provider can be set only once per process, so each configuration runs
in its own subprocess (``python bench/tracing.py --child a|b|c``), which times the run
(the best of several) and prints its figures as JSON. The parent alternates the three
children for a few rounds and keeps each one's best, to damp machine noise.

Run: ``python bench/tracing.py [--quick]``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any

N = 10_000
QUICK = "--quick" in sys.argv
REPEAT = 5 if QUICK else 9
ROUNDS = 2 if QUICK else 3


def child(config: str) -> None:
    if config in ("b", "c"):
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
            InMemorySpanExporter,
        )

        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        # A queue that holds a whole run, so no span is dropped (dropping is cheaper).
        provider.add_span_processor(
            BatchSpanProcessor(exporter, max_queue_size=4 * N, max_export_batch_size=2048)
        )
        trace.set_tracer_provider(provider)
    import anyio

    import orchestra

    async def noop() -> None:
        return None

    dag = orchestra.DAG("bench")
    for i in range(N):
        dag.add(orchestra.Task(id=f"t{i}", fn=noop))

    async def once() -> float:
        t0 = time.perf_counter()
        result = await orchestra.run(dag, max_concurrency=64)
        elapsed = time.perf_counter() - t0
        assert result.ok
        return elapsed

    async def main() -> list[float]:
        await once()  # warm up
        times = []
        for _ in range(REPEAT):
            times.append(await once())
            if config in ("b", "c"):
                provider.force_flush()
                exporter.clear()
        return times

    times = anyio.run(main)
    spans = 0
    if config == "b":
        # one more run, to count what it exported: every span made, none dropped
        exporter.clear()
        anyio.run(once)
        provider.force_flush()
        spans = len(exporter.get_finished_spans())
    print(json.dumps({"best": min(times), "times": times, "spans": spans}))


def run_child(config: str) -> dict[str, Any]:
    env = dict(os.environ)
    env.pop("ORCHESTRA_TRACING", None)
    if config == "c":
        env["ORCHESTRA_TRACING"] = "off"
    args = [sys.executable, __file__, "--child", config] + (["--quick"] if QUICK else [])
    out = subprocess.run(args, env=env, check=True, capture_output=True, text=True, timeout=600)
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> None:
    print(f"orchestra tracing benchmark: {N} no-op async tasks, max_concurrency=64")
    print(f"best of {REPEAT} runs per process, best of {ROUNDS} processes per configuration\n")
    best: dict[str, float] = {}
    spans = 0
    for _ in range(ROUNDS):
        for config in ("a", "c", "b"):
            figures = run_child(config)
            best[config] = min(best.get(config, float("inf")), figures["best"])
            spans = max(spans, figures["spans"])
    per_task = {k: v / N * 1e6 for k, v in best.items()}
    labels = {
        "a": "(a) no tracing SDK          ",
        "b": "(b) SDK + batch + in-memory ",
        "c": "(c) tracing switched off    ",
    }
    for config in ("a", "b", "c"):
        print(f"{labels[config]} {best[config] * 1e3:8.1f} ms/run  {per_task[config]:6.2f} us/task")
    ratio = best["a"] / best["c"]
    overhead = per_task["b"] - per_task["c"]
    print(f"\n(b) exported {spans} spans per run ({N} task attempts + 1 run span)")
    print(
        f"a/c = {ratio:.3f}   target within 5% (0.95..1.05): "
        f"{'ok' if 0.95 <= ratio <= 1.05 else 'MISSED'}"
    )
    print(f"b-c = {overhead:.2f} us/task   target <= 30 us: {'ok' if overhead <= 30 else 'MISSED'}")


if __name__ == "__main__":
    if "--child" in sys.argv:
        child(sys.argv[sys.argv.index("--child") + 1])
    else:
        main()
