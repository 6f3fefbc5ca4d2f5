"""orchestra-hooks-crewai: one policy in CrewAI crews and agents.

Guard a crew (or one agent) once::

    import orchestra.skills
    from orchestra_crewai import with_hooks

    registry = orchestra.skills.load("orchestra.yaml")
    crew = with_hooks(Crew(agents=[...], tasks=[...]), registry=registry, hooks=[RetryPolicy()])
    crew.kickoff()

- Every tool call of the crew's agents goes through ``PreToolUse`` in CrewAI's own
  before-tool-call hook: a deny is what the agent reads (``Tool call denied: {reason}``)
  and the tool's body never runs; a ``modified_input`` (judged by the guards again) is
  what the tool gets; a hook that raises or times out blocks the call (CrewAI's own
  dispatcher would run it).
- ``PostToolUse`` (an ``output`` rewrites what the agent reads) after it, or
  ``PostToolUseFailure``: ``TaskHooks.on_failure`` answering ``Retry`` runs the tool again.
- "Delegate work to coworker" and "Ask question to coworker" are subagent dispatches:
  ``SubagentStart``/``SubagentStop`` and ``SubagentHooks`` (``Fail`` refuses, ``Delegate``
  picks another coworker, ``Replace`` the task or the answer).
- CrewAI's hooks are synchronous; the policy runs on an event loop of its own, so crews,
  ``kickoff_async``, ``akickoff`` and flows all work without a deadlock.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, TypeVar

from orchestra_crewai._hooks import DENIED as DENIED
from orchestra_crewai._hooks import guard as _guard
from orchestra_crewai._policy import Policy as _Policy

if TYPE_CHECKING:
    from orchestra.skills import HookRegistry

__version__ = "0.1.0"

__all__ = ["DENIED", "with_hooks"]

_Target = TypeVar("_Target")


def with_hooks(
    crew_or_agent: _Target,
    registry: HookRegistry | None = None,
    hooks: Iterable[object] = (),
    subagent_hooks: Iterable[object] = (),
    *,
    hook_timeout: float | None = 60.0,
) -> _Target:
    """Put a CrewAI ``Crew`` (all its agents) or one ``Agent`` under orchestra's policy.

    Args:
        crew_or_agent: the crew or agent to guard; guarded in place and returned. Calling
            ``with_hooks`` again on it replaces its policy (its hooks never run twice).
        registry: YAML/Claude Code hooks (``orchestra.skills.load``): ``PreToolUse``,
            ``PostToolUse``, ``PostToolUseFailure``, ``PermissionDenied``,
            ``SubagentStart``/``SubagentStop`` (delegations); ``record=`` and
            ``enforce: false`` work as anywhere.
        hooks: ``TaskHooks``: each tool call is a task (its id: the tool's name).
        subagent_hooks: ``SubagentHooks``: each delegation to a coworker is a dispatch.
        hook_timeout: seconds the policy may take for one hook point (the Python hooks'
            timeout too); past it the call is refused.

    Returns:
        ``crew_or_agent`` itself.

    Raises:
        TypeError: a hook object the chains refuse (see ``orchestra.HookChain``).
    """
    _guard(crew_or_agent, _Policy(registry, hooks, subagent_hooks, hook_timeout))
    return crew_or_agent


with_hooks.__module__ = __name__
