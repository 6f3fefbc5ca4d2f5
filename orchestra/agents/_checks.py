"""The checks of what a ``Dispatcher`` is given: its agents, its limits, a timeout."""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Mapping

from orchestra.agents._types import Subagent

__all__ = ["check_agents", "check_count", "check_timeout"]


def check_agents(agents: Iterable[Subagent]) -> dict[str, Subagent]:
    """The agents by name.

    Raises:
        TypeError: not an iterable of agents, an agent without ``name`` or a callable
            ``run``, or a sync ``run``.
        ValueError: an empty or non-str name, or two agents of one name.
    """
    if isinstance(agents, str | bytes | Mapping):
        raise TypeError(
            f"Dispatcher takes an iterable of agents (objects with name and run), got {agents!r}"
        )
    registry: dict[str, Subagent] = {}
    for agent in agents:
        name = getattr(agent, "name", None)
        if name is None:
            raise TypeError(
                f"{agent!r} is not a subagent: it has no 'name' "
                "(a subagent needs name: str and async run(task, ctx))"
            )
        if not isinstance(name, str) or not name:
            raise ValueError(f"agent {agent!r} needs a non-empty str name, got {name!r}")
        run = getattr(agent, "run", None)
        if not callable(run):
            raise TypeError(
                f"agent {name!r} ({agent!r}) is not a subagent: it has no callable 'run' "
                "(a subagent needs name: str and async run(task, ctx))"
            )
        if inspect.isroutine(run) and not inspect.iscoroutinefunction(run):
            raise TypeError(
                f"agent {name!r}: run must be a coroutine function (async def run(self, task, "
                f"ctx)), got {run!r}"
            )
        if name in registry:
            raise ValueError(
                f"duplicate agent name {name!r}: {registry[name]!r} and {agent!r}; "
                "agent names must be unique"
            )
        registry[name] = agent
    return registry


def check_count(what: str, value: object, minimum: int) -> int:
    """``value``, an int at least ``minimum``.

    Raises:
        ValueError: it is not (``what`` names it).
    """
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{what} must be an int >= {minimum}, got {value!r}")
    return value


def check_timeout(name: str, timeout: object) -> float:
    """A dispatch's ``timeout``, a number > 0.

    Raises:
        ValueError: it is not (a bool, NaN, 0 or less); ``name`` is the agent's.
    """
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, int | float)
        or not timeout > 0  # NaN too
    ):
        raise ValueError(
            f"dispatch to agent {name!r}: timeout must be a number > 0 or None, got {timeout!r}"
        )
    return timeout
