"""DAG building blocks: ``Task``, ``DAG``, ``TaskState`` and trigger rules."""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Iterable, Mapping
from types import FunctionType, MappingProxyType
from typing import Any, Final, TypeVar, final, overload

import attrs

from orchestra._errors import DAGError
from orchestra.dag._plan import Plan
from orchestra.dag._rules import AFTER_FAILURES, RULES, TriggerRule
from orchestra.dag._state import TaskState

__all__ = ["DAG", "Task", "TaskState", "TriggerRule"]

TRIGGER_RULES: Final = frozenset(RULES)


_CO_COROUTINE: Final = inspect.CO_COROUTINE
_DEFAULT_TRIGGER: Final = "all_success"


_NO_METADATA: Final[Mapping[str, Any]] = MappingProxyType({})
_new_fields: Final = object.__new__

# How the scheduler may run a task's body (``Task._kind``): through the whole attempt
# loop, or, with no timeout, retries or agent (and a run with no hooks), in place.
KIND_FULL: Final = 0
KIND_ASYNC: Final = 1  # an async body awaited in place
KIND_INLINE: Final = 2  # a sync inline body called in place


def _dep_ids(deps: Iterable[str | Task]) -> tuple[tuple[str, ...], tuple[Task, ...]]:
    """Dependencies given as ids or ``Task`` objects: their ids, and the objects."""
    ids: list[str] = []
    objects: list[Task] = []
    for dep in deps:
        if isinstance(dep, str):
            ids.append(dep)
        elif isinstance(dep, Task):
            ids.append(dep.id)
            objects.append(dep)
        else:
            raise TypeError(f"a dependency must be a task id or a Task, got {dep!r}")
    return tuple(ids), tuple(objects)


def _is_async(fn: Callable[..., Any]) -> bool:
    """Whether calling ``fn`` returns a coroutine (async functions and callable objects)."""
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004  # async callable objects
    )


class _TaskFields:
    """The slots of a ``Task``, writable while ``Task.__new__`` fills them (internal)."""

    __slots__ = (
        "__weakref__",
        "_dep_tasks",
        "_kind",
        "agent",
        "deps",
        "fn",
        "id",
        "inline",
        "is_async",
        "metadata",
        "retries",
        "retry_delay",
        "run_on_fail_fast",
        "timeout",
        "trigger",
    )

    id: str
    fn: Callable[..., Any]
    deps: tuple[str, ...]
    retries: int
    retry_delay: float
    timeout: float | None
    trigger: TriggerRule
    metadata: Mapping[str, Any]
    agent: str | None
    inline: bool
    run_on_fail_fast: bool
    is_async: bool
    _dep_tasks: tuple[Task, ...]
    _kind: int


@final
class Task(_TaskFields):
    """A unit of work in a DAG (immutable).

    ``@dag.task`` returns a ``Task``; calling it calls its function, so the decorated
    function keeps working as a function.

    Attributes:
        id: unique in its DAG.
        fn: the body, ``def`` or ``async def``; it receives the outputs of the upstream
            tasks whose ids are among its parameters (or all of them with ``**kwargs``).
        deps: ids of the upstream tasks (``Task`` objects are accepted and turned to ids).
        retries: how many times to retry a failure when no hook has an opinion.
        retry_delay: seconds to wait before such a retry.
        timeout: seconds an attempt may take (None = no limit); past it the attempt
            fails with ``TimeoutError``.
        trigger: the ``TriggerRule``.
        metadata: free-form data for hooks.
        agent: the name of a subagent that executes the task: the body returns the text
            to dispatch, and the agent's output is the task's output.
        inline: run a sync body on the event loop instead of a worker thread (for cheap
            bodies only: it blocks the loop while it runs).
        run_on_fail_fast: under ``run(..., fail_fast=True)``, run this task after the
            cancellation, as cleanup (its trigger rule judging upstreams that did not
            end as CANCELLED); required there for a rule that runs after failures.
        is_async: whether ``fn`` is a coroutine function.
    """

    __slots__ = ()

    # Built in __new__ on a writable _TaskFields, then turned into a Task: a frozen class
    # pays a slow object.__setattr__ per field, and a DAG of 100,000 tasks builds 100,000.
    def __new__(
        cls,
        *,
        id: str,  # the public name of the field
        fn: Callable[..., Any],
        deps: Iterable[str | Task] = (),
        retries: int = 0,
        retry_delay: float = 0.0,
        timeout: float | None = None,
        trigger: TriggerRule = "all_success",
        metadata: Mapping[str, Any] | None = None,
        agent: str | None = None,
        inline: bool = False,
        run_on_fail_fast: bool = False,
    ) -> Task:
        if type(id) is not str or not id:
            raise ValueError(f"a task id must be a non-empty string, got {id!r}")
        if type(fn) is FunctionType and not fn.__dict__:  # no 3.12+ coroutine mark
            is_async = fn.__code__.co_flags & _CO_COROUTINE != 0
        elif callable(fn):
            is_async = _is_async(fn)
        else:
            raise TypeError(f"task {id!r}: fn must be callable, got {fn!r}")
        dep_tasks: tuple[Task, ...] = ()
        if not deps:
            dep_ids: tuple[str, ...] = ()
        elif type(deps) is list or type(deps) is tuple or not isinstance(deps, (str, Task)):
            dep_ids = tuple(deps)  # type: ignore[arg-type]  # checked just below
            try:
                "".join(dep_ids)  # ids only (the usual case): checked in C
            except TypeError:
                dep_ids, dep_tasks = _dep_ids(dep_ids)
            if len(dep_ids) > 1 and len(set(dep_ids)) != len(dep_ids):
                dep_ids = tuple(dict.fromkeys(dep_ids))
        else:
            dep_ids, dep_tasks = _dep_ids((deps,))
        if id in dep_ids:
            raise DAGError(f"task {id!r} depends on itself")
        if retries != 0 and (not isinstance(retries, int) or retries < 0):
            raise ValueError(f"task {id!r}: retries must be an int >= 0, got {retries!r}")
        if retry_delay != 0 and not (math.isfinite(retry_delay) and retry_delay >= 0):
            raise ValueError(
                f"task {id!r}: retry_delay must be a finite number >= 0, got {retry_delay!r}"
            )
        if timeout is not None and not (timeout > 0):
            raise ValueError(f"task {id!r}: timeout must be > 0, got {timeout!r}")
        if trigger != _DEFAULT_TRIGGER and trigger not in TRIGGER_RULES:
            raise ValueError(
                f"task {id!r}: unknown trigger rule {trigger!r}; "
                f"expected one of {', '.join(sorted(TRIGGER_RULES))}"
            )
        self = _new_fields(_TaskFields)
        self.id = id
        self.fn = fn
        self.deps = dep_ids
        self.retries = retries
        self.retry_delay = retry_delay
        self.timeout = timeout
        self.trigger = trigger
        self.metadata = _NO_METADATA if metadata is None else metadata
        self.agent = agent
        self.inline = inline
        self.run_on_fail_fast = run_on_fail_fast
        self.is_async = is_async
        self._dep_tasks = dep_tasks
        if timeout is not None or retries or agent is not None:
            self._kind = KIND_FULL
        else:
            self._kind = KIND_ASYNC if is_async else KIND_INLINE if inline else KIND_FULL
        self.__class__ = cls  # same slots: frozen from here on
        return self  # type: ignore[return-value]

    def __setattr__(self, name: str, value: Any) -> None:
        raise attrs.exceptions.FrozenInstanceError()

    def __delattr__(self, name: str) -> None:
        raise attrs.exceptions.FrozenInstanceError()

    def __reduce__(self) -> tuple[Any, ...]:
        return (
            _task,
            (
                self.id,
                self.fn,
                self.deps,
                self.retries,
                self.retry_delay,
                self.timeout,
                self.trigger,
                None if self.metadata is _NO_METADATA else self.metadata,
                self.agent,
                self.inline,
                self.run_on_fail_fast,
            ),
        )

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the task's function."""
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        deps = f", deps={list(self.deps)!r}" if self.deps else ""
        return f"Task(id={self.id!r}{deps})"


_PICKLED: Final = (
    "id",
    "fn",
    "deps",
    "retries",
    "retry_delay",
    "timeout",
    "trigger",
    "metadata",
    "agent",
    "inline",
    "run_on_fail_fast",
)


def _task(*args: Any) -> Task:
    """Rebuild a pickled ``Task`` (its fields in ``_PICKLED`` order)."""
    return Task(**dict(zip(_PICKLED, args, strict=True)))


_F = TypeVar("_F", bound=Callable[..., Any])


class DAG:
    """A directed acyclic graph of tasks.

    Build it with the ``@dag.task`` decorator or ``dag.add(Task(...))``, then run it with
    ``orchestra.run(dag)`` or ``orchestra.run_sync(dag)``.

    Args:
        name: the DAG's name (used in traces and logs).
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self._tasks: dict[str, Task] = {}
        self._plan: Plan | None = None
        self._task_deps = False  # whether a dependency was given as a Task (plan checks it)

    def __repr__(self) -> str:
        return f"DAG({self.name!r}, tasks={len(self._tasks)})"

    def __len__(self) -> int:
        return len(self._tasks)

    def __contains__(self, task_id: object) -> bool:
        return task_id in self._tasks

    @property
    def tasks(self) -> Mapping[str, Task]:
        """The tasks by id, in the order they were added (read-only view)."""
        return self._tasks.copy()

    def add(self, task: Task) -> Task:
        """Add a task and return it.

        Raises:
            DAGError: if a task with the same id is already in the DAG.
        """
        if not isinstance(task, Task):
            raise TypeError(f"DAG.add takes a Task, got {task!r}")
        if task.id in self._tasks:
            raise DAGError(f"DAG {self.name!r} already has a task {task.id!r}")
        self._tasks[task.id] = task
        self._plan = None
        if task._dep_tasks:
            self._task_deps = True
        return task

    @overload
    def task(self, fn: _F, /) -> Task: ...
    @overload
    def task(
        self,
        fn: None = None,
        /,
        *,
        deps: Iterable[str | Task] = (),
        retries: int = 0,
        retry_delay: float = 0.0,
        timeout: float | None = None,
        trigger: TriggerRule = "all_success",
        id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        agent: str | None = None,
        inline: bool = False,
        run_on_fail_fast: bool = False,
    ) -> Callable[[Callable[..., Any]], Task]: ...

    def task(
        self,
        fn: Callable[..., Any] | None = None,
        /,
        *,
        deps: Iterable[str | Task] = (),
        retries: int = 0,
        retry_delay: float = 0.0,
        timeout: float | None = None,
        trigger: TriggerRule = "all_success",
        id: str | None = None,  # the public name of the option
        metadata: Mapping[str, Any] | None = None,
        agent: str | None = None,
        inline: bool = False,
        run_on_fail_fast: bool = False,
    ) -> Task | Callable[[Callable[..., Any]], Task]:
        """Decorate a function as a task of this DAG, bare or with options.

        The task id defaults to the function's name. Returns the ``Task`` (callable like
        the function), which later tasks can name in their ``deps``.
        """

        def decorate(f: Callable[..., Any]) -> Task:
            task = Task(
                id=id if id is not None else f.__name__,
                fn=f,
                deps=deps,
                retries=retries,
                retry_delay=retry_delay,
                timeout=timeout,
                trigger=trigger,
                metadata=dict(metadata) if metadata else None,
                agent=agent,
                inline=inline,
                run_on_fail_fast=run_on_fail_fast,
            )
            return self.add(task)

        return decorate(fn) if fn is not None else decorate

    def validate(self, *, fail_fast: bool = False) -> list[Task]:
        """Check the DAG and return its tasks in a topological order.

        Args:
            fail_fast: check it for ``run(..., fail_fast=True)`` too.

        Raises:
            DAGError: a dependency on an unknown task or a task of another DAG; a cycle
                (named in order); a task whose function needs a parameter that is not
                among its deps; with ``fail_fast``, a task whose rule runs after failures
                (``all_done``, ``always``, ``one_failed``, ``all_failed``) without
                ``run_on_fail_fast=True``.
        """
        order = self.plan().order
        if fail_fast:
            for task in order:
                if task.trigger in AFTER_FAILURES and not task.run_on_fail_fast:
                    raise DAGError(
                        f"task {task.id!r} has trigger={task.trigger!r}, which runs after "
                        "failures, but fail_fast=True cancels the run at the first "
                        "failure: set run_on_fail_fast=True on it to run it after the "
                        "cancellation (cleanup), or run without fail_fast"
                    )
        return list(order)

    def plan(self) -> Plan:
        """The validated execution plan (cached until the DAG changes; internal)."""
        if self._plan is None:
            self._plan = Plan.build(self)
        return self._plan
