"""DAG building blocks: ``Task``, ``DAG``, ``TaskState`` and trigger rules."""

from __future__ import annotations

import inspect
import math
import sys
from collections.abc import Callable, Iterable, Mapping
from types import FunctionType, MappingProxyType
from typing import Any, Final, NoReturn, TypedDict, TypeVar, Unpack, final, overload

import attrs

from orchestra._errors import DAGError
from orchestra.dag._plan import Plan
from orchestra.dag._rules import AFTER_FAILURES, RULES, TriggerRule
from orchestra.dag._state import TaskState

__all__ = ["DAG", "Task", "TaskOptions", "TaskState", "TriggerRule"]

TRIGGER_RULES: Final = frozenset(RULES)


_CO_COROUTINE: Final = inspect.CO_COROUTINE
_DEFAULT_TRIGGER: Final[TriggerRule] = "all_success"


_NO_METADATA: Final[Mapping[str, Any]] = MappingProxyType({})

# How the scheduler may run a task's body (``Task._kind``): through the whole attempt
# loop, or, with no timeout, retries or agent (and a run with no hooks), in place.
KIND_FULL: Final = 0
KIND_ASYNC: Final = 1  # an async body awaited in place
KIND_INLINE: Final = 2  # a sync inline body called in place


def _dep_ids(
    task_id: str, deps: tuple[str | Task, ...]
) -> tuple[tuple[str, ...], tuple[Task, ...]]:
    """Dependencies given as ids or ``Task`` objects: their ids, and the objects.

    A repeated id counts once (its first place kept).

    Raises:
        TypeError: a dependency that is neither an id nor a ``Task``.
        DAGError: the task depends on itself.
    """
    ids: dict[str, None] = {}
    objects: list[Task] = []
    for dep in deps:
        if isinstance(dep, str):  # str subclasses too (a StrEnum's members, say)
            ids[dep] = None
        elif isinstance(dep, Task):
            ids[dep._id] = None
            objects.append(dep)
        else:
            raise TypeError(
                f"task {task_id!r}: a dependency must be a task id or a Task, got {dep!r}"
            )
    if task_id in ids:
        raise DAGError(f"task {task_id!r} depends on itself")
    return tuple(ids), tuple(objects)


def _is_async(fn: Callable[..., Any]) -> bool:
    """Whether calling ``fn`` returns a coroutine (async functions and callable objects)."""
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004  # async callable objects
    )


def _options(
    task_id: str, inline: bool, options: Mapping[str, Any], dep_tasks: tuple[Task, ...]
) -> _Options:
    """A task's options, checked (the shared defaults when they are all the defaults).

    Raises:
        TypeError: an unknown option.
        ValueError: a retries, retry_delay, timeout or trigger that is not valid.
    """
    unknown = options.keys() - _OPTION_DEFAULTS.keys()
    if unknown:
        raise TypeError(
            f"task {task_id!r}: unknown option {', '.join(map(repr, sorted(unknown)))}; "
            f"a Task takes {', '.join(sorted(_OPTION_DEFAULTS))}"
        )
    if (
        not dep_tasks
        and (inline is False or inline is True)
        and all(value is _OPTION_DEFAULTS[name] for name, value in options.items())
    ):
        return INLINE if inline else DEFAULTS
    given = {**_OPTION_DEFAULTS, **options}
    retries = given["retries"]
    retry_delay = given["retry_delay"]
    timeout = given["timeout"]
    trigger = given["trigger"]
    metadata = given["metadata"]
    if retries != 0 and (not isinstance(retries, int) or retries < 0):
        raise ValueError(f"task {task_id!r}: retries must be an int >= 0, got {retries!r}")
    if retry_delay != 0 and not (math.isfinite(retry_delay) and retry_delay >= 0):
        raise ValueError(
            f"task {task_id!r}: retry_delay must be a finite number >= 0, got {retry_delay!r}"
        )
    if timeout is not None and not (timeout > 0):
        raise ValueError(f"task {task_id!r}: timeout must be > 0, got {timeout!r}")
    if trigger != _DEFAULT_TRIGGER and trigger not in TRIGGER_RULES:
        raise ValueError(
            f"task {task_id!r}: unknown trigger rule {trigger!r}; "
            f"expected one of {', '.join(sorted(TRIGGER_RULES))}"
        )
    return _Options(
        retries,
        retry_delay,
        timeout,
        trigger,
        _NO_METADATA if metadata is None else metadata,
        given["agent"],
        inline,
        given["run_on_fail_fast"],
        dep_tasks,
    )


@final
class _Options:
    """A task's options beside its id, body and deps (internal).

    Tasks whose options are all the defaults share one instance (two: inline or not),
    so a ``Task`` has 6 slots, not 14: fewer to fill, and fewer for each pass of the
    cyclic garbage collector over a DAG of 100,000 tasks to visit.
    """

    __slots__ = (
        "agent",
        "dep_tasks",
        "inline",
        "metadata",
        "retries",
        "retry_delay",
        "run_on_fail_fast",
        "timeout",
        "trigger",
    )

    def __init__(
        self,
        retries: int,
        retry_delay: float,
        timeout: float | None,
        trigger: TriggerRule,
        metadata: Mapping[str, Any],
        agent: str | None,
        inline: bool,
        run_on_fail_fast: bool,
        dep_tasks: tuple[Task, ...],
    ) -> None:
        self.retries = retries
        self.retry_delay = retry_delay
        self.timeout = timeout
        self.trigger = trigger
        self.metadata = metadata
        self.agent = agent
        self.inline = inline
        self.run_on_fail_fast = run_on_fail_fast
        self.dep_tasks = dep_tasks


# The defaults of Task's options, compared by identity: a value equal to a default but
# not it (retries=False, say) gets an _Options of its own and is kept as given.
_NO_RETRIES: Final = 0
_NO_DELAY: Final = 0.0
DEFAULTS: Final = _Options(
    _NO_RETRIES, _NO_DELAY, None, _DEFAULT_TRIGGER, _NO_METADATA, None, False, False, ()
)
INLINE: Final = _Options(
    _NO_RETRIES, _NO_DELAY, None, _DEFAULT_TRIGGER, _NO_METADATA, None, True, False, ()
)


class TaskOptions(TypedDict, total=False):
    """The options a ``Task`` takes beside ``id``, ``fn`` and ``deps`` (for type checkers).

    Each is described under ``Task``; a task given none of them shares one set of
    defaults with every other such task.
    """

    retries: int
    retry_delay: float
    timeout: float | None
    trigger: TriggerRule
    metadata: Mapping[str, Any] | None
    agent: str | None
    run_on_fail_fast: bool


# Each option's default, compared by identity: a value equal to a default but not it
# (retries=False, say) is kept as given. The keys are TaskOptions' (a test checks).
_OPTION_DEFAULTS: Final[Mapping[str, Any]] = MappingProxyType(
    {
        "retries": _NO_RETRIES,
        "retry_delay": _NO_DELAY,
        "timeout": None,
        "trigger": _DEFAULT_TRIGGER,
        "metadata": None,
        "agent": None,
        "run_on_fail_fast": False,
    }
)
# Whether a plain function may carry inspect.markcoroutinefunction's mark (3.12+).
_MARKED_COROUTINES: Final = sys.version_info >= (3, 12)


def _refuse_set(task: Task, value: object) -> NoReturn:
    raise attrs.exceptions.FrozenInstanceError()


def _refuse_delete(task: Task) -> NoReturn:
    raise attrs.exceptions.FrozenInstanceError()


@final
class Task:
    """A unit of work in a DAG (immutable).

    ``@dag.task`` returns a ``Task``; calling it calls its function, so the decorated
    function keeps working as a function.

    Args:
        id: unique in its DAG.
        fn: the body, ``def`` or ``async def``; it receives the outputs of the upstream
            tasks whose ids are among its parameters (or all of them with ``**kwargs``).
        deps: ids of the upstream tasks (``Task`` objects are accepted and turned to ids;
            a repeated id counts once).
        inline: run a sync body on the event loop (see the attributes).
        **options: any of ``retries``, ``retry_delay``, ``timeout``, ``trigger``,
            ``metadata``, ``agent`` and ``run_on_fail_fast`` (see the attributes;
            ``TaskOptions`` types them).

    Attributes:
        id: unique in its DAG.
        fn: the body.
        deps: ids of the upstream tasks, without repeats.
        retries: how many times to retry a failure when no hook has an opinion (default 0).
        retry_delay: seconds to wait before such a retry (default 0).
        timeout: seconds an attempt may take (default None: no limit); past it the
            attempt fails with ``TimeoutError``.
        trigger: the ``TriggerRule`` (default ``"all_success"``).
        metadata: free-form data for hooks (default empty).
        agent: the name of a subagent that executes the task: the body returns the text
            to dispatch, and the agent's output is the task's output (default None).
        inline: run a sync body on the event loop instead of a worker thread (for cheap
            bodies only: it blocks the loop while it runs; default False).
        run_on_fail_fast: under ``run(..., fail_fast=True)``, run this task after the
            cancellation, as cleanup (its trigger rule judging upstreams that did not
            end as CANCELLED); required there for a rule that runs after failures
            (default False).
        is_async: whether ``fn`` is a coroutine function.

    Raises:
        ValueError: an empty or non-string id, a task that depends on itself, or an
            option out of range (``retries``, ``retry_delay``, ``timeout``, ``trigger``).
        TypeError: a ``fn`` that is not callable, a dependency that is neither an id
            nor a ``Task``, or an unknown option.
    """

    # The fields live in private slots behind read-only properties: a class that
    # refuses __setattr__ would pay a slow store per field in __init__ too, and a DAG of
    # 100,000 tasks builds 100,000 (bench/scheduler.py). Options given as ``**options``
    # cost one test when there are none, the usual case, instead of one per option.
    __slots__ = ("__weakref__", "_deps", "_fn", "_id", "_is_async", "_kind", "_opts")

    def __init__(
        self,
        *,
        id: str,  # the public name of the field
        fn: Callable[..., Any],
        deps: Iterable[str | Task] = (),
        inline: bool = False,
        **options: Unpack[TaskOptions],
    ) -> None:
        if type(id) is not str or not id:
            raise ValueError(f"a task id must be a non-empty string, got {id!r}")
        if type(fn) is FunctionType:  # the usual case, checked without inspect
            is_async = fn.__code__.co_flags & _CO_COROUTINE != 0 or (
                _MARKED_COROUTINES and bool(fn.__dict__) and _is_async(fn)
            )
        elif callable(fn):
            is_async = _is_async(fn)
        else:
            raise TypeError(f"task {id!r}: fn must be callable, got {fn!r}")
        dep_tasks: tuple[Task, ...] = ()
        if not deps:
            dep_ids: tuple[str, ...] = ()
        elif type(deps) is list or type(deps) is tuple or not isinstance(deps, (str, Task)):
            dep_ids = tuple(deps)  # type: ignore[arg-type]  # checked just below
            k = len(dep_ids)  # 1 to 3 ids checked in line (no set per task)
            if k == 1:
                a = dep_ids[0]
                if type(a) is not str or a == id:
                    dep_ids, dep_tasks = _dep_ids(id, dep_ids)
            elif k == 2:
                a, b = dep_ids
                if type(a) is not str or type(b) is not str or a == b or id in dep_ids:
                    dep_ids, dep_tasks = _dep_ids(id, dep_ids)
            elif k == 3:
                a, b, c = dep_ids
                if (
                    type(a) is not str
                    or type(b) is not str
                    or type(c) is not str
                    or a == b
                    or b == c
                    or c == a
                    or id in dep_ids
                ):
                    dep_ids, dep_tasks = _dep_ids(id, dep_ids)
            else:
                dep_ids, dep_tasks = _dep_ids(id, dep_ids)
        else:  # one id or one Task, not in a collection
            dep_ids, dep_tasks = _dep_ids(id, (deps,))
        if options or dep_tasks or (inline is not False and inline is not True):
            opts = _options(id, inline, options, dep_tasks)
            kind = (
                KIND_FULL
                if opts.timeout is not None or opts.retries or opts.agent is not None
                else KIND_ASYNC
                if is_async
                else KIND_INLINE
                if inline
                else KIND_FULL
            )
        elif inline:
            opts = INLINE
            kind = KIND_ASYNC if is_async else KIND_INLINE
        else:
            opts = DEFAULTS
            kind = KIND_ASYNC if is_async else KIND_FULL
        self._id = id
        self._fn = fn
        self._deps = dep_ids
        self._is_async = is_async
        self._opts = opts
        self._kind = kind

    @property
    def id(self) -> str:
        """Unique in its DAG."""
        return self._id

    @property
    def fn(self) -> Callable[..., Any]:
        """The body, ``def`` or ``async def``."""
        return self._fn

    @property
    def deps(self) -> tuple[str, ...]:
        """Ids of the upstream tasks, without repeats."""
        return self._deps

    @property
    def is_async(self) -> bool:
        """Whether ``fn`` is a coroutine function."""
        return self._is_async

    @property
    def retries(self) -> int:
        """How many times to retry a failure when no hook has an opinion."""
        return self._opts.retries

    @property
    def retry_delay(self) -> float:
        """Seconds to wait before such a retry."""
        return self._opts.retry_delay

    @property
    def timeout(self) -> float | None:
        """Seconds an attempt may take (None = no limit)."""
        return self._opts.timeout

    @property
    def trigger(self) -> TriggerRule:
        """The ``TriggerRule``."""
        return self._opts.trigger

    @property
    def metadata(self) -> Mapping[str, Any]:
        """Free-form data for hooks."""
        return self._opts.metadata

    @property
    def agent(self) -> str | None:
        """The name of a subagent that executes the task, if any."""
        return self._opts.agent

    @property
    def inline(self) -> bool:
        """Whether a sync body runs on the event loop instead of a worker thread."""
        return self._opts.inline

    @property
    def run_on_fail_fast(self) -> bool:
        """Whether the task runs after a fail_fast cancellation, as cleanup."""
        return self._opts.run_on_fail_fast

    @property
    def _dep_tasks(self) -> tuple[Task, ...]:
        """The dependencies given as ``Task`` objects (checked to be this DAG's)."""
        return self._opts.dep_tasks

    def __reduce__(self) -> tuple[Any, ...]:
        return (
            _task,
            (
                self._id,
                self._fn,
                self._deps,
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
        return self._fn(*args, **kwargs)

    def __repr__(self) -> str:
        deps = f", deps={list(self._deps)!r}" if self._deps else ""
        return f"Task(id={self._id!r}{deps})"


# Every public field refuses assignment and deletion as a frozen attrs class does (the
# properties above are what type checkers and the docs read).
for _name, _field in list(vars(Task).items()):
    if isinstance(_field, property) and not _name.startswith("_"):
        setattr(Task, _name, property(_field.fget, _refuse_set, _refuse_delete, _field.__doc__))
del _name, _field


def _annotation(annotation: object) -> object:
    """An option's annotation as ``inspect.signature`` shows the others (a string)."""
    return getattr(annotation, "__forward_arg__", annotation)


# What inspect.signature(Task) shows: every option by name, as ``TaskOptions`` types them.
_INIT: Final = inspect.signature(Task.__init__)
Task.__signature__ = _INIT.replace(  # type: ignore[attr-defined]
    parameters=[
        *list(_INIT.parameters.values())[1:-1],  # id, fn, deps, inline: not self, **options
        *(
            inspect.Parameter(
                name,
                inspect.Parameter.KEYWORD_ONLY,
                default=default,
                annotation=_annotation(TaskOptions.__annotations__[name]),
            )
            for name, default in _OPTION_DEFAULTS.items()
        ),
    ],
    return_annotation=inspect.Signature.empty,
)


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
        index = self._index
        order = self._order
        place = len(order)
        if index.setdefault(task._id, place) is not place:
            raise DAGError(f"DAG {self.name!r} already has a task {task._id!r}")
        order.append(task)
        self._plan = None
        if task._opts.dep_tasks:
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
        retries: int = _NO_RETRIES,
        retry_delay: float = _NO_DELAY,
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
        retries: int = _NO_RETRIES,
        retry_delay: float = _NO_DELAY,
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
