"""What the capability knows about one agent run (internal)."""

from __future__ import annotations

import contextvars
import time
import uuid
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final, final

import orchestra
from orchestra import (
    DispatchError,
    ExecutionMode,
    HookChain,
    SubagentHookContext,
    TaskHookContext,
)

__all__ = ["RunState", "parent_agent"]

parent_agent: Final[contextvars.ContextVar[str | None]] = contextvars.ContextVar(
    "orchestra_pydantic_ai_agent", default=None
)
"""The agent whose run the code here is part of (a tool of it may run another agent)."""


@final
class RunState:
    """One agent run: its id, the hook errors, how many tool calls ran."""

    __slots__ = (
        "agent",
        "attempt",
        "errors",
        "hook_errors",
        "run_id",
        "started",
        "steps",
        "tool_calls",
    )

    def __init__(self, agent: str | None, run_id: str | None = None) -> None:
        self.agent = agent
        self.run_id = run_id or uuid.uuid4().hex
        self.hook_errors: list[orchestra.HookError] = []
        self.tool_calls = 0
        self.steps = 0  # model requests so far (StepStart's step)
        self.attempt = 1  # of the run's model calls: 1 + the retries hooks asked for
        self.errors: tuple[BaseException, ...] = ()
        self.started = time.monotonic()

    def dispatch_context(self, name: str, parent: str | None, prompt: str) -> SubagentHookContext:
        """The hook context of the run as a dispatch."""
        return SubagentHookContext(
            parent_agent=parent,
            subagent_name=name,
            execution_mode=ExecutionMode.SYNC,
            task=prompt,
            attempt=self.attempt,
            errors=self.errors,
            started_at=self.started,
        )

    def refused(self, name: str, decision: orchestra.Fail, by: str | None) -> DispatchError:
        """The error of the run a hook's ``Fail`` refused (``before_dispatch``, ``before_run``)."""
        why = decision.reason or f"failed by {by}"
        return DispatchError(
            f"run of agent {name!r} failed by {by}: {why}",
            agent=name,
            reason=decision.reason,
            hook_errors=tuple(self.hook_errors),
        )

    def task_context(
        self,
        task: orchestra.Task,
        attempt: int,
        errors: tuple[BaseException, ...],
        started: float,
        inputs: Mapping[str, Any],
    ) -> TaskHookContext:
        """The hook context of one attempt of a tool call."""
        return HookChain.task_context(
            task=task,
            attempt=attempt,
            executor=self.agent,
            run_id=self.run_id,
            errors=errors,
            started_at=started,
            inputs=MappingProxyType(dict(inputs)),
        )
