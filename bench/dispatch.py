"""Overhead of a SYNC subagent dispatch against a direct ``await agent.run(...)``.

Measures, in the same process and on each anyio backend, the time per call of:

- ``direct``: ``await agent.run(task, ctx)`` on a no-op agent (the baseline);
- ``dispatch, 0 hooks``: ``await dispatcher.dispatch(name, task)`` with no hooks;
- ``dispatch, 5 hooks``: the same with five no-op hooks overriding ``before_dispatch``,
  ``after_dispatch`` and ``on_failure``.

Prints CPU µs per call (process time: other processes' load on a shared machine does not
stretch it), the overhead over the direct call, and the ratio to it. Target: a dispatch
with no hooks and no tracing SDK costs at most 3 µs (tracing is decided once per
``Dispatcher``, not per call). Run with ``python bench/dispatch.py [N]``.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from orchestra import Dispatcher, SubagentHookContext, SubagentHooks
from orchestra.agents import AgentContext

TARGET_US = 3.0


class Noop:
    name = "noop"

    async def run(self, task: str, ctx: Any) -> str:
        return task


class NoopHooks(SubagentHooks):
    def before_dispatch(self, ctx: SubagentHookContext) -> None:
        return None

    def after_dispatch(self, ctx: SubagentHookContext, result: Any) -> None:
        return None

    def on_failure(self, ctx: SubagentHookContext, error: BaseException) -> None:
        return None


async def per_call(fn: Callable[[], Awaitable[Any]], n: int, repeats: int = 5) -> float:
    """Best time per call over ``repeats`` loops of ``n`` calls, in µs."""
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        for _ in range(n):
            await fn()
        best = min(best, time.process_time() - start)
    return best / n * 1e6


async def measure(n: int) -> dict[str, float]:
    agent = Noop()
    bare = Dispatcher([agent])
    hooked = Dispatcher([agent], hooks=[NoopHooks() for _ in range(5)])
    ctx: AgentContext | None = None

    async def direct() -> Any:
        return await agent.run("task", ctx)

    async def dispatch0() -> Any:
        return await bare.dispatch("noop", "task")

    async def dispatch5() -> Any:
        return await hooked.dispatch("noop", "task")

    for fn in (direct, dispatch0, dispatch5):  # warm up
        await per_call(fn, n // 10 or 1, repeats=1)
    return {
        "direct await agent.run": await per_call(direct, n),
        "dispatch, 0 hooks": await per_call(dispatch0, n),
        "dispatch, 5 no-op hooks": await per_call(dispatch5, n),
    }


def main() -> int:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
    ok = True
    print(f"SYNC dispatch overhead, {n} calls per loop, best of 5 loops")
    for backend in ("asyncio", "trio"):
        results = anyio.run(measure, n, backend=backend)
        base = results["direct await agent.run"]
        print(f"\n[{backend}]")
        print(f"  {'':26} {'µs/call':>9} {'overhead µs':>12} {'ratio':>7}")
        for label, us in results.items():
            print(f"  {label:26} {us:9.2f} {us - base:12.2f} {us / base:6.1f}x")
        zero = results["dispatch, 0 hooks"]
        verdict = "OK" if zero <= TARGET_US else "OVER TARGET"
        print(f"  target: dispatch with no hooks <= {TARGET_US:.0f} µs: {zero:.2f} µs {verdict}")
        ok &= zero <= TARGET_US
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
