"""Hook traits (``TaskHooks``, ``SubagentHooks``) and the contexts their methods get.

Users subclass a trait and override only the moments they care about; each method may be
``def`` or ``async def``. The engines call them through ``orchestra.HookChain``.
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar, Final, final

import attrs

from orchestra._decisions import Delegate, Fail, Replace, Retry, Skip

if TYPE_CHECKING:
    from orchestra.dag._model import Task, TaskState
    from orchestra.dag._result import RunResult

__all__ = [
    "ExecutionMode",
    "RunContext",
    "SubagentHookContext",
    "SubagentHooks",
    "TaskHookContext",
    "TaskHooks",
]

NO_INPUTS: Final[Mapping[str, Any]] = MappingProxyType({})


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
class RunContext:
    """What ``before_run`` and ``after_run`` know about the DAG run.

    Attributes:
        dag: the DAG's name.
        run_id: the run's unique id (as in ``RunResult.run_id``).
        task_ids: the ids of the run's tasks, in a topological order.
        started_at: ``time.monotonic()`` when the run started.
        resumed_from: the id of the journaled run this one resumes (``run(...,
            resume=...)``), or None.
    """

    dag: str
    run_id: str
    task_ids: tuple[str, ...]
    started_at: float
    resumed_from: str | None = None


class _TaskHookContextSlots:
    """The slots of a ``TaskHookContext``, writable while ``task_context`` fills them."""

    __slots__ = (
        "__weakref__",
        "_notes",
        "attempt",
        "errors",
        "executor",
        "inputs",
        "run_id",
        "started_at",
        "task",
        "upstream_states",
    )

    task: Task
    attempt: int
    executor: str | None
    run_id: str
    errors: tuple[BaseException, ...]
    started_at: float
    inputs: Mapping[str, Any]
    upstream_states: Mapping[str, TaskState]
    _notes: list[str]


@final
@attrs.frozen(kw_only=True)
class TaskHookContext(_TaskHookContextSlots):
    """What a ``TaskHooks`` method knows about the task attempt it is called for.

    Attributes:
        task: the ``Task`` (``id``, ``retries``, ``metadata``, ...).
        attempt: the attempt number, 1-based (0 in ``on_end`` for a task that never
            started).
        executor: the name of the agent running the task, or None for a plain task.
        run_id: the id of the DAG run.
        errors: the errors of the earlier attempts of this task and, in ``on_failure``,
            of this one, oldest first.
        started_at: ``time.monotonic()`` when the first attempt started.
        inputs: the keyword arguments the body gets (read-only): the upstream outputs it
            takes, as replaced by a ``before_execute`` hook's ``Replace``.
        upstream_states: each upstream task's ``TaskState``, by id.
        messages: what hooks called for this attempt added with ``add_message``, in order
            (a YAML ``TaskCreated`` hook's ``additionalContext``, say).
    """

    task: Task
    attempt: int
    executor: str | None
    run_id: str
    errors: tuple[BaseException, ...] = ()
    started_at: float = 0.0
    inputs: Mapping[str, Any] = attrs.field(default=NO_INPUTS, hash=False)
    upstream_states: Mapping[str, TaskState] = attrs.field(default=NO_INPUTS, hash=False)
    _notes: list[str] = attrs.field(factory=list, alias="notes", eq=False, repr=False)

    @property
    def messages(self) -> tuple[str, ...]:
        """What hooks called for this attempt added, oldest first."""
        return tuple(self._notes)

    def add_message(self, text: str) -> None:
        """Add context for the hooks called after this one (and the task's result).

        Every context of one attempt shares the messages: a hook later in the chain, or
        at a later moment of the attempt, sees them in ``messages``; a task run by an
        agent gets them after its text; ``RunResult.messages`` keeps them.
        """
        if not isinstance(text, str):
            raise TypeError(f"add_message takes a str, got {text!r}")
        self._notes.append(text)


class _SubagentHookContextSlots:
    """The slots of a ``SubagentHookContext``, writable while ``subagent_context`` fills them."""

    __slots__ = (
        "__weakref__",
        "_notes",
        "attempt",
        "delegated_from",
        "errors",
        "execution_mode",
        "parent_agent",
        "started_at",
        "subagent_name",
        "task",
    )

    parent_agent: str | None
    subagent_name: str
    execution_mode: ExecutionMode
    task: str
    attempt: int
    delegated_from: tuple[str, ...]
    errors: tuple[BaseException, ...]
    started_at: float
    _notes: list[str]


@final
@attrs.frozen(kw_only=True)
class SubagentHookContext(_SubagentHookContextSlots):
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
        messages: what hooks called for this dispatch added with ``add_message``, in
            order (a YAML ``SubagentStart`` hook's ``additionalContext``, say).
    """

    parent_agent: str | None
    subagent_name: str
    execution_mode: ExecutionMode
    task: str
    attempt: int
    delegated_from: tuple[str, ...] = ()
    errors: tuple[BaseException, ...] = ()
    started_at: float = 0.0
    _notes: list[str] = attrs.field(factory=list, alias="notes", eq=False, repr=False)

    @property
    def messages(self) -> tuple[str, ...]:
        """What hooks called for this dispatch added, oldest first."""
        return tuple(self._notes)

    def add_message(self, text: str) -> None:
        """Add context for the hooks called after this one, and for the agent.

        Messages added in ``before_dispatch`` follow the text the agent gets (one per
        line, after a blank line); ``SubagentResult.messages`` keeps every message of the
        dispatch.
        """
        if not isinstance(text, str):
            raise TypeError(f"add_message takes a str, got {text!r}")
        self._notes.append(text)


# The engines build a context per hook point: a frozen attrs class pays a slow
# object.__setattr__ per field (about 1 µs for nine), so they fill the writable slots of
# the base class (made by a class call: object.__new__(cls) is a slower call) and then make
# the object what it is.


def task_context(
    task: Task,
    attempt: int,
    executor: str | None,
    run_id: str,
    errors: tuple[BaseException, ...],
    started_at: float,
    inputs: Mapping[str, Any],
    upstream_states: Mapping[str, TaskState],
    notes: list[str],
) -> TaskHookContext:
    """A ``TaskHookContext``, built fast (internal: for the engines)."""
    ctx = _TaskHookContextSlots()
    ctx.task = task
    ctx.attempt = attempt
    ctx.executor = executor
    ctx.run_id = run_id
    ctx.errors = errors
    ctx.started_at = started_at
    ctx.inputs = inputs
    ctx.upstream_states = upstream_states
    ctx._notes = notes
    ctx.__class__ = TaskHookContext
    return ctx  # type: ignore[return-value]  # its class is TaskHookContext now (no cast call)


def subagent_context(
    parent_agent: str | None,
    subagent_name: str,
    execution_mode: ExecutionMode,
    task: str,
    attempt: int,
    delegated_from: tuple[str, ...],
    errors: tuple[BaseException, ...],
    started_at: float,
    notes: list[str],
) -> SubagentHookContext:
    """A ``SubagentHookContext``, built fast (internal: for the engines)."""
    ctx = _SubagentHookContextSlots()
    ctx.parent_agent = parent_agent
    ctx.subagent_name = subagent_name
    ctx.execution_mode = execution_mode
    ctx.task = task
    ctx.attempt = attempt
    ctx.delegated_from = delegated_from
    ctx.errors = errors
    ctx.started_at = started_at
    ctx._notes = notes
    ctx.__class__ = SubagentHookContext
    return ctx  # type: ignore[return-value]  # its class is SubagentHookContext now


class TaskHooks:
    """Base class of hooks around DAG runs and tasks; every method does nothing by default.

    Override any method, as ``def`` or ``async def``. In a run they are called in this
    order: ``before_run``; for each attempt of each task ``before_execute``, the body,
    then ``after_execute`` or ``on_failure``; ``on_end`` once per task; ``after_run``.

    A hook that raises is logged on the ``orchestra`` logger, recorded, and counts as no
    opinion, unless the hook object sets ``fail_closed = True``: then its error fails the
    task. Each call has a timeout: the object's ``timeout`` attribute (seconds, None for
    none) if it has one, else the run's ``hook_timeout``. A ``def`` hook is called inline
    and cannot be cancelled: past its timeout it is reported while it runs and is a hook
    error when it returns, unless the object sets ``blocking = True``.
    """

    fail_closed: ClassVar[bool] = False
    """If true, an error in this hook fails the task instead of being ignored."""

    blocking: ClassVar[bool] = False
    """If true, the ``def`` hooks run in worker threads, abandoned past their timeout."""

    def before_run(self, ctx: RunContext) -> Fail | Awaitable[Any] | None:
        """Called once before any task starts; ``Fail`` ends the run before it begins."""
        return None

    def before_execute(self, ctx: TaskHookContext) -> Skip | Fail | Replace | Awaitable[Any] | None:
        """Called before each attempt; may answer ``Skip``, ``Fail`` or ``Replace(inputs)``."""
        return None

    def after_execute(self, ctx: TaskHookContext, result: Any) -> Replace | Awaitable[Any] | None:
        """Called after an attempt succeeded, with its result; may ``Replace`` the output."""
        return None

    def on_failure(
        self, ctx: TaskHookContext, error: BaseException
    ) -> Retry | Skip | Fail | Replace | Awaitable[Any] | None:
        """Called when an attempt raised; may ``Retry``, ``Skip``, ``Fail`` or ``Replace``.

        ``Replace(output)`` recovers with a substitute output: the task ends SUCCEEDED.
        """
        return None

    def on_end(self, ctx: TaskHookContext, state: TaskState) -> Awaitable[None] | None:
        """Called once per task when it reached its terminal ``state``, whatever it is."""
        return None

    def after_run(self, ctx: RunContext, result: RunResult) -> Awaitable[None] | None:
        """Called once when the run ended, whatever way, with its ``RunResult``."""
        return None


class SubagentHooks:
    """Base class of hooks around subagent dispatches; every method does nothing by default.

    Override any method, as ``def`` or ``async def``. Errors are isolated as for
    ``TaskHooks``; ``fail_closed = True`` makes them fail the dispatch. Each call has a
    timeout: the object's ``timeout`` attribute if it has one, else the dispatcher's
    ``hook_timeout``; ``blocking = True`` runs the ``def`` hooks in worker threads, as for
    ``TaskHooks``.
    """

    fail_closed: ClassVar[bool] = False
    """If true, an error in this hook fails the dispatch instead of being ignored."""

    blocking: ClassVar[bool] = False
    """If true, the ``def`` hooks run in worker threads, abandoned past their timeout."""

    def before_dispatch(
        self, ctx: SubagentHookContext
    ) -> Fail | Delegate | Replace | Awaitable[Any] | None:
        """Called before each attempt; may answer ``Fail``, ``Delegate`` or ``Replace(text)``."""
        return None

    def after_dispatch(
        self, ctx: SubagentHookContext, result: Any
    ) -> Replace | Awaitable[Any] | None:
        """Called after the agent answered, with the ``SubagentResult``; may ``Replace``."""
        return None

    def on_failure(
        self, ctx: SubagentHookContext, error: BaseException
    ) -> Retry | Fail | Delegate | Replace | Awaitable[Any] | None:
        """Called when the agent raised; may ``Retry``, ``Fail``, ``Delegate`` or ``Replace``.

        ``Replace(output)`` recovers with a substitute output: the dispatch succeeds.
        """
        return None
