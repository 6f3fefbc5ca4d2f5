"""The bridge's hook chains: the user's hooks sorted by trait (internal).

Tool calls are tasks (``TaskHooks``: ``before_execute``, ``after_execute``,
``on_failure``); agents are subagent dispatches (``SubagentHooks``). One hook object may
be both (``RetryPolicy`` is). Both chains are ``orchestra.HookChain``, orchestra's seam,
compiled with the answers the bridge carries out at each moment (``carries``): any other
answer (a ``Delegate``: the SDK's model decides handoffs) is a hook error, no opinion.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from orchestra import Decision, Fail, HookChain, Retry, Skip, SubagentHooks, TaskHooks

__all__ = ["split_hooks"]

_TASK_ANSWERS: Final[dict[str, tuple[type[Decision], ...]]] = {
    "before_execute": (Skip, Fail),
    "after_execute": (),
    "on_failure": (Retry, Skip, Fail),
}
_AGENT_ANSWERS: Final[dict[str, tuple[type[Decision], ...]]] = {
    "before_dispatch": (Fail,),
    "after_dispatch": (),
    "on_failure": (Retry, Fail),
}


def split_hooks(
    hooks: Iterable[object], timeout: float | None = 60.0
) -> tuple[HookChain, HookChain]:
    """The (tool-call ``TaskHooks``, agent ``SubagentHooks``) chains of ``hooks``.

    Raises:
        TypeError: for an object that is neither a ``TaskHooks`` nor a ``SubagentHooks``,
            or a hook the chains refuse (see ``orchestra.HookChain``).
    """
    hooks = list(hooks)
    for hook in hooks:
        if not isinstance(hook, TaskHooks | SubagentHooks):
            raise TypeError(
                f"{hook!r} is neither a TaskHooks (tool calls) nor a SubagentHooks (agents): "
                "subclass one of them"
            )
    tasks = [h for h in hooks if isinstance(h, TaskHooks)]
    agents = [h for h in hooks if isinstance(h, SubagentHooks)]
    return (
        HookChain(tasks, TaskHooks, timeout, carries=_TASK_ANSWERS),
        HookChain(agents, SubagentHooks, timeout, carries=_AGENT_ANSWERS),
    )
