"""A validated DAG flattened into index arrays for the scheduler (internal)."""

from __future__ import annotations

import gc
import inspect
from collections import deque
from collections.abc import Callable, Mapping
from inspect import Parameter
from operator import attrgetter
from typing import TYPE_CHECKING, Any, Final, final

from orchestra._errors import DAGError
from orchestra.dag._rules import EARLY_ON_SUCCESS

if TYPE_CHECKING:
    from orchestra.dag._model import DAG, Task

__all__ = ["Plan"]


_ALL: Final = None  # a body that takes **kwargs: every upstream output


_NEEDS_NOTHING: Final[tuple[str, ...]] = ()
_KIND_FULL: Final = 0  # orchestra.dag._model.KIND_FULL (which imports this module)
_DEFAULT_TRIGGER: Final = "all_success"
# Rules that do not run when every upstream succeeded.
_NOT_ON_SUCCESS: Final = frozenset({"one_failed", "all_failed", "all_skipped"})
_kind_of = attrgetter("_kind")
_trigger_of = attrgetter("trigger")


def _takes(fn: Callable[..., Any]) -> tuple[frozenset[str] | None, tuple[str, ...]]:
    """What ``fn`` takes by keyword (None: ``**kwargs``), and the parameters it needs.

    A needed parameter has no default; the scheduler passes upstream outputs by keyword,
    so each must be an upstream id; a positional-only one can never be passed, so it is
    needed under a name no task has (``/name``).
    """
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):  # builtins without a signature take nothing
        return frozenset(), _NEEDS_NOTHING
    needs = tuple(
        f"/{name}" if p.kind is Parameter.POSITIONAL_ONLY else name
        for name, p in params.items()
        if p.default is Parameter.empty
        and p.kind not in (Parameter.VAR_POSITIONAL, Parameter.VAR_KEYWORD)
    )
    if any(p.kind is Parameter.VAR_KEYWORD for p in params.values()):
        return _ALL, needs
    return frozenset(
        name
        for name, p in params.items()
        if p.kind in (Parameter.KEYWORD_ONLY, Parameter.POSITIONAL_OR_KEYWORD)
    ), needs


def _check_needs(task: Task, needs: tuple[str, ...]) -> None:
    """Refuse a task whose function needs a parameter no upstream provides."""
    fn = task.fn
    for need in needs:
        if need in task.deps:
            continue
        name = need.lstrip("/")
        what = getattr(fn, "__qualname__", type(fn).__name__)
        deps = ", ".join(map(repr, task.deps)) or "none"
        why = (
            "positional-only: upstream outputs are passed by keyword"
            if need.startswith("/")
            else f"not one of its deps ({deps})"
        )
        raise DAGError(
            f"task {task.id!r}: {what}() needs the parameter {name!r}, which is {why}; "
            f"add {name!r} to its deps, or give the parameter a default"
        )


@final
class Plan:
    """A validated DAG flattened into index arrays for the scheduler (internal).

    ``order`` is the order tasks were added when that is a topological order (each task
    added after its upstreams, the usual case: then planning is one pass), else Kahn's
    order; indexes are positions in it.

    Per task, for the scheduler: ``kinds`` (``Task._kind``: how its body may run),
    ``early`` (its rule may decide on a success before every upstream ended),
    ``on_success`` (its rule runs it when every upstream succeeded); ``always`` lists the
    ``"always"`` tasks, ``threads`` says whether a sync body needs a thread and ``agent``
    is the first task run by an agent (None: none is).
    """

    __slots__ = (
        "agent",
        "always",
        "dependents",
        "early",
        "indegree",
        "index",
        "kinds",
        "on_success",
        "order",
        "sources",
        "threads",
        "upstreams",
        "wants",
    )

    def __init__(
        self,
        order: tuple[Task, ...],
        index: dict[str, int],
        upstreams: list[tuple[int, ...]],
        dependents: list[list[int]],
        wants: list[tuple[str, ...]],
    ) -> None:
        self.order = order
        self.index = index
        self.upstreams = upstreams
        self.dependents = dependents
        self.wants = wants
        self.indegree = indegree = list(map(len, upstreams))
        self.sources = tuple(i for i, n in enumerate(indegree) if not n)
        n = len(order)
        # Whole-list operations for the usual DAG (default rules, plain bodies): a
        # per-task pass in Python would cost as much as the rest of the plan.
        self.kinds = kinds = list(map(_kind_of, order))
        triggers = list(map(_trigger_of, order))
        if triggers.count(_DEFAULT_TRIGGER) == n:
            self.early = [False] * n
            self.on_success = [True] * n
            self.always: tuple[int, ...] = ()
        else:
            self.early = [t in EARLY_ON_SUCCESS for t in triggers]
            self.on_success = [t not in _NOT_ON_SUCCESS for t in triggers]
            self.always = tuple(i for i, t in enumerate(triggers) if t == "always")
        self.threads = False
        self.agent: Task | None = None
        if _KIND_FULL in kinds:
            self.threads = any(not (t.is_async or t.inline) for t in order)
            self.agent = next((t for t in order if t.agent is not None), None)

    @classmethod
    def build(cls, dag: DAG) -> Plan:
        """Validate ``dag`` (iteratively: deep chains never recurse) and flatten it.

        The cyclic garbage collector pauses meanwhile: the plan makes a few containers
        per task, none in a cycle, and a collection pass over the growing heap every
        few hundred of them would cost as much as the planning itself.
        """
        collecting = gc.isenabled()
        gc.disable()
        try:
            return cls._build(dag)
        finally:
            if collecting:
                gc.enable()

    @classmethod
    def _build(cls, dag: DAG) -> Plan:
        order = tuple(dag._tasks.values())
        index = dict(zip(dag._tasks, range(len(order)), strict=True))
        get = index.__getitem__
        upstreams: list[tuple[int, ...]] = []
        dependents: list[list[int]] = [[] for _ in order]
        wants: list[tuple[str, ...]] = []
        add_up, add_want = upstreams.append, wants.append
        # by id(fn), what each function takes and needs (the functions live meanwhile)
        takes: dict[int, tuple[frozenset[str] | None, tuple[str, ...]]] = {}
        sorted_ = True
        try:
            for i, task in enumerate(order):
                deps = task.deps
                key = id(task.fn)
                took = takes.get(key)
                if took is None:
                    took = takes[key] = _takes(task.fn)
                names, needs = took
                if needs and not set(needs).issubset(deps):
                    _check_needs(task, needs)
                if not deps:
                    add_up(())
                    add_want(())
                    continue
                ups = tuple(map(get, deps))
                add_up(ups)
                for u in ups:
                    dependents[u].append(i)
                if sorted_ and max(ups) > i:
                    sorted_ = False
                if task._dep_tasks:
                    _same_dag(task, order, index)
                if names is _ALL or (names and names.issuperset(deps)):
                    add_want(deps)
                elif names:
                    add_want(tuple(d for d in deps if d in names))
                else:
                    add_want(())
        except KeyError:
            task = order[len(upstreams)]
            unknown = next(d for d in task.deps if d not in index)
            raise DAGError(f"task {task.id!r} depends on unknown task {unknown!r}") from None
        if sorted_:
            return cls(order, index, upstreams, dependents, wants)
        return cls._kahn(dag, order, upstreams, dependents, wants)

    @classmethod
    def _kahn(
        cls,
        dag: DAG,
        order: tuple[Task, ...],
        upstreams: list[tuple[int, ...]],
        dependents: list[list[int]],
        wants: list[tuple[str, ...]],
    ) -> Plan:
        """Order tasks added before their upstreams (Kahn's algorithm), or name a cycle."""
        indeg = list(map(len, upstreams))
        queue = deque(i for i, n in enumerate(indeg) if n == 0)
        topo: list[int] = []
        while queue:
            i = queue.popleft()
            topo.append(i)
            for child in dependents[i]:
                indeg[child] -= 1
                if indeg[child] == 0:
                    queue.append(child)
        if len(topo) != len(order):
            left = {order[i].id: n for i, n in enumerate(indeg)}
            raise DAGError(
                f"DAG {dag.name!r} has a cycle: {' -> '.join(_find_cycle(dag._tasks, left))}"
            )
        position = [0] * len(order)
        for new, old in enumerate(topo):
            position[old] = new
        ordered = tuple(order[old] for old in topo)
        return cls(
            ordered,
            {task.id: i for i, task in enumerate(ordered)},
            [tuple(position[u] for u in upstreams[old]) for old in topo],
            [[position[d] for d in dependents[old]] for old in topo],
            [wants[old] for old in topo],
        )


def _same_dag(task: Task, order: tuple[Task, ...], index: Mapping[str, int]) -> None:
    """Refuse a ``Task`` object given as a dependency that is not the one in this DAG."""
    for obj in task._dep_tasks:
        if order[index[obj.id]] is not obj:
            raise DAGError(f"task {task.id!r} depends on {obj.id!r}, a task of another DAG")


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
