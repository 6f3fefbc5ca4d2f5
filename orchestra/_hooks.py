"""Hook traits (``TaskHooks``, ``SubagentHooks``) and the contexts their methods get.

Users subclass a trait and override only the moments they care about; each method may be
``def`` or ``async def``. The engines call them through ``orchestra.HookChain``.
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any, ClassVar, final

import attrs

from orchestra._decisions import Delegate, Fail, Retry, Skip

if TYPE_CHECKING:
    from orchestra.dag._model import Task

__all__ = [
    "ExecutionMode",
    "SubagentHookContext",
    "SubagentHooks",
    "TaskHookContext",
    "TaskHooks",
]


class ExecutionMode(enum.Enum):
    """How a subagent dispatch runs relative to its caller.

    Attributes:
        SYNC: the caller awaits the result.
        FORK: the work runs beside the caller, which gets a handle to await or cancel.
        TEAMMATE: a long-lived agent session that keeps its state across dispatches from
            the same parent, closed with the dispatcher.
    """

    SYNC = "sync"
    FORK = "fork"
    TEAMMATE = "teammate"


@final
@attrs.frozen(kw_only=True)
class TaskHookContext:
    """What a ``TaskHooks`` method knows about the task attempt it is called for.

    Attributes:
        task: the ``Task`` (``id``, ``retries``, ``metadata``, ...).
        attempt: the attempt number, 1-based.
        executor: the name of the agent running the task, or None for a plain task.
        run_id: the id of the DAG run.
        errors: the errors of the earlier attempts of this task and, in ``on_failure``,
            of this one, oldest first.
        started_at: ``time.monotonic()`` when the first attempt started.
    """

    task: Task
    attempt: int
    executor: str | None
    run_id: str
    errors: tuple[BaseException, ...] = ()
    started_at: float = 0.0


@final
@attrs.frozen(kw_only=True)
class SubagentHookContext:
    """What a ``SubagentHooks`` method knows about the dispatch it is called for.

    Attributes:
        parent_agent: the name of the agent (or DAG) that dispatched the work, if any.
        subagent_name: the agent the work is dispatched to now.
        execution_mode: the ``ExecutionMode`` of the dispatch.
        task: the text dispatched.
        attempt: the attempt number with this agent, 1-based (restarts on delegation).
        delegated_from: the agents tried before this one in the delegation chain.
        errors: the errors of the earlier attempts with this agent, oldest first.
        started_at: ``time.monotonic()`` when the dispatch started.
    """

    parent_agent: str | None
    subagent_name: str
    execution_mode: ExecutionMode
    task: str
    attempt: int
    delegated_from: tuple[str, ...] = ()
    errors: tuple[BaseException, ...] = ()
    started_at: float = 0.0


class TaskHooks:
    """Base class of hooks around DAG tasks; every method does nothing by default.

    Override any method, as ``def`` or ``async def``. A hook that raises is logged on the
    ``orchestra`` logger, recorded, and counts as no opinion, unless the hook object sets
    ``fail_closed = True``: then its error fails the task.
    """

    fail_closed: ClassVar[bool] = False
    """If true, an error in this hook fails the task instead of being ignored."""

    def before_execute(self, ctx: TaskHookContext) -> Skip | Fail | Awaitable[Any] | None:
        """Called before each attempt of a task; may answer ``Skip`` or ``Fail``."""
        return None

    def after_execute(self, ctx: TaskHookContext, result: Any) -> Awaitable[None] | None:
        """Called after an attempt succeeded, with the task's result."""
        return None

    def on_failure(
        self, ctx: TaskHookContext, error: BaseException
    ) -> Retry | Skip | Fail | Awaitable[Any] | None:
        """Called when an attempt raised; may answer ``Retry``, ``Skip`` or ``Fail``."""
        return None


class SubagentHooks:
    """Base class of hooks around subagent dispatches; every method does nothing by default.

    Override any method, as ``def`` or ``async def``. Errors are isolated as for
    ``TaskHooks``; ``fail_closed = True`` makes them fail the dispatch.
    """

    fail_closed: ClassVar[bool] = False
    """If true, an error in this hook fails the dispatch instead of being ignored."""

    def before_dispatch(self, ctx: SubagentHookContext) -> Fail | Delegate | Awaitable[Any] | None:
        """Called before each attempt of a dispatch; may answer ``Fail`` or ``Delegate``."""
        return None

    def after_dispatch(self, ctx: SubagentHookContext, result: Any) -> Awaitable[None] | None:
        """Called after the agent answered, with the ``SubagentResult``."""
        return None

    def on_failure(
        self, ctx: SubagentHookContext, error: BaseException
    ) -> Retry | Fail | Delegate | Awaitable[Any] | None:
        """Called when the agent raised; may answer ``Retry``, ``Fail`` or ``Delegate``."""
        return None


# --- the earlier private API, until every integration uses HookChain ---------------------


def __getattr__(name: str) -> Any:
    if name in ("HookImpl", "call_hooks", "compile_hooks"):
        from orchestra import _chain

        return getattr(_chain, name)
    if name in ("TASK_ANSWERS", "SUBAGENT_ANSWERS"):
        from orchestra._chain import MOMENTS

        return dict(MOMENTS[TaskHooks if name == "TASK_ANSWERS" else SubagentHooks])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
