"""Journal benchmark: what journaling a run costs, and how fast a finished run resumes.

10,000 no-op tasks, ``orchestra.run(dag)`` (default concurrency), on both anyio backends, in
two shapes (``wide``: 10,000 independent tasks; ``layered``: 100 layers of 100, each
node with 3 deps in the layer before), measured in this process, interleaved per round:

(a) the run without a journal (the baseline)
(b) the same run with ``journal=PATH`` (the embedded SQLite journal: one file reused by
    every run, as a project's ``runs.db`` is; opening it is included), its payloads
    authenticated (an HMAC tag under the user's journal key) and the run holding its lease
(c) warm resume: ``resume=`` the last journaled run in this process (file open, code
    digests made): every task reused, none runs; each payload's tag is checked
(d) cold resume: the same resume in a new process, timed inside it around ``run_sync``
    (nothing open or cached: the journal file, its key, the DAG's code digests)

Targets: (b) / (a) <= 1.35 (CPU time: both threads, the event loop and the journal's
writer; other processes' load barely moves it, so on a shared machine it is the ratio to
judge; wall time is printed beside it); (c) <= 0.2 s; (d) <= 0.5 s, each judged in wall
time and in CPU time (on a loaded machine wall time mostly measures the wait for a
core). Each figure is the median of the rounds with its min-max; a ratio is taken per
round, against the plain run beside it.

Run: ``python bench/journal.py [--quick]`` (``make bench`` runs it).
"""

from __future__ import annotations

import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio

import orchestra
from orchestra import DAG, Task

N = 10_000
QUICK = "--quick" in sys.argv
ROUNDS = 3 if QUICK else 7
RATIO_TARGET = 1.35
WARM_TARGET = 0.2
COLD_TARGET = 0.5
KEYS = ("plain", "journaled", "warm", "cold")


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


SHAPES = {"wide": wide, "layered": layered}


def cold_resume(shape: str, journal: Path, run_id: str, backend: str) -> tuple[float, float]:
    """(wall, cpu) seconds of ``run_sync(resume=run_id)`` in a new process."""
    out = subprocess.run(
        [sys.executable, __file__, "--cold", shape, str(journal), run_id, backend],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parent)},
    ).stdout
    wall, cpu = json.loads(out)
    return float(wall), float(cpu)


def _cold_child(shape: str, journal: str, run_id: str, backend: str) -> None:
    dag = SHAPES[shape]()
    wall, cpu = time.perf_counter(), time.process_time()
    result = orchestra.run_sync(dag, journal=journal, resume=run_id, backend=backend)
    figures = [time.perf_counter() - wall, time.process_time() - cpu]
    assert len(result.reused) == N, len(result.reused)
    print(json.dumps(figures))


async def measure(
    shape: str, dag: DAG, journal: Path, backend: str
) -> dict[str, list[tuple[float, float]]]:
    """(wall, cpu) seconds of each configuration, per round."""
    times: dict[str, list[tuple[float, float]]] = {key: [] for key in KEYS}

    async def timed(key: str, **kw: object) -> orchestra.RunResult:
        wall, cpu = time.perf_counter(), time.process_time()
        result = await orchestra.run(dag, **kw)  # type: ignore[arg-type]
        times[key].append((time.perf_counter() - wall, time.process_time() - cpu))
        return result

    await orchestra.run(dag)  # warm up: imports, code digests, the file's schema, the key
    await orchestra.run(dag, journal=journal)
    for _ in range(ROUNDS):
        await timed("plain")
        result = await timed("journaled", journal=journal)
        again = await timed("warm", journal=journal, resume=result.run_id)
        assert len(again.reused) == N, len(again.reused)
        cold = await anyio.to_thread.run_sync(cold_resume, shape, journal, result.run_id, backend)
        times["cold"].append(cold)
    return times


def spread(values: list[float], scale: float = 1e3, digits: int = 1) -> str:
    """Median (min-max), scaled (ms by default)."""
    med, low, high = (v * scale for v in (statistics.median(values), min(values), max(values)))
    return f"{med:7.{digits}f} ({low:.{digits}f}-{high:.{digits}f})"


def main() -> None:
    print(f"orchestra journal benchmark, {N} no-op tasks, {ROUNDS} interleaved rounds")
    print(f"python {sys.version.split()[0]}; figures: median (min-max)\n")
    ratios: list[float] = []
    wall_ratios: list[float] = []
    resumes: dict[str, list[float]] = {"warm": [], "cold": [], "warm cpu": [], "cold cpu": []}
    with tempfile.TemporaryDirectory() as tmp:
        for backend in ("asyncio", "trio"):
            for shape, build in SHAPES.items():
                dag = build()
                journal = Path(tmp) / f"{backend}-{shape}.db"
                t = anyio.run(measure, shape, dag, journal, backend, backend=backend)
                wall = {k: [w for w, _ in v] for k, v in t.items()}
                cpu = {k: [c for _, c in v] for k, v in t.items()}
                # per round: the journaled run against the plain run beside it
                cpu_ratio = [b / a for a, b in zip(cpu["plain"], cpu["journaled"], strict=True)]
                wall_ratio = [b / a for a, b in zip(wall["plain"], wall["journaled"], strict=True)]
                ratios.append(statistics.median(cpu_ratio))
                wall_ratios.append(statistics.median(wall_ratio))
                for key in ("warm", "cold"):
                    resumes[key].append(statistics.median(wall[key]))
                    resumes[f"{key} cpu"].append(statistics.median(cpu[key]))
                print(f"[{backend}, {shape}]                wall ms               cpu ms")
                names = {
                    "plain": "(a) no journal",
                    "journaled": "(b) journal=runs.db",
                    "warm": "(c) warm resume",
                    "cold": "(d) cold resume",
                }
                for key, name in names.items():
                    print(f"  {name:22} {spread(wall[key]):24} {spread(cpu[key])}")
                print(f"  b/a: cpu {spread(cpu_ratio, 1, 2)}   wall {spread(wall_ratio, 1, 2)}")
                print()
    print(judge("journaled / unjournaled, cpu", max(ratios), RATIO_TARGET, ""))
    print(f"journaled / unjournaled, wall, worst median: {max(wall_ratios):5.2f} (shown)")
    for key, target in (("warm", WARM_TARGET), ("cold", COLD_TARGET)):
        for clock in ("", " cpu"):
            print(
                judge(f"{key} resume{clock or ', wall'}", max(resumes[key + clock]), target, " s")
            )


def judge(label: str, worst: float, target: float, unit: str) -> str:
    """One verdict line: the worst median against its target."""
    verdict = "ok" if worst <= target else "OVER TARGET"
    return f"{label}, worst median: {worst:5.3f}{unit} (target <= {target}{unit}) {verdict}"


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--cold":
        _cold_child(*sys.argv[2:6])
    else:
        main()
