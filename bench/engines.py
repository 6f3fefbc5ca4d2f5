"""The integrations' cost over the engines they plug into, as ratios measured in one run.

- Hamilton, a 1,000-node layered graph of no-op nodes: ``HookAdapter()`` with no hooks
  against plain Hamilton (target <= 1.15x), and with 5 no-op hooks (target <= 1.5x).
- Prefect, a flow of 200 no-op tasks on the local API: tasks ``hooked`` with 5 no-op
  hooks against plain tasks (target <= 1.1x).

Each figure is the best of a few rounds, baselines interleaved with the measured runs.
"""

from __future__ import annotations

import gc
import logging
import time
from collections.abc import Callable
from typing import Any

import orchestra

LAYERS, WIDTH = 10, 100  # 1,000 nodes
PREFECT_TASKS = 200


class NoOp(orchestra.TaskHooks):
    def before_execute(self, ctx: orchestra.TaskHookContext) -> None:
        return None

    def after_execute(self, ctx: orchestra.TaskHookContext, result: Any) -> None:
        return None

    def on_failure(self, ctx: orchestra.TaskHookContext, error: BaseException) -> None:
        return None


def best(fn: Callable[[], object], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        gc.collect()
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return min(times)


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
    rounds = 7
    base = best(lambda: plain.execute(final), rounds)
    t_bare = best(lambda: bare.execute(final), rounds)
    base = min(base, best(lambda: plain.execute(final), rounds))
    t_hooked = best(lambda: hooked.execute(final), rounds)
    n = LAYERS * WIDTH
    print(f"hamilton, {n} no-op nodes: plain {base * 1e3:.1f} ms ({base / n * 1e6:.1f} us/node)")
    print(f"  no hooks: {t_bare * 1e3:.1f} ms, ratio {t_bare / base:.2f}x (target <= 1.15x)")
    print(
        f"  5 no-op hooks: {t_hooked * 1e3:.1f} ms, ratio {t_hooked / base:.2f}x (target <= 1.5x)"
    )


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
        rounds = 3
        base = best(plain, rounds)
        t_hooked = best(hooked, rounds)
        base = min(base, best(plain, rounds))
    print(f"prefect, {PREFECT_TASKS} no-op tasks: plain {base:.2f} s")
    print(
        f"  hooked, 5 no-op hooks: {t_hooked:.2f} s, ratio {t_hooked / base:.2f}x (target <= 1.1x)"
    )


if __name__ == "__main__":
    bench_hamilton()
    bench_prefect()
