"""DAG building blocks: ``Task``, ``DAG``, ``TaskState`` and trigger rules."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import Any, Final, TypedDict, TypeVar, final, overload

import attrs

from orchestra._errors import DAGError
from orchestra.dag._plan import Plan, gc_paused
from orchestra.dag._rules import RULES, TriggerRule
from orchestra.dag._state import TaskState
from orchestra.dag._task_checks import DEFAULTS, NO_METADATA, Options, check_options, is_async

__all__ = ["DAG", "Task", "TaskOptions", "TaskState", "TriggerRule"]


class TaskOptions(TypedDict, total=False):
    """The options a ``Task`` takes beside ``id``, ``fn``, ``deps`` and ``inline``.

    For type checkers, to pass options along as ``**options``; each is described under
    ``Task``.
    """

    retries: int
    retry_delay: float
    timeout: float | None
    trigger: TriggerRule
    metadata: Mapping[str, Any] | None
    agent: str | None
    run_on_fail_fast: bool
    branch: bool


def _dep_ids(
    task_id: str, deps: Iterable[str | Task] | str | Task
) -> tuple[tuple[str, ...], tuple[Task, ...]]:
    """Dependencies given as ids or ``Task`` objects: their ids, and the objects.

    A repeated id counts once (its first place kept); one id or ``Task`` alone counts as
    a list of one.

    Raises:
        TypeError: a dependency that is neither an id nor a ``Task``.
        DAGError: the task depends on itself.
    """
    ids: dict[str, None] = {}
    objects: list[Task] = []
    for dep in (deps,) if isinstance(deps, str | Task) else deps:
        if type(dep) is str:  # the usual case, told first
            ids[dep] = None
        elif isinstance(dep, str):  # str subclasses too (a StrEnum's members, say)
            ids[str(dep)] = None
        elif isinstance(dep, Task):
            ids[dep.id] = None
            objects.append(dep)
        else:
            raise TypeError(
                f"task {task_id!r}: a dependency must be a task id or a Task, got {dep!r}"
            )
    if task_id in ids:
        raise DAGError(f"task {task_id!r} depends on itself")
    return tuple(ids), tuple(objects)


@final
@attrs.frozen(init=False, eq=False, repr=False)  # a task is one node: equal only to itself
class Task:
    """A unit of work in a DAG: an immutable value, validated when it is made.

    ``@dag.task`` returns a ``Task``; calling it calls its function, so the decorated
    function keeps working as a function.

    Args:
        id: unique in its DAG.
        fn: the body, ``def`` or ``async def``; it receives the outputs of the upstream
            tasks whose ids are among its parameters (or all of them with ``**kwargs``).
        deps: ids of the upstream tasks (``Task`` objects are accepted and turned to ids;
            a repeated id counts once).
        inline: run a sync body on the event loop (see the attributes).
        retries: see the attributes; so are the other options (``TaskOptions`` types
            them for ``**options``).
        retry_delay: see the attributes.
        timeout: see the attributes.
        trigger: see the attributes.
        metadata: see the attributes (copied: nothing is shared with the caller).
        agent: see the attributes.
        run_on_fail_fast: see the attributes.
        branch: see the attributes.

    Attributes:
        id: unique in its DAG.
        fn: the body.
        deps: ids of the upstream tasks, without repeats.
        is_async: whether ``fn`` is a coroutine function.

    The options (``inline``, ``retries``, ``retry_delay``, ``timeout``, ``trigger``,
    ``metadata``, ``agent``, ``run_on_fail_fast``, ``branch``) are read-only properties,
    each described there.

    Raises:
        ValueError: an empty or non-string id, a task that depends on itself, or an
            option out of range (``retries``, ``retry_delay``, ``timeout``, ``trigger``).
        TypeError: a ``fn`` that is not callable, a dependency that is neither an id
            nor a ``Task``, or an unknown option.
    """

    id: str
    fn: Callable[..., Any]
    deps: tuple[str, ...]
    is_async: bool
    _options: Options  # DEFAULTS, shared, unless an option is set
    _dep_tasks: tuple[Task, ...]  # deps given as Task objects: the plan checks they are ours

    def __init__(
        self,
        *,
        id: str,  # the public name of the field
        fn: Callable[..., Any],
        deps: Iterable[str | Task] = (),
        inline: bool = False,
        retries: int = 0,
        retry_delay: float = 0.0,
        timeout: float | None = None,
        trigger: TriggerRule = "all_success",
        metadata: Mapping[str, Any] | None = None,
        agent: str | None = None,
        run_on_fail_fast: bool = False,
        branch: bool = False,
    ) -> None:
        if type(id) is not str or not id:
            raise ValueError(f"a task id must be a non-empty string, got {id!r}")
        if not callable(fn):
            raise TypeError(f"task {id!r}: fn must be callable, got {fn!r}")
        dep_ids, dep_tasks = _dep_ids(id, deps) if deps else ((), ())
        options = DEFAULTS
        if not (  # every option its default, as given (False stays False, 0 stays 0)
            inline is False
            and timeout is None
            and agent is None
            and run_on_fail_fast is False
            and branch is False
            and not metadata
            and trigger == "all_success"
            and retries == 0
            and type(retries) is int
            and retry_delay == 0
            and type(retry_delay) is float
        ):
            check_options(id, retries, retry_delay, timeout, trigger)
            options = Options(
                inline=inline,
                retries=retries,
                retry_delay=retry_delay,
                timeout=timeout,
                trigger=trigger,
                metadata=MappingProxyType(dict(metadata)) if metadata else NO_METADATA,
                agent=agent,
                run_on_fail_fast=run_on_fail_fast,
                branch=branch,
            )
        self.__attrs_init__(id, fn, dep_ids, is_async(fn), options, dep_tasks)  # field order

    @property
    def inline(self) -> bool:
        """Run a sync body on the event loop instead of a worker thread (default False).

        For cheap bodies only: it blocks the loop while it runs.
        """
        return self._options.inline

    @property
    def retries(self) -> int:
        """How many times to retry a failure when no hook has an opinion (default 0)."""
        return self._options.retries

    @property
    def retry_delay(self) -> float:
        """Seconds to wait before such a retry (default 0)."""
        return self._options.retry_delay

    @property
    def timeout(self) -> float | None:
        """Seconds an attempt may take, its hooks included (default None: no limit).

        Past it the attempt fails with ``TimeoutError``.
        """
        return self._options.timeout

    @property
    def trigger(self) -> TriggerRule:
        """The ``TriggerRule`` (default ``"all_success"``)."""
        return self._options.trigger

    @property
    def metadata(self) -> Mapping[str, Any]:
        """Free-form data for hooks (default empty; read-only)."""
        return self._options.metadata

    @property
    def agent(self) -> str | None:
        """The name of a subagent that executes the task (default None).

        The body returns the text to dispatch, and the agent's output is the task's output.
        """
        return self._options.agent

    @property
    def run_on_fail_fast(self) -> bool:
        """Under ``run(..., fail_fast=True)``, run this task after the cancellation (default False).

        As cleanup: its trigger rule judges the upstreams that did not end as CANCELLED.
        Required there for a rule that runs after failures.
        """
        return self._options.run_on_fail_fast

    @property
    def branch(self) -> bool:
        """The body chooses which direct downstream tasks to follow (default False).

        The body (after its ``after_execute`` hooks) returns the id, or a list of ids, of
        the direct downstream tasks to follow; the task's other direct downstream tasks
        end SKIPPED.
        """
        return self._options.branch

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the task's function."""
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        deps = f", deps={list(self.deps)!r}" if self.deps else ""
        return f"Task(id={self.id!r}{deps})"

    def __reduce__(self) -> tuple[Any, ...]:
        # Rebuilt through the constructor (a read-only mapping does not pickle).
        options = {name: getattr(self, name) for name in _PICKLED}
        options["metadata"] = dict(self.metadata)
        return (_rebuild, (options,))


_PICKLED: Final = (
    "id",
    "fn",
    "deps",
    "inline",
    *TaskOptions.__annotations__,
)


def _rebuild(options: dict[str, Any]) -> Task:
    """Rebuild a pickled ``Task``."""
    return Task(**options)


_F = TypeVar("_F", bound=Callable[..., Any])


class DAG:
    """A directed acyclic graph of tasks.

    Build it with the ``@dag.task`` decorator, ``dag.add(Task(...))`` or, for a large DAG,
    ``dag.add_many``; then run it with ``orchestra.run(dag)`` or ``orchestra.run_sync(dag)``.

    Args:
        name: the DAG's name (used in traces and logs).
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self._index: dict[str, int] = {}  # task id -> its place in _order
        self._order: list[Task] = []  # the tasks in the order they were added
        self._plan: Plan | None = None
        self._task_deps = False  # whether a dependency was given as a Task (plan checks it)

    def __repr__(self) -> str:
        return f"DAG({self.name!r}, tasks={len(self._order)})"

    def __len__(self) -> int:
        return len(self._order)

    def __contains__(self, task_id: object) -> bool:
        return task_id in self._index

    @property
    def tasks(self) -> Mapping[str, Task]:
        """The tasks by id, in the order they were added (a copy)."""
        return dict(zip(self._index, self._order, strict=True))

    def add(self, task: Task) -> Task:
        """Add a task and return it.

        Raises:
            DAGError: if a task with the same id is already in the DAG.
        """
        if type(task) is not Task:
            raise TypeError(f"DAG.add takes a Task, got {task!r}")
        if task.id in self._index:
            raise DAGError(f"DAG {self.name!r} already has a task {task.id!r}")
        self._index[task.id] = len(self._order)
        self._order.append(task)
        self._plan = None
        if task._dep_tasks:
            self._task_deps = True
        return task

    def add_many(self, tasks: Iterable[Task]) -> list[Task]:
        """Add tasks in order, as ``add`` does each, and return them (a list).

        The way to build a large DAG: CPython's cyclic garbage collector pauses while
        ``tasks`` is consumed, so a generator's ``Task(...)`` are made without the
        collections that every few hundred new tasks set off (each walks the growing
        heap)::

            dag.add_many(Task(id=name, fn=step, deps=deps) for name, deps in graph.items())

        Raises:
            TypeError: an item that is not a ``Task``.
            DAGError: a task with an id already in the DAG (the tasks before it stay
                added, as with ``add`` in a loop).
        """
        add = self.add
        with gc_paused():
            return [add(task) for task in tasks]

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
        branch: bool = False,
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
        branch: bool = False,
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
                metadata=metadata,
                agent=agent,
                inline=inline,
                run_on_fail_fast=run_on_fail_fast,
                branch=branch,
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
                if RULES[task.trigger].runs_after_failures and not task.run_on_fail_fast:
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
