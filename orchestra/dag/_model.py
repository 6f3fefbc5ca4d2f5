"""DAG building blocks: ``Task``, ``DAG``, ``TaskState`` and trigger rules."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar, overload

from orchestra._errors import DAGError
from orchestra.dag._plan import Plan, gc_paused
from orchestra.dag._rules import RULES, TriggerRule
from orchestra.dag._state import TaskState
from orchestra.dag._task import Task, TaskOptions
from orchestra.dag._task_checks import DEFAULTS

__all__ = ["DAG", "Task", "TaskOptions", "TaskState", "TriggerRule"]


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
        self._options_set = False  # whether a task sets an option (else the plan is simpler)
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
        self._add((task,))
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
        with gc_paused():
            return self._add(tasks)

    def _add(self, tasks: Iterable[Task]) -> list[Task]:
        """Add ``tasks`` in order (``add``, ``add_many``); the ones before a refused one stay."""
        self._plan = None
        index = self._index
        order = self._order
        added: list[Task] = []
        for task in tasks:
            if type(task) is not Task:
                raise TypeError(f"DAG.add takes a Task, got {task!r}")
            if task.id in index:
                raise DAGError(f"DAG {self.name!r} already has a task {task.id!r}")
            index[task.id] = len(order)
            order.append(task)
            added.append(task)
            options = task._options
            if options is not DEFAULTS:
                self._options_set = True
                if options.dep_tasks:
                    self._task_deps = True
        return added

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
