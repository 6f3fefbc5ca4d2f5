"""The capability's hook chains: the user's hooks sorted by trait (internal).

Tool calls are tasks (``TaskHooks``: ``before_execute``, ``after_execute``,
``on_failure``); the agent run is a subagent dispatch (``SubagentHooks``). One object may
be both (``RetryPolicy`` is). An answer the bridge cannot carry out at a moment is
recorded as a ``HookError`` and counts as no opinion.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any, Final, final

from orchestra import (
    Decision,
    Fail,
    HookChain,
    HookError,
    Replace,
    Retry,
    Skip,
    SubagentHooks,
    TaskHooks,
)
from orchestra.tracing import get_tracer

__all__ = ["Chain", "split_hooks"]

logger: Final = logging.getLogger("orchestra")

_TASK_ANSWERS: Final[dict[str, tuple[type, ...]]] = {
    "before_execute": (Skip, Fail, Replace),
    "after_execute": (Replace, Fail),
    "on_failure": (Retry, Skip, Fail, Replace),
    "on_end": (),
}
_AGENT_ANSWERS: Final[dict[str, tuple[type, ...]]] = {
    "before_dispatch": (Fail,),
    "after_dispatch": (Replace,),
    "on_failure": (Retry, Fail),
}


@final
class Chain:
    """A ``HookChain`` and the answers the bridge carries out at each of its moments."""

    __slots__ = ("carried", "chain")

    def __init__(self, chain: HookChain, carried: dict[str, tuple[type, ...]]) -> None:
        self.chain = chain
        self.carried = carried

    def has(self, moment: str) -> bool:
        """Whether any hook implements ``moment`` (the zero-cost check)."""
        return self.chain.has(moment)

    async def call(
        self,
        moment: str,
        *args: Any,
        subject: str | None = None,
        record: Callable[[HookError], None] | None = None,
    ) -> tuple[Decision | None, str | None]:
        """Call ``moment``'s hooks: (the merged decision the bridge carries out, who)."""
        decision, by = await self.chain.call(
            moment, *args, subject=subject, on_error=record, tracer=get_tracer()
        )
        if decision is None or isinstance(decision, self.carried.get(moment, ())):
            return decision, by
        error = HookError(
            f"hook {by} answered {decision!r} in {moment}, which the pydantic-ai bridge does "
            "not carry out; it counts as no opinion",
            hook=(by or "?").split(".")[0],
            moment=moment,
            subject=subject,
        )
        logger.warning("%s", error)
        if record is not None:
            record(error)
        return None, None


def split_hooks(hooks: Iterable[object], timeout: float | None) -> tuple[Chain, Chain]:
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
    tasks = HookChain([h for h in hooks if isinstance(h, TaskHooks)], TaskHooks, timeout)
    agents = HookChain([h for h in hooks if isinstance(h, SubagentHooks)], SubagentHooks, timeout)
    return Chain(tasks, _TASK_ANSWERS), Chain(agents, _AGENT_ANSWERS)
