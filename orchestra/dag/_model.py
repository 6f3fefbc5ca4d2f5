"""DAG building blocks: ``Task``, ``DAG``, ``TaskState`` and trigger rules."""

from __future__ import annotations

import enum
import inspect
import math
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from inspect import Parameter
from typing import Any, Final, Literal, TypeAlias, TypeVar, final, overload

import attrs

from orchestra._errors import DAGError

__all__ = ["DAG", "Task", "TaskState", "TriggerRule"]

TriggerRule: TypeAlias = Literal["all_success", "all_done", "none_failed"]
"""When a task runs, given how its upstream tasks ended:

- ``"all_success"`` (default): when all upstreams SUCCEEDED; an upstream FAILED (or
  UPSTREAM_FAILED) makes it UPSTREAM_FAILED, an upstream SKIPPED makes it SKIPPED.
- ``"all_done"``: once every upstream ended, whatever its state.
- ``"none_failed"``: unless an upstream FAILED (or UPSTREAM_FAILED); SKIPPED upstreams are fine.
"""

TRIGGER_RULES: Final = frozenset({"all_success", "all_done", "none_failed"})


class TaskState(enum.Enum):
    """The state of a task in a run; every task ends in exactly one terminal state.

    Attributes:
        PENDING: not started yet.
        RUNNING: an attempt is under way (or waiting to retry).
        SUCCEEDED: an attempt returned; its result is in ``RunResult.outputs``.
        FAILED: it raised and no hook retried it, or a hook answered ``Fail``.
        SKIPPED: a hook answered ``Skip``, or an upstream was skipped (``all_success``).
        UPSTREAM_FAILED: an upstream failed and its trigger rule does not run it.
        CANCELLED: the run was cancelled (or ``fail_fast`` stopped it) before it ended.
    """

    PENDING = "pending"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    SKIPPED = "skipped"
    UPSTREAM_FAILED = "upstream_failed"
    CANCELLED = "cancelled"

    @property
    def terminal(self) -> bool:
        """Whether the state is final."""
        return self not in (TaskState.PENDING, TaskState.RUNNING)


def _dep_ids(deps: list[str | Task]) -> tuple[str, ...]:
    ids = []
    for dep in deps:
        if isinstance(dep, Task):
            ids.append(dep.id)
        elif isinstance(dep, str):
            ids.append(dep)
        else:
            raise TypeError(f"a dependency must be a task id or a Task, got {dep!r}")
    return tuple(dict.fromkeys(ids))


def _dep_objects(deps: list[str | Task]) -> tuple[Task, ...]:
    return tuple(dep for dep in deps if isinstance(dep, Task))


@final
@attrs.frozen(eq=False, repr=False)
class Task:
    """A unit of work in a DAG.

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
    """

    id: str
    fn: Callable[..., Any]
    _given_deps: Iterable[str | Task] = attrs.field(default=(), alias="deps", repr=False)
    retries: int = 0
    retry_delay: float = 0.0
    timeout: float | None = None
    trigger: TriggerRule = "all_success"
    metadata: Mapping[str, Any] = attrs.field(factory=dict)
    agent: str | None = None
    inline: bool = False
    deps: tuple[str, ...] = attrs.field(init=False)
    is_async: bool = attrs.field(init=False)
    _dep_tasks: tuple[Task, ...] = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        given = self._given_deps
        given = [given] if isinstance(given, str | Task) else list(given)
        object.__setattr__(self, "deps", _dep_ids(given))
        object.__setattr__(self, "_dep_tasks", _dep_objects(given))
        object.__setattr__(self, "_given_deps", ())
        if not isinstance(self.id, str) or not self.id:
            raise ValueError(f"a task id must be a non-empty string, got {self.id!r}")
        if not callable(self.fn):
            raise TypeError(f"task {self.id!r}: fn must be callable, got {self.fn!r}")
        if self.id in self.deps:
            raise DAGError(f"task {self.id!r} depends on itself")
        if not isinstance(self.retries, int) or self.retries < 0:
            raise ValueError(f"task {self.id!r}: retries must be an int >= 0, got {self.retries!r}")
        if not (math.isfinite(self.retry_delay) and self.retry_delay >= 0):
            raise ValueError(
                f"task {self.id!r}: retry_delay must be a finite number >= 0, "
                f"got {self.retry_delay!r}"
            )
        if self.timeout is not None and not (self.timeout > 0):
            raise ValueError(f"task {self.id!r}: timeout must be > 0, got {self.timeout!r}")
        if self.trigger not in TRIGGER_RULES:
            raise ValueError(
                f"task {self.id!r}: unknown trigger rule {self.trigger!r}; "
                f"expected one of {', '.join(sorted(TRIGGER_RULES))}"
            )
        fn = self.fn
        is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
            getattr(fn, "__call__", None)  # noqa: B004  # async callable objects
        )
        object.__setattr__(self, "is_async", is_async)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the task's function."""
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        deps = f", deps={list(self.deps)!r}" if self.deps else ""
        return f"Task(id={self.id!r}{deps})"


_F = TypeVar("_F", bound=Callable[..., Any])


def _wants(fn: Callable[..., Any], deps: tuple[str, ...]) -> tuple[str, ...]:
    """Which upstream outputs a body takes as keyword arguments."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):  # builtins without a signature take nothing
        return ()
    if any(p.kind is Parameter.VAR_KEYWORD for p in params.values()):
        return deps
    return tuple(
        d
        for d in deps
        if d in params
        and params[d].kind
        in (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    )


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
                metadata=dict(metadata or {}),
                agent=agent,
                inline=inline,
            )
            return self.add(task)

        return decorate(fn) if fn is not None else decorate

    def validate(self) -> list[Task]:
        """Check the DAG and return its tasks in a topological order.

        Raises:
            DAGError: for a dependency on an unknown task or a task of another DAG, or
                a cycle (the message names the cycle's tasks in order).
        """
        return list(self.plan().order)

    def plan(self) -> Plan:
        """The validated execution plan (cached until the DAG changes; internal)."""
        if self._plan is None:
            self._plan = Plan.build(self)
        return self._plan


@final
class Plan:
    """A validated DAG flattened into index arrays for the scheduler (internal)."""

    __slots__ = ("dependents", "indegree", "index", "order", "sources", "upstreams", "wants")

    def __init__(
        self,
        order: tuple[Task, ...],
        indegree: list[int],
        dependents: list[tuple[int, ...]],
        wants: list[tuple[str, ...]],
    ) -> None:
        self.order = order
        self.index = {t.id: i for i, t in enumerate(order)}
        self.indegree = indegree
        self.dependents = dependents
        self.wants = wants
        self.sources = tuple(i for i, n in enumerate(indegree) if n == 0)
        self.upstreams = [tuple(self.index[d] for d in t.deps) for t in order]

    @classmethod
    def build(cls, dag: DAG) -> Plan:
        """Validate ``dag`` (iteratively: deep chains never recurse) and flatten it."""
        tasks = dag._tasks
        for task in tasks.values():
            for dep in task.deps:
                if dep not in tasks:
                    raise DAGError(f"task {task.id!r} depends on unknown task {dep!r}")
            for obj in task._dep_tasks:
                if tasks[obj.id] is not obj:
                    raise DAGError(f"task {task.id!r} depends on {obj.id!r}, a task of another DAG")
        # Kahn's algorithm over the insertion order.
        indeg = {tid: len(t.deps) for tid, t in tasks.items()}
        children: dict[str, list[str]] = {tid: [] for tid in tasks}
        for tid, t in tasks.items():
            for dep in t.deps:
                children[dep].append(tid)
        queue = deque(tid for tid, n in indeg.items() if n == 0)
        order: list[str] = []
        while queue:
            tid = queue.popleft()
            order.append(tid)
            for child in children[tid]:
                indeg[child] -= 1
                if indeg[child] == 0:
                    queue.append(child)
        if len(order) != len(tasks):
            raise DAGError(
                f"DAG {dag.name!r} has a cycle: {' -> '.join(_find_cycle(tasks, indeg))}"
            )
        index = {tid: i for i, tid in enumerate(order)}
        wants_cache: dict[tuple[int, tuple[str, ...]], tuple[str, ...]] = {}
        wants: list[tuple[str, ...]] = []
        for tid in order:
            t = tasks[tid]
            key = (id(t.fn), t.deps)
            w = wants_cache.get(key)
            if w is None:
                w = wants_cache[key] = _wants(t.fn, t.deps) if t.deps else ()
            wants.append(w)
        return cls(
            order=tuple(tasks[tid] for tid in order),
            indegree=[len(tasks[tid].deps) for tid in order],
            dependents=[tuple(index[c] for c in children[tid]) for tid in order],
            wants=wants,
        )


def _find_cycle(tasks: Mapping[str, Task], indeg: Mapping[str, int]) -> list[str]:
    """Walk the dependencies among the tasks Kahn could not order until one repeats."""
    left = {tid for tid, n in indeg.items() if n > 0}
    start = next(tid for tid in tasks if tid in left)
    seen: dict[str, int] = {}
    path: list[str] = []
    node = start
    while node not in seen:
        seen[node] = len(path)
        path.append(node)
        node = next(dep for dep in tasks[node].deps if dep in left)
    cycle = path[seen[node] :]
    # Report in execution direction: upstream -> downstream.
    cycle.reverse()
    return [*cycle, cycle[0]]
