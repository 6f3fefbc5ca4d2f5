"""The DAG of the main demo, run by ``examples/main_demo.py`` through ``orchestra run``.

A small "research report" pipeline, deterministic and offline (the agents are fakes):

- ``topics`` lists what to research.
- ``sources`` calls a flaky source index: its first two calls fail with
  ``ConnectionError``; the ``RetryPolicy`` in ``hooks`` (tenacity's
  ``stop_after_attempt(4)``) retries it and the third call answers.
- ``research`` is executed by the ``researcher`` subagent, which is overloaded: the
  ``Router`` subagent hook answers ``Delegate("librarian")`` and the fallback answers.
- ``draft`` is executed by the ``writer`` subagent, which uses the ``Bash`` tool. The
  YAML hooks (``orchestra.yaml``) guard that tool: ``ls`` is allowed, ``rm -rf`` is
  blocked by a command hook, and the writer carries on without it.
- ``report`` joins the results.

``orchestra run`` reads the module-level ``hooks`` (task hooks), ``agents`` and
``agent_hooks`` (the dispatcher is built from them, with the YAML subagent hooks), and
``tools`` (guarded in place by ``--hooks``).
"""

from __future__ import annotations

from typing import Any

from tenacity import retry_if_exception_type, stop_after_attempt, wait_fixed

import orchestra
from orchestra import Delegate, RetryPolicy, Subagent, SubagentHookContext, SubagentHooks
from orchestra.agents import AgentContext

dag = orchestra.DAG("research-report")


# -- tools ---------------------------------------------------------------------------------


async def bash(command: str) -> str:
    """A fake shell: answers what it would have run (nothing runs for real)."""
    return f"$ {command}\n(ok)"


# Called through this dict, so `orchestra run --hooks` can guard them in place.
tools: dict[str, Any] = {"Bash": bash}


# -- agents --------------------------------------------------------------------------------


class Overloaded(Exception):
    """An agent that cannot take work right now."""


class Researcher(Subagent):
    """Always overloaded: the Router delegates its work to the librarian."""

    name = "researcher"

    async def run(self, task: str, ctx: AgentContext) -> str:
        raise Overloaded("researcher: too many requests")


class Librarian(Subagent):
    """The fallback researcher."""

    name = "librarian"

    async def run(self, task: str, ctx: AgentContext) -> str:
        return f"notes on {task} (from the library)"


class Writer(Subagent):
    """Drafts the report; tries to tidy up with a destructive command, which is refused."""

    name = "writer"

    async def run(self, task: str, ctx: AgentContext) -> str:
        listing = await tools["Bash"](command="ls notes/")
        try:
            await tools["Bash"](command="rm -rf notes/")
        except orchestra.ToolDenied as denied:
            cleanup = f"cleanup skipped ({denied.reason})"
        else:
            cleanup = "cleaned up"
        return f"draft of {task}; {listing.splitlines()[0]}; {cleanup}"


class Router(SubagentHooks):
    """Sends the work of an overloaded agent to the librarian."""

    def on_failure(self, ctx: SubagentHookContext, error: BaseException) -> Delegate | None:
        if isinstance(error, Overloaded) and "librarian" not in ctx.delegated_from:
            return Delegate("librarian", reason=f"{ctx.subagent_name} is overloaded")
        return None


agents = [Researcher(), Librarian(), Writer()]
agent_hooks = [Router()]
hooks = [
    RetryPolicy(
        stop=stop_after_attempt(4),
        wait=wait_fixed(0.05),
        retry=retry_if_exception_type(ConnectionError),
    )
]


# -- the DAG -------------------------------------------------------------------------------

_index_calls = 0


@dag.task
async def topics() -> list[str]:
    return ["octopus hearts", "squid ink"]


@dag.task
def sources() -> list[str]:
    """A flaky source index: fails twice, then answers."""
    global _index_calls
    _index_calls += 1
    if _index_calls <= 2:
        raise ConnectionError(f"source index unavailable (call {_index_calls})")
    return ["encyclopedia", "journal"]


@dag.task(deps=[topics, sources], agent="researcher")
def research(topics: list[str], sources: list[str]) -> str:
    return f"{', '.join(topics)} in {', '.join(sources)}"


@dag.task(deps=[research], agent="writer")
def draft(research: str) -> str:
    return f"a report from: {research}"


@dag.task(deps=[research, draft])
def report(research: str, draft: str) -> str:
    return f"REPORT\n- {research}\n- {draft}"
