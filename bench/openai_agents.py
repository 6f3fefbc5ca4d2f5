"""Overhead of the OpenAI Agents bridge against a plain ``Runner.run``.

Measures, in the same process, the time per run of one agent that calls a function tool
twice and answers, on the SDK's scripted model (no network, the SDK's own tracing off):

- ``Runner.run``: the SDK alone (the baseline);
- ``bridge.run, no hooks``: ``OrchestraRunHooks().run(...)``: the guard, the run's
  lifecycle and its bookkeeping, with nothing listening;
- ``bridge.run, Python hooks``: with a no-op ``SubagentHooks`` and a no-op ``TaskHooks``
  (every agent and tool-call moment called).

Prints ms per run and the ratio to the baseline (best of 5 interleaved rounds, after a
warm-up round). Run with ``python bench/openai_agents.py [N]``.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from agents import Agent, Runner, function_tool, set_tracing_disabled
from agents.testing import ScriptedModel, assistant_message, function_call
from orchestra_openai_agents import OrchestraRunHooks

from orchestra import (
    SubagentHookContext,
    SubagentHooks,
    TaskHookContext,
    TaskHooks,
)


@function_tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


class NoopAgents(SubagentHooks):
    def before_dispatch(self, ctx: SubagentHookContext) -> None:
        return None

    def after_dispatch(self, ctx: SubagentHookContext, result: Any) -> None:
        return None


class NoopTools(TaskHooks):
    def before_execute(self, ctx: TaskHookContext) -> None:
        return None

    def after_execute(self, ctx: TaskHookContext, result: Any) -> None:
        return None


def script() -> list[Any]:
    return [
        [function_call("add", {"a": 1, "b": 2}, call_id="c1")],
        [function_call("add", {"a": 3, "b": 4}, call_id="c2")],
        [assistant_message("3 and 7")],
    ]


async def per_run(
    n: int, runs: dict[str, Callable[[Agent[Any]], Awaitable[Any]]]
) -> dict[str, float]:
    """Seconds per run of each variant: best of 5 interleaved rounds of ``n`` runs."""
    model = ScriptedModel()
    agent = Agent(name="calc", model=model, tools=[add])
    best = dict.fromkeys(runs, float("inf"))
    for round_ in range(6):  # round 0 warms every variant up and is not counted
        for name, run in runs.items():
            model.extend([step for _ in range(n) for step in script()])
            start = time.perf_counter()
            for _ in range(n):
                await run(agent)
            if round_:
                best[name] = min(best[name], (time.perf_counter() - start) / n)
    return best


async def main(n: int) -> None:
    os.environ.setdefault("OPENAI_API_KEY", "sk-bench-offline")  # the SDK wants one; unused
    set_tracing_disabled(True)
    plain = OrchestraRunHooks()
    hooked = OrchestraRunHooks([NoopAgents(), NoopTools()])

    async def sdk(agent: Agent[Any]) -> Any:
        return await Runner.run(agent, "add")

    async def bridge(agent: Agent[Any]) -> Any:
        return await plain.run(agent, "add")

    async def with_hooks(agent: Agent[Any]) -> Any:
        return await hooked.run(agent, "add")

    best = await per_run(
        n,
        {
            "Runner.run": sdk,
            "bridge.run, no hooks": bridge,
            "bridge.run, Python hooks": with_hooks,
        },
    )
    base = best["Runner.run"]
    print(f"OpenAI Agents bridge, {n} runs of 3 model turns and 2 tool calls, best of 5")
    for name, seconds in best.items():
        print(f"  {name:<26} {seconds * 1e3:8.3f} ms/run   x{seconds / base:5.2f}")


if __name__ == "__main__":
    anyio.run(main, int(sys.argv[1]) if len(sys.argv) > 1 else 200)
