"""Adapters that fire a ``HookRegistry`` at the moments of orchestra's engines.

- ``registry.as_task_hooks()``: a ``TaskHooks`` firing ``TaskCreated`` before a task's
  first attempt (a deny fails the task) and ``TaskCompleted`` when it ended, with its
  state and error.
- ``registry.as_subagent_hooks()``: a ``SubagentHooks`` firing ``SubagentStart`` before
  each attempt of a dispatch (a deny fails the dispatch) and ``SubagentStop`` after it.

An adapter only overrides the moments whose events have hooks, so the engines skip the
others at no cost. The tool events (``@registry.guard("Tool")``) are in ``_guard``.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from orchestra._decisions import Fail
from orchestra._hooks import SubagentHookContext, SubagentHooks, TaskHookContext, TaskHooks

if TYPE_CHECKING:
    from orchestra.skills._outcome import HookOutcome
    from orchestra.skills._registry import HookRegistry

__all__ = [
    "RegistrySubagentHooks",
    "RegistryTaskHooks",
    "blocked_reason",
    "error_fields",
    "subagent_hooks",
    "task_hooks",
]


def blocked_reason(event: str, outcome: HookOutcome) -> str:
    """Why an event's hooks blocked: their reason, or which hook blocked."""
    return outcome.reason or f"blocked by a {event} hook at {outcome.decided_by}"


def _trim(cls: type, base: type, keep: Mapping[str, bool]) -> type:
    """A subclass of ``cls`` with the moments not in ``keep`` reset to ``base``'s."""
    reset = {moment: getattr(base, moment) for moment, wanted in keep.items() if not wanted}
    return type(cls.__name__, (cls,), reset) if reset else cls


def error_fields(error: BaseException | None) -> dict[str, Any]:
    """The ``error`` and ``error_type`` fields of an event, for ``error`` (or None)."""
    if error is None:
        return {"error": None, "error_type": None}
    return {"error": str(error) or type(error).__name__, "error_type": type(error).__qualname__}


class RegistryTaskHooks(TaskHooks):
    """``TaskHooks`` that fire ``TaskCreated`` and ``TaskCompleted`` hooks.

    ``TaskCreated`` fires before every attempt of a task (``attempt`` in the event); a
    deny or block fails the task with the hook's reason. ``TaskCompleted`` fires once
    per task when it reached its terminal state, whatever it is (``state``:
    ``succeeded``, ``failed``, ``skipped``, ``upstream_failed`` or ``cancelled``, also
    for tasks that never started), with the last error (``error``, ``error_type``) or
    a ``TaskCreated`` deny's reason. The hooks' messages (``additionalContext``) are
    passed on with ``ctx.add_message``: later hooks see them, a task run by an agent gets
    them after its text, and ``RunResult.messages`` keeps them.

    Args:
        registry: the hooks to fire.
    """

    def __init__(self, registry: HookRegistry) -> None:
        self.registry = registry
        # (run id, task id) -> the reason a TaskCreated hook denied the task, for its
        # TaskCompleted event
        self._denied: dict[tuple[str, str], str] = {}

    @staticmethod
    def payload(ctx: TaskHookContext) -> dict[str, Any]:
        """The event fields for a task: ``task_id``, ``run_id``, ``attempt``, ..."""
        return {
            "task_id": ctx.task.id,
            "run_id": ctx.run_id,
            "attempt": ctx.attempt,
            "executor": ctx.executor,
            "metadata": dict(ctx.task.metadata),
        }

    async def before_execute(self, ctx: TaskHookContext) -> Fail | None:
        """Fire ``TaskCreated`` before each attempt; a deny answers ``Fail``."""
        outcome = await self.registry.fire("TaskCreated", self.payload(ctx))
        for message in outcome.messages:
            ctx.add_message(message)
        if not outcome.blocked:
            return None
        reason = blocked_reason("TaskCreated", outcome)
        if self.registry.has_hooks("TaskCompleted"):
            self._denied[(ctx.run_id, ctx.task.id)] = reason
        return Fail(reason)

    async def on_end(self, ctx: TaskHookContext, state: enum.Enum) -> None:
        """Fire ``TaskCompleted`` with the task's terminal ``state`` and its last error."""
        denied = self._denied.pop((ctx.run_id, ctx.task.id), None)
        if denied is not None:
            fields = {"error": denied, "error_type": "TaskFailed"}
        else:
            fields = error_fields(ctx.errors[-1] if ctx.errors else None)
        payload = {**self.payload(ctx), "state": state.value, **fields}
        outcome = await self.registry.fire("TaskCompleted", payload)
        for message in outcome.messages:
            ctx.add_message(message)


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

    async def before_dispatch(self, ctx: SubagentHookContext) -> Fail | None:
        """Fire ``SubagentStart``; a deny answers ``Fail`` with the hook's reason."""
        outcome = await self.registry.fire("SubagentStart", self.payload(ctx))
        for message in outcome.messages:
            ctx.add_message(message)
        return Fail(blocked_reason("SubagentStart", outcome)) if outcome.blocked else None

    async def after_dispatch(self, ctx: SubagentHookContext, result: Any) -> None:
        """Fire ``SubagentStop`` with ``state: "succeeded"`` and the output."""
        output = getattr(result, "output", result)
        payload = {**self.payload(ctx), "state": "succeeded", "output": output}
        outcome = await self.registry.fire("SubagentStop", {**payload, **error_fields(None)})
        for message in outcome.messages:
            ctx.add_message(message)

    async def on_failure(self, ctx: SubagentHookContext, error: BaseException) -> None:
        """Fire ``SubagentStop`` with ``state: "failed"`` and the error."""
        payload = {**self.payload(ctx), "state": "failed", "output": None}
        outcome = await self.registry.fire("SubagentStop", {**payload, **error_fields(error)})
        for message in outcome.messages:
            ctx.add_message(message)
        return None


def task_hooks(registry: HookRegistry) -> TaskHooks:
    """The ``TaskHooks`` of a registry, overriding only the moments with hooks."""
    keep = {
        "before_execute": registry.has_hooks("TaskCreated"),
        "on_end": registry.has_hooks("TaskCompleted"),
    }
    cls: type[RegistryTaskHooks] = _trim(RegistryTaskHooks, TaskHooks, keep)
    return cls(registry)


def subagent_hooks(registry: HookRegistry) -> SubagentHooks:
    """The ``SubagentHooks`` of a registry, overriding only the moments with hooks."""
    stop = registry.has_hooks("SubagentStop")
    keep = {
        "before_dispatch": registry.has_hooks("SubagentStart"),
        "after_dispatch": stop,
        "on_failure": stop,
    }
    cls: type[RegistrySubagentHooks] = _trim(RegistrySubagentHooks, SubagentHooks, keep)
    return cls(registry)
