"""``registry.as_subagent_hooks()``: a registry's hooks at the dispatcher's moments.

A ``SubagentHooks`` firing ``SubagentStart`` before each attempt of a dispatch (a deny
fails the dispatch) and ``SubagentStop`` after it, overriding only the moments whose
events have hooks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from orchestra._decisions import Fail
from orchestra._hooks import SubagentHookContext, SubagentHooks
from orchestra._tool_flow import blocked_reason, error_fields
from orchestra.skills._engines.adapters import fire_reported, trim_moments

if TYPE_CHECKING:
    from orchestra.skills._firing.registry import HookRegistry

__all__ = ["RegistrySubagentHooks", "subagent_hooks"]


class RegistrySubagentHooks(SubagentHooks):
    """``SubagentHooks`` that fire ``SubagentStart`` and ``SubagentStop`` hooks.

    ``SubagentStart`` fires before each attempt of a dispatch (the matcher sees the
    agent's name); a deny or block fails the dispatch with the hook's reason, and its
    messages (``additionalContext``) follow the text the agent gets. ``SubagentStop``
    fires after each attempt, with ``state`` ``"succeeded"`` and the ``output``, or
    ``"failed"`` with ``error`` and ``error_type``; its messages reach the result
    (``SubagentResult.messages``).

    Args:
        registry: the hooks to fire.
    """

    def __init__(self, registry: HookRegistry) -> None:
        self.registry = registry
        self.budgets = registry.budgets  # the files' budget: keys, opened by each dispatch

    @staticmethod
    def payload(ctx: SubagentHookContext) -> dict[str, Any]:
        """The event fields for a dispatch: ``agent_name``, ``task``, ``attempt``, ..."""
        return {
            "agent_name": ctx.subagent_name,
            "agent_type": ctx.subagent_name,  # the field Claude Code's scripts read
            "parent_agent": ctx.parent_agent,
            "execution_mode": ctx.execution_mode.value,
            "task": ctx.task,
            "attempt": ctx.attempt,
            "delegated_from": list(ctx.delegated_from),
        }

    @staticmethod
    def stop_fields(output: Any) -> dict[str, Any]:
        """``SubagentStop``'s own fields for a dispatch's ``output`` (None: it failed).

        The reference's ``stop_hook_active`` (false: orchestra does not rerun an agent
        because a hook blocked its stop) and ``last_assistant_message`` (the output as
        text, None when there is none), and ``output`` itself.
        """
        text = None if output is None else output if isinstance(output, str) else str(output)
        return {"stop_hook_active": False, "last_assistant_message": text, "output": output}

    async def before_dispatch(self, ctx: SubagentHookContext) -> Fail | None:
        """Fire ``SubagentStart``; a deny answers ``Fail`` with the hook's reason."""
        outcome = await fire_reported(
            self.registry, "SubagentStart", self.payload(ctx), "before_dispatch", ctx.subagent_name
        )
        for message in outcome.messages:
            ctx.add_message(message)
        return Fail(blocked_reason("SubagentStart", outcome)) if outcome.blocked else None

    async def after_dispatch(self, ctx: SubagentHookContext, result: Any) -> None:
        """Fire ``SubagentStop`` with ``state: "succeeded"`` and the output."""
        output = getattr(result, "output", result)
        payload = {**self.payload(ctx), **self.stop_fields(output), "state": "succeeded"}
        payload.update(error_fields(None))
        outcome = await fire_reported(
            self.registry, "SubagentStop", payload, "after_dispatch", ctx.subagent_name
        )
        for message in outcome.messages:
            ctx.add_message(message)

    async def on_failure(self, ctx: SubagentHookContext, error: BaseException) -> None:
        """Fire ``SubagentStop`` with ``state: "failed"`` and the error."""
        payload = {**self.payload(ctx), **self.stop_fields(None), "state": "failed"}
        payload.update(error_fields(error))
        outcome = await fire_reported(
            self.registry, "SubagentStop", payload, "on_failure", ctx.subagent_name
        )
        for message in outcome.messages:
            ctx.add_message(message)
        return None


def subagent_hooks(registry: HookRegistry) -> SubagentHooks:
    """The ``SubagentHooks`` of a registry, overriding only the moments with hooks."""
    stop = registry.has_hooks("SubagentStop")
    keep = {
        "before_dispatch": registry.has_hooks("SubagentStart"),
        "after_dispatch": stop,
        "on_failure": stop,
    }
    cls: type[RegistrySubagentHooks] = trim_moments(RegistrySubagentHooks, SubagentHooks, keep)
    return cls(registry)
