"""Journal benchmark: what journaling a run costs, and how fast a finished run resumes.

10,000 no-op tasks, ``orchestra.run(dag)`` (default concurrency), on both anyio backends, in
two shapes (``wide``: 10,000 independent tasks; ``layered``: 100 layers of 100, each
node with 3 deps in the layer before), measured in this process, alternating:

(a) the run without a journal (the baseline)
(b) the same run with ``journal=PATH`` (the embedded SQLite journal: one file reused by
    every run, as a project's ``runs.db`` is; opening it is included)
(c) ``resume=`` the last journaled run: every task reused, none runs

Targets: (b) / (a) <= 1.5; (c) <= 0.2 s. Each figure is the median of 5 rounds (a, b
and c interleaved in each round), in wall time, and beside it the process CPU time
(both threads: the event loop and the journal's writer), which other processes' load
barely moves: on a shared machine, judge the ratio by CPU time.

Run: ``python bench/journal.py [--quick]`` (``make bench`` runs it).
"""

from __future__ import annotations

import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio

import orchestra
from orchestra import DAG, Task

N = 10_000
QUICK = "--quick" in sys.argv
REPEAT = 3 if QUICK else 5
RATIO_TARGET = 1.5
RESUME_TARGET = 0.2


async def noop(**_: object) -> None:
    return None


def wide() -> DAG:
    dag = DAG("wide")
    for i in range(N):
        dag.add(Task(id=f"t{i}", fn=noop))
    return dag


def layered(layers: int = 100, width: int = 100, seed: int = 7) -> DAG:
    rng = random.Random(seed)
    dag = DAG("layered")
    for layer in range(layers):
        for j in range(width):
            deps = [f"l{layer - 1}_{k}" for k in rng.sample(range(width), 3)] if layer else []
            dag.add(Task(id=f"l{layer}_{j}", fn=noop, deps=deps))
    return dag


async def measure(dag: DAG, journal: Path) -> dict[str, tuple[float, float]]:
    """Median (wall, cpu) seconds of each configuration."""
    times: dict[str, list[tuple[float, float]]] = {"plain": [], "journaled": [], "resumed": []}

    async def timed(key: str, **kw: object) -> orchestra.RunResult:
        wall, cpu = time.perf_counter(), time.process_time()
        result = await orchestra.run(dag, **kw)  # type: ignore[arg-type]
        times[key].append((time.perf_counter() - wall, time.process_time() - cpu))
        return result

    await orchestra.run(dag)  # warm up: imports, code digests, the file's schema
    await orchestra.run(dag, journal=journal)
    for _ in range(REPEAT):
        await timed("plain")
        result = await timed("journaled", journal=journal)
        again = await timed("resumed", journal=journal, resume=result.run_id)
        assert len(again.reused) == N, len(again.reused)
    median = statistics.median
    return {
        key: (median(w for w, _ in runs), median(c for _, c in runs)) for key, runs in times.items()
    }


def main() -> None:
    print(f"orchestra journal benchmark, {N} no-op tasks, median of {REPEAT} (wall, cpu)")
    print(f"python {sys.version.split()[0]}\n")
    worst_ratio = worst_cpu_ratio = worst_resume = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for backend in ("asyncio", "trio"):
            for shape in (wide, layered):
                dag = shape()
                journal = Path(tmp) / f"{backend}-{shape.__name__}.db"
                t = anyio.run(measure, dag, journal, backend=backend)
                (a, a_cpu), (b, b_cpu), (c, c_cpu) = t["plain"], t["journaled"], t["resumed"]
                worst_ratio = max(worst_ratio, b / a)
                worst_cpu_ratio = max(worst_cpu_ratio, b_cpu / a_cpu)
                worst_resume = max(worst_resume, c)
                print(f"[{backend}, {shape.__name__}]")
                print(f"  (a) no journal          {a * 1e3:6.1f} ms   cpu {a_cpu * 1e3:6.1f} ms")
                print(
                    f"  (b) journal=runs.db     {b * 1e3:6.1f} ms   cpu {b_cpu * 1e3:6.1f} ms"
                    f"   b/a = {b / a:4.2f} (cpu {b_cpu / a_cpu:4.2f})"
                )
                print(f"  (c) resume, all reused  {c * 1e3:6.1f} ms   cpu {c_cpu * 1e3:6.1f} ms")
                print()
    ok_ratio = "ok" if worst_ratio <= RATIO_TARGET else "OVER TARGET"
    ok_resume = "ok" if worst_resume <= RESUME_TARGET else "OVER TARGET"
    print(
        f"journaled / unjournaled, worst: {worst_ratio:4.2f} (cpu {worst_cpu_ratio:4.2f}) "
        f"(target <= {RATIO_TARGET}) {ok_ratio}"
    )
    print(
        f"resume of a finished run, worst: {worst_resume:5.3f} s "
        f"(target <= {RESUME_TARGET}) {ok_resume}"
    )


if __name__ == "__main__":
    main()
