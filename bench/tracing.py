"""Tracing benchmark: what orchestra's tracing costs per task, and whether every span is kept.

Independent no-op async tasks, ``orchestra.run(max_concurrency=64)``, in these
configurations, each in its own subprocess (a global tracer provider is set once per
process), the subprocesses interleaved over rounds:

(a) no tracing SDK configured (the OpenTelemetry API's default proxy provider);
(c) the SDK, with orchestra's tracing switched off by its own switch
    (``ORCHESTRA_TRACING=off``);
(b) the SDK keeping every span in memory (``SimpleSpanProcessor`` + the in-memory
    exporter): the baseline of what a span costs;
(j) ``tracing.configure(jsonl=PATH)``, what users and ``orchestra run --trace`` run
    (lines encoded to OTLP protobuf by the run's thread, to JSON by a writer process):
    the time of the run and of ``provider.force_flush()``, which waits until the file
    holds every span, and the spans counted in the file.

(a), (b), (c) at 10,000 tasks; (b) and (j) at 10,000 and 100,000 tasks (a
``BatchSpanProcessor`` with OpenTelemetry's default queue, what ``configure`` used
before, kept 6,135 of the 10,001 spans of a 10,000-task run). Figures are per task,
median (min-max) over every run of every round.

Targets: (a) at most 1.05x (c) (with no SDK a run must skip span work); (b) at most
30 µs per task over (c); (j) every span in the file, and (j) per span at most 1.5x (b).

Run: ``python bench/tracing.py [--quick]``.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

QUICK = "--quick" in sys.argv
SIZES = (10_000, 20_000) if QUICK else (10_000, 100_000)
REPEAT = 2 if QUICK else 3  # timed runs per subprocess
ROUNDS = 2 if QUICK else 3  # interleaved rounds of subprocesses


def child(config: str, tasks: int) -> None:
    exporter = provider = None
    path = Path(tempfile.mkdtemp(prefix="orchestra-bench-tracing-")) / "run.jsonl"
    if config in ("b", "c"):
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
            InMemorySpanExporter,
        )

        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
    import anyio

    import orchestra
    import orchestra.tracing as ot

    if config == "j":
        provider = ot.configure(jsonl=path)
        assert provider is not None

    async def noop() -> None:
        return None

    dag = orchestra.DAG("bench")
    for i in range(tasks):
        dag.add(orchestra.Task(id=f"t{i}", fn=noop))

    async def once() -> tuple[float, float]:
        t0 = time.perf_counter()
        result = await orchestra.run(dag, max_concurrency=64)
        ran = time.perf_counter() - t0
        if provider is not None:
            provider.force_flush()  # (j): the last line written
        assert result.ok
        return ran, time.perf_counter() - t0

    async def main() -> tuple[list[float], list[float], list[int]]:
        await once()  # warm up
        runs, totals, spans = [], [], []
        for _ in range(REPEAT):
            if exporter is not None:
                exporter.clear()
            before = len(ot.read_jsonl(path)) if config == "j" else 0
            ran, total = await once()
            runs.append(ran)
            totals.append(total)
            if exporter is not None:
                spans.append(len(exporter.get_finished_spans()))
            elif config == "j":
                spans.append(len(ot.read_jsonl(path)) - before)
        return runs, totals, spans

    runs, totals, spans = anyio.run(main)
    print(json.dumps({"runs": runs, "totals": totals, "spans": spans}))


def run_child(config: str, tasks: int) -> dict[str, Any]:
    env = dict(os.environ)
    env.pop("ORCHESTRA_TRACING", None)
    if config == "c":
        env["ORCHESTRA_TRACING"] = "off"
    args = [sys.executable, __file__, "--child", config, str(tasks)]
    args += ["--quick"] if QUICK else []
    out = subprocess.run(args, env=env, check=True, capture_output=True, text=True, timeout=1800)
    assert "Queue full" not in out.stderr, out.stderr[-2000:]
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):7.2f} ({min(values):.2f}-{max(values):.2f})"


def main() -> int:
    print(f"orchestra tracing benchmark: no-op async tasks, max_concurrency=64, {REPEAT} runs")
    print(f"per subprocess, {ROUNDS} interleaved rounds; µs per task, median (min-max)\n")
    contenders = [("a", SIZES[0]), ("c", SIZES[0])]
    contenders += [(config, n) for n in SIZES for config in ("b", "j")]
    per_task: dict[tuple[str, int], list[float]] = {c: [] for c in contenders}
    run_only: dict[tuple[str, int], list[float]] = {c: [] for c in contenders}
    spans: dict[tuple[str, int], list[int]] = {c: [] for c in contenders}
    for _ in range(ROUNDS):
        for config, n in contenders:
            figures = run_child(config, n)
            per_task[config, n] += [t / n * 1e6 for t in figures["totals"]]
            run_only[config, n] += [t / n * 1e6 for t in figures["runs"]]
            spans[config, n] += figures["spans"]
    labels = {
        "a": "(a) no tracing SDK",
        "c": "(c) tracing switched off",
        "b": "(b) SDK, every span in memory",
        "j": "(j) configure(jsonl=...)",
    }
    for config, n in contenders:
        line = f"{labels[config]:<32} {n:>7} tasks  {spread(per_task[config, n])}"
        if config == "j":
            line += f"   of which the run {spread(run_only[config, n])}"
        print(line)
    ok = True
    a, c = (statistics.median(per_task[k, SIZES[0]]) for k in ("a", "c"))
    b = statistics.median(per_task["b", SIZES[0]])
    print(f"\na/c = {a / c:.3f}   target <= 1.05: {'ok' if a / c <= 1.05 else 'MISSED'}")
    print(f"b-c = {b - c:.2f} µs/task   target <= 30 µs: {'ok' if b - c <= 30 else 'MISSED'}")
    ok &= a / c <= 1.05 and b - c <= 30
    for n in SIZES:
        want = n + 1  # a span per task attempt and the run's
        kept = spans["j", n]
        every = all(count == want for count in kept) and all(c == want for c in spans["b", n])
        ratio = statistics.median(per_task["j", n]) / statistics.median(per_task["b", n])
        print(
            f"{n} tasks: spans in the file per run {sorted(set(kept))} of {want}"
            f" (target: every span): {'ok' if every else 'MISSED'};"
            f" per span (j)/(b) = {ratio:.2f}x (target <= 1.5x): "
            f"{'ok' if ratio <= 1.5 else 'MISSED'}"
        )
        ok &= every and ratio <= 1.5
    return 0 if ok else 1


if __name__ == "__main__":
    if "--child" in sys.argv:
        at = sys.argv.index("--child")
        child(sys.argv[at + 1], int(sys.argv[at + 2]))
    else:
        sys.exit(main())
