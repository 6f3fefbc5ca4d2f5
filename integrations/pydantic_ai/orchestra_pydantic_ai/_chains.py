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

import orchestra.bridge as bridge
from orchestra import Fail, HookChain, Replace

__all__ = ["split_hooks"]

_AGENT_ANSWERS: Final[bridge.Carries] = {
    "before_dispatch": (Fail,),
    "after_dispatch": (Replace,),
    "on_failure": (bridge.Again, Fail),
}


def split_hooks(hooks: Iterable[object], timeout: float | None) -> tuple[HookChain, HookChain]:
    """The (tool-call ``TaskHooks``, agent ``SubagentHooks``) chains of ``hooks``.

    Raises:
        TypeError: see ``orchestra.bridge.split_hooks``.
    """
    return bridge.split_hooks(hooks, timeout, tasks=None, agents=_AGENT_ANSWERS)
