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

import orchestra.bridge as bridge
from orchestra import Fail, HookChain, Skip

__all__ = ["split_hooks"]

_TASK_ANSWERS: Final[bridge.Carries] = {
    "before_execute": (Skip, Fail),
    "after_execute": (),
    "on_failure": (bridge.Again, Skip, Fail),
}
_AGENT_ANSWERS: Final[bridge.Carries] = {
    "before_dispatch": (Fail,),
    "after_dispatch": (),
    "on_failure": (bridge.Again, Fail),
}


def split_hooks(
    hooks: Iterable[object], timeout: float | None = 60.0
) -> tuple[HookChain, HookChain]:
    """The (tool-call ``TaskHooks``, agent ``SubagentHooks``) chains of ``hooks``.

    Raises:
        TypeError: see ``orchestra.bridge.split_hooks``.
    """
    return bridge.split_hooks(hooks, timeout, tasks=_TASK_ANSWERS, agents=_AGENT_ANSWERS)
