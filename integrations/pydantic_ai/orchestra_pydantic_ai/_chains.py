"""The capability's hook chains: the user's hooks sorted by trait (internal).

Tool calls are tasks (``TaskHooks``: ``before_execute``, ``after_execute``,
``on_failure``); the agent run is a subagent dispatch (``SubagentHooks``). One object may
be both (``RetryPolicy`` is). Both are ``orchestra.HookChain``, compiled with the answers
the capability carries out at each moment (``carries``): any other answer is a hook
error and counts as no opinion.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from orchestra import Decision, Fail, HookChain, Replace, Retry, SubagentHooks, TaskHooks

__all__ = ["split_hooks"]

_AGENT_ANSWERS: Final[dict[str, tuple[type[Decision], ...]]] = {
    "before_dispatch": (Fail,),
    "after_dispatch": (Replace,),
    "on_failure": (Retry, Fail),
}


def split_hooks(hooks: Iterable[object], timeout: float | None) -> tuple[HookChain, HookChain]:
    """The (tool-call ``TaskHooks``, agent-run ``SubagentHooks``) chains of ``hooks``.

    Raises:
        TypeError: for an object that is neither a ``TaskHooks`` nor a ``SubagentHooks``,
            or a hook the chains refuse (see ``orchestra.HookChain``).
    """
    hooks = list(hooks)
    for hook in hooks:
        if not isinstance(hook, TaskHooks | SubagentHooks):
            raise TypeError(
                f"{hook!r} is neither a TaskHooks (tool calls) nor a SubagentHooks (agent "
                "runs): subclass one of them"
            )
    tasks = [h for h in hooks if isinstance(h, TaskHooks)]
    agents = [h for h in hooks if isinstance(h, SubagentHooks)]
    return (
        HookChain(tasks, TaskHooks, timeout),
        HookChain(agents, SubagentHooks, timeout, carries=_AGENT_ANSWERS),
    )
