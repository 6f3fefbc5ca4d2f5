"""Tracing benchmark: what orchestra's tracing costs per task, and whether every span is kept.

Independent no-op async tasks, ``orchestra.run(max_concurrency=64)``, in CPU time per
task (this process and every process it started, live or ended: whatever a tracing
configuration makes beside the run counts), median (min-max):

(a) no tracing SDK configured (the OpenTelemetry API's default proxy provider);
(c) the SDK, with orchestra's tracing switched off by its own switch
    (``ORCHESTRA_TRACING=off``);
(b) the SDK keeping every span in memory (``SimpleSpanProcessor`` + OpenTelemetry's
    plain ``InMemorySpanExporter``): the baseline of what a span costs;
(j) ``tracing.configure(jsonl=PATH)``, what users and ``orchestra run --trace`` run:
    the run and ``provider.force_flush()`` (after it the file holds every span), and
    the spans counted in the file.

(a) and (c) at the first size, each in its own subprocess (a global tracer provider is
set once per process), interleaved over rounds. (b) and (j) at each size in one process
(orchestra's own provider switched between them, ``tracing.set_tracer_provider``), run
in turn over interleaved rounds: a change of the machine's load weighs on both alike.

Targets: (a) at most 1.05x (c) (with no SDK a run must skip span work); (b) at most
30 µs per task over (c); (j) every span in the file, and (j) at most 1.5x (b) at every
size (issue 46: 20,000 tasks).

Each figure, and each ratio judged (unit ``x``), is also printed as ``FIGURE name value
unit`` for ``make bench BASE=<rev>``.

Run: ``python bench/tracing.py [--quick]``.
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

QUICK = "--quick" in sys.argv
SIZES = (20_000,) if QUICK else (20_000, 100_000)
ROUNDS = 5 if QUICK else 9  # interleaved rounds: (b) then (j), each one run
SUBPROCESS_ROUNDS = 3  # of (a) and (c)
TICK = os.sysconf("SC_CLK_TCK")


def _live_children_cpu() -> float:
    """CPU seconds of this process's live children so far (Linux's /proc; else 0).

    Each process's parent is read from its /proc/PID/stat: /proc/self/task/TID/children
    lists a thread's children only, and vanishes when that thread ends.
    """
    total = 0.0
    me = os.getpid()
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # it ended meanwhile: counted below once waited for
            continue
        if int(fields[1]) == me:  # its parent (a zombie too: not waited for, not counted below)
            total += (int(fields[11]) + int(fields[12])) / TICK  # utime, stime
    return total


def cpu_seconds() -> float:
    """CPU seconds of this process and of every process it started (live or ended)."""
    ended = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + ended.ru_utime + ended.ru_stime + _live_children_cpu()


def build(tasks: int) -> Any:
    import orchestra

    async def noop() -> None:
        return None

    dag = orchestra.DAG("bench")
    for i in range(tasks):
        dag.add(orchestra.Task(id=f"t{i}", fn=noop))
    return dag


async def timed(dag: Any, provider: Any) -> float:
    """CPU seconds of one run, its spans flushed."""
    import orchestra

    start = cpu_seconds()
    result = await orchestra.run(dag, max_concurrency=64)
    if provider is not None:
        provider.force_flush()  # (j): the last line written
    assert result.ok
    return cpu_seconds() - start


def child_plain(config: str, tasks: int) -> None:
    """(a) or (c): CPU seconds of each run, in a process of their own."""
    if config == "c":
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider

        trace.set_tracer_provider(TracerProvider())
    import anyio

    dag = build(tasks)

    async def main() -> list[float]:
        await timed(dag, None)  # warm up
        return [await timed(dag, None) for _ in range(3)]

    print(json.dumps({"cpu": anyio.run(main)}))


def child_pair(tasks: int) -> None:
    """(b) and (j) in turn, in this one process: CPU seconds and spans kept per run."""
    import anyio
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    import orchestra.tracing as ot

    memory = InMemorySpanExporter()
    in_memory = TracerProvider()
    in_memory.add_span_processor(SimpleSpanProcessor(memory))
    path = Path(tempfile.mkdtemp(prefix="orchestra-bench-tracing-")) / "run.jsonl"
    jsonl = ot.configure(jsonl=path, set_global=False)  # a provider of its own, as users get
    assert jsonl is not None
    dag = build(tasks)
    figures: dict[str, list[float]] = {"b": [], "j": []}
    spans: dict[str, list[int]] = {"b": [], "j": []}

    async def one(config: str, keep: bool) -> None:
        provider = in_memory if config == "b" else jsonl
        ot.set_tracer_provider(provider)
        cpu = await timed(dag, provider)
        if config == "b":
            kept = len(memory.get_finished_spans())
        else:  # distinct spans: one written twice is not two
            kept = len({span["spanId"] for span in ot.read_jsonl(path)})
        memory.clear()
        path.write_text("")  # the next run's spans alone (each line is appended)
        if keep:
            figures[config].append(cpu)
            spans[config].append(kept)

    async def main() -> None:
        for config in ("b", "j"):
            await one(config, keep=False)  # warm up
        for _ in range(ROUNDS):
            for config in ("b", "j"):
                await one(config, keep=True)

    anyio.run(main)
    jsonl.shutdown()
    path.unlink()
    print(json.dumps({"cpu": figures, "spans": spans}))


def run_child(*args: str) -> dict[str, Any]:
    env = dict(os.environ)
    env.pop("ORCHESTRA_TRACING", None)
    if args[0] == "c":
        env["ORCHESTRA_TRACING"] = "off"
    command = [sys.executable, __file__, "--child", *args]
    out = subprocess.run(command, env=env, check=True, capture_output=True, text=True, timeout=3600)
    assert "Queue full" not in out.stderr, out.stderr[-2000:]
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):7.2f} ({min(values):.2f}-{max(values):.2f})"


def main() -> int:
    print("orchestra tracing benchmark: no-op async tasks, max_concurrency=64; CPU µs per")
    print("task (this process and those it started), median (min-max)\n")
    n0 = SIZES[0]
    plain: dict[str, list[float]] = {"a": [], "c": []}
    for _ in range(SUBPROCESS_ROUNDS):
        for config in plain:
            plain[config] += [t / n0 * 1e6 for t in run_child(config, str(n0))["cpu"]]
    pairs = {n: run_child("bj", str(n)) for n in SIZES}
    labels = {
        "a": "(a) no tracing SDK",
        "c": "(c) tracing switched off",
        "b": "(b) SDK, every span in memory",
        "j": "(j) configure(jsonl=...)",
    }
    for config, values in plain.items():
        print(f"{labels[config]:<32} {n0:>7} tasks  {spread(values)}")
        print(f"FIGURE tracing/{config}/{n0} {statistics.median(values):.4g} us")
    per_task = {
        (config, n): [t / n * 1e6 for t in pairs[n]["cpu"][config]]
        for n in SIZES
        for config in "bj"
    }
    for (config, n), values in per_task.items():
        print(f"{labels[config]:<32} {n:>7} tasks  {spread(values)}")
        print(f"FIGURE tracing/{config}/{n} {statistics.median(values):.4g} us")
    a, c = (statistics.median(plain[k]) for k in ("a", "c"))
    b = statistics.median(per_task["b", n0])
    print(f"\na/c = {a / c:.3f}   target <= 1.05: {'ok' if a / c <= 1.05 else 'MISSED'}")
    print(f"b-c = {b - c:.2f} µs/task   target <= 30 µs: {'ok' if b - c <= 30 else 'MISSED'}")
    print(f"FIGURE tracing/a-over-c/{n0} {a / c:.4g} x")
    ok = a / c <= 1.05 and b - c <= 30
    for n in SIZES:
        want = n + 1  # a span per task attempt and the run's
        kept = pairs[n]["spans"]["j"]
        every = all(count == want for count in [*kept, *pairs[n]["spans"]["b"]])
        ratios = [j / b for b, j in zip(per_task["b", n], per_task["j", n], strict=True)]
        ratio = statistics.median(per_task["j", n]) / statistics.median(per_task["b", n])
        print(
            f"{n} tasks: spans in the file per run {sorted(set(kept))} of {want}"
            f" (target: every span): {'ok' if every else 'MISSED'};"
            f" (j)/(b) = {ratio:.2f}x (per round {min(ratios):.2f}-{max(ratios):.2f})"
            f" (target <= 1.5x): {'ok' if ratio <= 1.5 else 'MISSED'}"
        )
        print(f"FIGURE tracing/j-over-b/{n} {ratio:.4g} x")
        ok &= every and ratio <= 1.5
    return 0 if ok else 1


if __name__ == "__main__":
    if "--child" in sys.argv:
        at = sys.argv.index("--child")
        config, tasks = sys.argv[at + 1], int(sys.argv[at + 2])
        if config == "bj":
            child_pair(tasks)
        else:
            child_plain(config, tasks)
    else:
        sys.exit(main())
