"""Hook traits (``TaskHooks``, ``SubagentHooks``), their contexts, and the dispatch chain.

Users subclass a trait and override only the moments they care about; each method may be
``def`` or ``async def``. The engines compile the hooks once per run (or dispatcher) into
a tuple of implementations per moment, skipping methods that are not overridden, so a
moment nobody implements costs one truthiness check and nothing else.
"""

from __future__ import annotations

import enum
import inspect
import logging
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Final, TypeAlias, final

import attrs

from orchestra._decisions import Decision, Delegate, Fail, Retry, Skip, pick
from orchestra._errors import HookError
from orchestra.tracing._spans import (
    hook_span,
    record_decision,
    record_error,
    record_hook_error,
)

if TYPE_CHECKING:
    from opentelemetry.trace import Tracer

    from orchestra.dag._model import Task

__all__ = [
    "ExecutionMode",
    "SubagentHookContext",
    "SubagentHooks",
    "TaskHookContext",
    "TaskHooks",
]

logger: Final = logging.getLogger("orchestra")

_MaybeAwaitable: TypeAlias = "Any | Awaitable[Any]"


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
@attrs.frozen
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
@attrs.frozen
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


# --- the dispatch chain -------------------------------------------------------------------

#: Valid answers per moment.
TASK_ANSWERS: Final[dict[str, tuple[type, ...]]] = {
    "before_execute": (Skip, Fail),
    "after_execute": (),
    "on_failure": (Retry, Skip, Fail),
}
SUBAGENT_ANSWERS: Final[dict[str, tuple[type, ...]]] = {
    "before_dispatch": (Fail, Delegate),
    "after_dispatch": (),
    "on_failure": (Retry, Fail, Delegate),
}


@final
class HookImpl:
    """One overridden hook method, ready to call (internal)."""

    __slots__ = ("allowed", "fail_closed", "fn", "is_async", "moment", "name")

    def __init__(self, hook: object, moment: str, allowed: tuple[type, ...]) -> None:
        self.fn: Callable[..., Any] = getattr(hook, moment)
        self.is_async = inspect.iscoroutinefunction(self.fn)
        self.fail_closed = bool(getattr(hook, "fail_closed", False))
        self.name = type(hook).__name__
        self.moment = moment
        self.allowed = allowed


def compile_hooks(
    hooks: Iterable[object], base: type, answers: dict[str, tuple[type, ...]]
) -> dict[str, tuple[HookImpl, ...]]:
    """Compile hook objects into the overridden implementations of each moment.

    Raises:
        TypeError: for an object that implements none of the moments of ``base``.
    """
    hooks = list(hooks)
    for hook in hooks:
        if not isinstance(hook, base) and not any(
            callable(getattr(hook, moment, None)) for moment in answers
        ):
            raise TypeError(
                f"{hook!r} is not a {base.__name__}: subclass it, or define one of "
                f"{', '.join(answers)}"
            )
    compiled: dict[str, tuple[HookImpl, ...]] = {}
    for moment, allowed in answers.items():
        default = getattr(base, moment)
        compiled[moment] = tuple(
            HookImpl(hook, moment, allowed)
            for hook in hooks
            if callable(getattr(hook, moment, None))
            and getattr(type(hook), moment, None) is not default
        )
    return compiled


def _hook_error(impl: HookImpl, subject: str | None, message: str) -> HookError:
    return HookError(
        f"hook {impl.name}.{impl.moment}"
        + (f" for {subject!r}" if subject is not None else "")
        + f" {message}",
        hook=impl.name,
        moment=impl.moment,
        subject=subject,
    )


async def call_hooks(
    impls: Sequence[HookImpl],
    args: tuple[Any, ...],
    subject: str | None,
    record: Callable[[HookError], None] | None = None,
    tracer: Tracer | None = None,
) -> tuple[Decision | None, HookImpl | None]:
    """Call every implementation in order and merge their answers.

    A hook that raises ``Exception`` or answers something its moment does not allow is
    logged on the ``orchestra`` logger, passed to ``record``, and counts as no opinion, or
    as ``Fail`` if the hook is fail-closed. ``BaseException`` (cancellation,
    ``KeyboardInterrupt``) propagates. With a ``tracer`` (tracing is on for this run),
    each call is a ``hook {moment}`` span with its answer or error.

    Returns:
        The merged decision and the implementation that gave it (None, None if no opinion).
    """
    if tracer is not None:
        return await _call_hooks_traced(impls, args, subject, record, tracer)
    answers: list[Decision | None] = []
    for impl in impls:
        try:
            answer = impl.fn(*args)
            if impl.is_async:
                answer = await answer
        except Exception as exc:
            error = _hook_error(impl, subject, f"raised {type(exc).__name__}: {exc}")
            error.__cause__ = exc
            answer = _isolate(impl, error, record)
        else:
            if answer is not None and type(answer) not in impl.allowed:
                allowed = ", ".join(t.__name__ for t in impl.allowed) or "nothing"
                error = _hook_error(
                    impl, subject, f"returned {answer!r}; None or {allowed} expected"
                )
                answer = _isolate(impl, error, record)
        answers.append(answer)
    i = pick(answers)
    return (answers[i], impls[i]) if i >= 0 else (None, None)


async def _call_hooks_traced(
    impls: Sequence[HookImpl],
    args: tuple[Any, ...],
    subject: str | None,
    record: Callable[[HookError], None] | None,
    tracer: Tracer,
) -> tuple[Decision | None, HookImpl | None]:
    """``call_hooks`` with a ``hook {moment}`` span around each call."""
    answers: list[Decision | None] = []
    for impl in impls:
        with hook_span(
            tracer, impl.moment, hook_type="python", name=impl.name, subject=subject
        ) as span:
            errors: list[HookError] = []
            answer, _ = await call_hooks((impl,), args, subject, errors.append)
            for error in errors:
                record_hook_error(span, error, impl.name)
                record_error(span, error)
                if record is not None:
                    record(error)
            if answer is not None:
                record_decision(span, answer, f"{impl.name}.{impl.moment}")
        answers.append(answer)
    i = pick(answers)
    return (answers[i], impls[i]) if i >= 0 else (None, None)


def _isolate(
    impl: HookImpl, error: HookError, record: Callable[[HookError], None] | None
) -> Fail | None:
    logger.warning("%s", error, exc_info=error.__cause__ or error)
    if record is not None:
        record(error)
    return Fail(f"fail-closed {error}") if impl.fail_closed else None
