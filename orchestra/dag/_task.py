"""``Task``: one node of a DAG, an immutable value validated when it is made."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import Any, Final, TypedDict, final

import attrs

from orchestra._errors import DAGError
from orchestra.dag._rules import TriggerRule
from orchestra.dag._task_checks import DEFAULTS, NO_METADATA, Options, check_options, is_async

__all__ = ["Task", "TaskOptions"]


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


def _dep_ids(task_id: str, deps: Iterable[str | Task]) -> tuple[tuple[str, ...], tuple[Task, ...]]:
    """Dependencies given as ids or ``Task`` objects: their ids, and the objects.

    A repeated id counts once (its first place kept).

    Raises:
        TypeError: a dependency that is neither an id nor a ``Task``.
        DAGError: the task depends on itself.
    """
    ids: dict[str, None] = {}
    objects: list[Task] = []
    for dep in deps:
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


_LISTS: Final = (tuple, list)


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

    ``is_async`` and the options (``inline``, ``retries``, ``retry_delay``, ``timeout``,
    ``trigger``, ``metadata``, ``agent``, ``run_on_fail_fast``, ``branch``) are read-only
    properties, each described there.

    Raises:
        ValueError: an empty or non-string id, a task that depends on itself, or an
            option out of range (``retries``, ``retry_delay``, ``timeout``, ``trigger``).
        TypeError: a ``fn`` that is not callable, a dependency that is neither an id
            nor a ``Task``, or an unknown option.
    """

    id: str
    fn: Callable[..., Any]
    deps: tuple[str, ...]
    _options: Options  # DEFAULTS, shared, unless an option is set or a dep is a Task

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
        if type(deps) in _LISTS:  # the usual case: no call for none (an array refuses bool())
            dep_ids, dep_tasks = _dep_ids(id, deps) if deps else ((), ())
        else:  # one id or Task alone counts as a list of one
            dep_ids, dep_tasks = _dep_ids(id, (deps,) if isinstance(deps, (str, Task)) else deps)
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
        if dep_tasks:  # kept for the plan, which checks they are the DAG's own
            options = attrs.evolve(options, dep_tasks=dep_tasks)
        self.__attrs_init__(id, fn, dep_ids, options)  # in field order

    @property
    def is_async(self) -> bool:
        """Whether ``fn`` is a coroutine function (calling it returns a coroutine)."""
        return is_async(self.fn)  # inspected once per function object (_task_checks)

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
