"""The integrations' cost over the engines they plug into, as ratios measured in one run.

- Hamilton, a 1,000-node layered graph of no-op nodes: ``HookAdapter()`` with no hooks
  against plain Hamilton (target <= 1.15x), and with 5 no-op hooks (target <= 1.5x).
- Prefect, a flow of 200 no-op tasks on the local API: tasks ``hooked`` with 5 no-op
  hooks against plain tasks (target <= 1.1x).

The variants run in turn in every round (so a burst of load from other processes hits
them alike); each ratio is the median of the rounds' ratios, with their min-max, and
the verdict is on the median. Ratios are given in CPU time of this process (what the
integration adds; other processes' load does not count) and in wall time. Prefect's
API server is another process: its work shows in wall time only.
"""

from __future__ import annotations

import gc
import logging
import statistics
import time
from collections.abc import Callable
from typing import Any

import orchestra

LAYERS, WIDTH = 10, 100  # 1,000 nodes
PREFECT_TASKS = 200
Sample = tuple[float, float]  # (CPU seconds, wall seconds) of one round


class NoOp(orchestra.TaskHooks):
    def before_execute(self, ctx: orchestra.TaskHookContext) -> None:
        return None

    def after_execute(self, ctx: orchestra.TaskHookContext, result: Any) -> None:
        return None

    def on_failure(self, ctx: orchestra.TaskHookContext, error: BaseException) -> None:
        return None


def rounds(variants: dict[str, Callable[[], object]], n: int) -> dict[str, list[Sample]]:
    """(CPU seconds, wall seconds) of each variant in each of ``n`` interleaved rounds."""
    samples: dict[str, list[Sample]] = {k: [] for k in variants}
    for _ in range(n):
        for name, fn in variants.items():
            gc.collect()
            cpu, wall = time.process_time(), time.perf_counter()
            fn()
            samples[name].append((time.process_time() - cpu, time.perf_counter() - wall))
    return samples


def median_cpu(samples: list[Sample]) -> float:
    return statistics.median(s[0] for s in samples)


def report(name: str, t: list[Sample], base: list[Sample], target: float) -> None:
    """The per-round ratios against ``base`` (CPU, then wall): median (min-max), verdict."""
    cpu = [s[0] / b[0] for s, b in zip(t, base, strict=True)]
    wall = [s[1] / b[1] for s, b in zip(t, base, strict=True)]
    ratio = statistics.median(cpu)
    ok = "ok" if ratio <= target else "MISSED"
    print(
        f"  {name}: cpu {median_cpu(t) * 1e3:.1f} ms, ratio {ratio:.2f}x "
        f"({min(cpu):.2f}-{max(cpu):.2f}; target <= {target}x: {ok}); "
        f"wall ratio {statistics.median(wall):.2f}x ({min(wall):.2f}-{max(wall):.2f})"
    )


def layered_module() -> Any:
    from hamilton import ad_hoc_utils

    fns = []
    for layer in range(LAYERS):
        for i in range(WIDTH):
            deps = [f"n{layer - 1}_{i}", f"n{layer - 1}_{(i + 1) % WIDTH}"] if layer else []
            params = ", ".join(f"{d}: int" for d in deps)
            scope: dict[str, Any] = {}
            exec(f"def n{layer}_{i}({params}) -> int:\n    return 1\n", scope)
            fns.append(scope[f"n{layer}_{i}"])
    return ad_hoc_utils.create_temporary_module(*fns)


def bench_hamilton() -> None:
    from hamilton import driver
    from orchestra_hamilton import HookAdapter

    module = layered_module()
    final = [f"n{LAYERS - 1}_{i}" for i in range(WIDTH)]
    plain = driver.Builder().with_modules(module).build()
    bare = driver.Builder().with_modules(module).with_adapters(HookAdapter()).build()
    hooked = (
        driver.Builder()
        .with_modules(module)
        .with_adapters(HookAdapter(*(NoOp() for _ in range(5))))
        .build()
    )
    times = rounds(
        {
            "plain": lambda: plain.execute(final),
            "bare": lambda: bare.execute(final),
            "hooked": lambda: hooked.execute(final),
        },
        9,
    )
    n = LAYERS * WIDTH
    base = times["plain"]
    cpu = median_cpu(base)
    print(f"hamilton, {n} no-op nodes: plain cpu {cpu * 1e3:.1f} ms ({cpu / n * 1e6:.1f} us/node)")
    report("HookAdapter(), no hooks", times["bare"], base, 1.15)
    report("HookAdapter(5 no-op hooks)", times["hooked"], base, 1.5)


def bench_prefect() -> None:
    import orchestra_prefect
    from orchestra_prefect.testing import local_api
    from prefect import flow, task

    for name in ("prefect", "prefect.task_runs", "prefect.flow_runs"):
        logging.getLogger(name).setLevel(logging.WARNING)

    @task(persist_result=False)
    def noop(i: int) -> int:
        return i

    hooked_noop = orchestra_prefect.hooked(*(NoOp() for _ in range(5)))(noop)

    def flow_of(t: Any) -> Any:
        @flow(persist_result=False)
        def many() -> None:
            for i in range(PREFECT_TASKS):
                t(i)

        return many

    plain, hooked = flow_of(noop), flow_of(hooked_noop)
    with local_api():
        plain()  # warm up: server, client, caches
        hooked()
        times = rounds({"plain": plain, "hooked": hooked}, 5)
    cpu = median_cpu(times["plain"])
    wall = statistics.median(s[1] for s in times["plain"])
    print(f"prefect, {PREFECT_TASKS} no-op tasks: plain cpu {cpu:.2f} s, wall {wall:.2f} s")
    report("hooked, 5 no-op hooks", times["hooked"], times["plain"], 1.1)


if __name__ == "__main__":
    bench_hamilton()
    bench_prefect()
