"""The bridge's hook chains: the user's hooks sorted by trait (internal).

Tool calls are tasks (``TaskHooks``: ``before_execute``, ``after_execute``,
``on_failure``); agents are subagent dispatches (``SubagentHooks``). One hook object may
be both (``RetryPolicy`` is).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any, Final, final

from orchestra import Decision, Fail, HookError, Retry, Skip, SubagentHooks, TaskHooks
from orchestra._hooks import call_hooks, compile_hooks
from orchestra.tracing import get_tracer

__all__ = ["HookChain", "split_hooks"]

logger: Final = logging.getLogger("orchestra")

# What the bridge can carry out at each moment. Delegate is not among them: the SDK's
# model decides handoffs, so a Delegate is recorded as a hook error (no opinion).
_TASK_ANSWERS: Final[dict[str, tuple[type, ...]]] = {
    "before_execute": (Skip, Fail),
    "after_execute": (),
    "on_failure": (Retry, Skip, Fail),
}
_SUBAGENT_ANSWERS: Final[dict[str, tuple[type, ...]]] = {
    "before_dispatch": (Fail,),
    "after_dispatch": (),
    "on_failure": (Retry, Fail),
}


@final
class HookChain:
    """Compiled hooks of one trait: ``has(moment)``, ``await call(moment, *args)``."""

    __slots__ = ("_impls",)

    def __init__(self, hooks: Iterable[object], trait: type) -> None:
        answers = _TASK_ANSWERS if trait is TaskHooks else _SUBAGENT_ANSWERS
        self._impls = compile_hooks(hooks, trait, answers)

    def has(self, moment: str) -> bool:
        """Whether any hook implements ``moment`` (the zero-cost check)."""
        return bool(self._impls.get(moment))

    async def call(
        self,
        moment: str,
        *args: Any,
        subject: str | None = None,
        record: Callable[[HookError], None] | None = None,
    ) -> tuple[Decision | None, str | None]:
        """Call every implementation of ``moment``: (merged decision, ``Class.moment``)."""
        decision, impl = await call_hooks(self._impls[moment], args, subject, record, get_tracer())
        return decision, (f"{impl.name}.{impl.moment}" if impl is not None else None)


def split_hooks(hooks: Iterable[object]) -> tuple[HookChain, HookChain]:
    """The (tool-call ``TaskHooks``, agent ``SubagentHooks``) chains of ``hooks``.

    Raises:
        TypeError: for an object that is neither a ``TaskHooks`` nor a ``SubagentHooks``.
    """
    hooks = list(hooks)
    for hook in hooks:
        if not isinstance(hook, TaskHooks | SubagentHooks):
            raise TypeError(
                f"{hook!r} is neither a TaskHooks (tool calls) nor a SubagentHooks (agents): "
                "subclass one of them"
            )
    return (
        HookChain([h for h in hooks if isinstance(h, TaskHooks)], TaskHooks),
        HookChain([h for h in hooks if isinstance(h, SubagentHooks)], SubagentHooks),
    )
