"""A planner fans a research question out to three subagents; a DAG task joins the answers.

Everything is deterministic and offline: the agents are small fakes.

- ``web_search`` is flaky: its first two calls time out. A ``RetryPolicy`` (tenacity's
  ``stop_after_attempt(3)``) retries it, and the third call answers.
- ``paper_db`` is down for good. A ``SubagentHooks`` answers ``Delegate("library")``, so
  the work moves to the ``library`` fallback.
- ``archivist`` is slow, so the planner forks it (``ExecutionMode.FORK``): it works beside
  the other two, and the final task awaits its handle.

The DAG: ``plan`` -> (``web``, ``papers``: tasks executed by agents) -> ``answer``.
Both ``TaskHooks`` and ``SubagentHooks`` narrate what happens. Run it with
``python examples/agents_research.py``, or ``orchestra run examples/agents_research.py``:
the command builds a ``Dispatcher`` from the module-level ``agents`` and ``agent_hooks``
and passes it to the factory ``build(dispatcher)``.
"""

from __future__ import annotations

from typing import Any

import anyio
from tenacity import retry_if_exception_type, stop_after_attempt

import orchestra
from orchestra import (
    DAG,
    Delegate,
    Dispatcher,
    ExecutionMode,
    RetryPolicy,
    Subagent,
    SubagentHookContext,
    SubagentHooks,
    SubagentResult,
    TaskHookContext,
    TaskHooks,
)
from orchestra.agents import AgentContext, Fork

QUESTION = "Why do octopuses have three hearts?"


# -- the fake agents ---------------------------------------------------------------------------


class ServiceDown(Exception):
    """A backend that will not come back during this run."""


class WebSearch(Subagent):
    """Times out on its first two calls, then answers."""

    name = "web_search"

    def __init__(self) -> None:
        self.calls = 0

    async def run(self, task: str, ctx: AgentContext) -> str:
        self.calls += 1
        if self.calls <= 2:
            raise ConnectionError("search API timed out")
        return (
            "two branchial hearts pump blood through the gills, one systemic heart feeds the body"
        )


class PaperDB(Subagent):
    """Always down."""

    name = "paper_db"

    async def run(self, task: str, ctx: AgentContext) -> str:
        raise ServiceDown("paper_db: 503 Service Unavailable")


class Library(Subagent):
    """The fallback for paper_db."""

    name = "library"

    async def run(self, task: str, ctx: AgentContext) -> str:
        return "copper-based hemocyanin carries oxygen poorly, so extra pumping is needed"


class Archivist(Subagent):
    """Slow (it yields to the others a few times), so it is forked."""

    name = "archivist"

    async def run(self, task: str, ctx: AgentContext) -> str:
        for _ in range(5):
            await anyio.lowlevel.checkpoint()
        return "cephalopod circulation has been described since Aristotle"


# -- hooks -----------------------------------------------------------------------------------


class FallBackToLibrary(SubagentHooks):
    """When paper_db is down, hand its work to the library."""

    def on_failure(self, ctx: SubagentHookContext, error: BaseException) -> Delegate | None:
        if ctx.subagent_name == "paper_db" and isinstance(error, ServiceDown):
            return Delegate("library", reason="paper_db is down")
        return None


class Narrator(TaskHooks, SubagentHooks):
    """Prints each moment, and keeps every SubagentResult for the summary."""

    def __init__(self) -> None:
        self.results: dict[str, tuple[ExecutionMode, SubagentResult]] = {}

    # async: a DAG run calls a def hook in a worker thread, where two prints at once
    # could mix their lines; these print on the event loop, one line at a time
    async def before_execute(self, ctx: TaskHookContext) -> None:
        by = f" (executed by agent {ctx.executor})" if ctx.executor else ""
        print(f"  task   {ctx.task.id:<8} starts{by}")

    async def after_execute(self, ctx: TaskHookContext, result: Any) -> None:
        print(f"  task   {ctx.task.id:<8} done")

    def before_dispatch(self, ctx: SubagentHookContext) -> None:
        via = f", delegated from {', '.join(ctx.delegated_from)}" if ctx.delegated_from else ""
        print(
            f"  agent  {ctx.subagent_name:<10} attempt {ctx.attempt} "
            f"({ctx.execution_mode.name}, from {ctx.parent_agent}{via})"
        )

    def after_dispatch(self, ctx: SubagentHookContext, result: SubagentResult) -> None:
        print(f"  agent  {ctx.subagent_name:<10} answered")
        asked = result.delegated_from[0] if result.delegated_from else result.agent
        self.results[asked] = (ctx.execution_mode, result)

    def on_failure(self, ctx: Any, error: BaseException) -> None:
        who = ctx.subagent_name if isinstance(ctx, SubagentHookContext) else ctx.task.id
        print(f"  agent  {who:<10} failed: {type(error).__name__}: {error}")


# -- the DAG ---------------------------------------------------------------------------------


narrator = Narrator()
agents = [WebSearch(), PaperDB(), Library(), Archivist()]
agent_hooks = [
    RetryPolicy(stop=stop_after_attempt(3), retry=retry_if_exception_type(ConnectionError)),
    FallBackToLibrary(),
    narrator,
]
hooks = [narrator]


def build(dispatcher: Dispatcher) -> DAG:
    """The DAG; ``plan`` forks the archivist through ``dispatcher`` itself."""
    d = dispatcher
    dag = DAG("research")

    @dag.task
    async def plan() -> dict[str, Any]:
        # The archivist is slow: fork it now, await its handle at the end.
        archive = await d.dispatch(
            "archivist", f"history of: {QUESTION}", parent="planner", mode=ExecutionMode.FORK
        )
        return {
            "web": f"search the web: {QUESTION}",
            "papers": f"find papers: {QUESTION}",
            "archive": archive,
        }

    @dag.task(deps=[plan], agent="web_search")
    def web(plan: dict[str, Any]) -> str:
        return str(plan["web"])

    @dag.task(deps=[plan], agent="paper_db")
    def papers(plan: dict[str, Any]) -> str:
        return str(plan["papers"])

    @dag.task(deps=[plan, web, papers])
    async def answer(plan: dict[str, Any], web: str, papers: str) -> str:
        fork: Fork = plan["archive"]
        archive = await fork
        return f"{web}; {papers}. ({archive.output})"

    return dag


async def main() -> orchestra.RunResult:
    print(f"Question: {QUESTION}\n")
    print("What happens:")
    async with Dispatcher(agents, hooks=agent_hooks) as d:
        result = await orchestra.run(build(d), hooks=hooks, dispatcher=d)

    print("\nSubagents:")
    for asked, (mode, r) in narrator.results.items():
        how = f"answered after {r.attempts} attempt{'s' if r.attempts > 1 else ''}"
        if r.delegated_from:
            how = f"was down; delegated to {r.agent}, which {how}"
        if mode is ExecutionMode.FORK:
            how = f"forked; {how}"
        print(f"  {asked:<10} {how}")
    print(f"\nRun: {'ok' if result.ok else 'FAILED'}; states: ", end="")
    print(", ".join(f"{tid}={state.value}" for tid, state in result.states.items()))
    print(f"\nAnswer: {result.outputs.get('answer')}")
    return result


if __name__ == "__main__":
    outcome = anyio.run(main)
    raise SystemExit(0 if outcome.ok else 1)
