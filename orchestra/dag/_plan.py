"""A validated DAG flattened into index arrays for the scheduler (internal)."""

from __future__ import annotations

import contextlib
import gc
import inspect
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from inspect import Parameter
from itertools import compress, repeat
from operator import attrgetter, itemgetter, not_
from types import FunctionType
from typing import TYPE_CHECKING, Any, Final, NoReturn, TypeAlias, final

from orchestra._errors import DAGError
from orchestra.dag._rules import RULES, Rule
from orchestra.dag._task_checks import DEFAULTS
from orchestra.dag._task_checks import is_async as coroutine_function

if TYPE_CHECKING:
    from orchestra.dag._model import DAG, Task

__all__ = ["KIND_ASYNC", "KIND_FULL", "KIND_INLINE", "Plan", "gc_paused", "kind"]


_ALL: Final = None  # a body that takes **kwargs: every upstream output


_NEEDS_NOTHING: Final[tuple[str, ...]] = ()

# How a worker may run a task's body: through the whole attempt loop, or, with nothing
# around it (no timeout, retries, agent or branch, and a run with no hooks), in place.
KIND_FULL: Final = 0
KIND_ASYNC: Final = 1  # an async body awaited in place
KIND_INLINE: Final = 2  # a sync inline body called in place
_KIND_UNSET: Final = (KIND_FULL, KIND_ASYNC)  # the kind of a task that sets no option, by is_async
_RULE_UNSET: Final = RULES[DEFAULTS.trigger]  # the rule of a task that sets no option


def kind(task: Task, is_async: bool) -> int:
    """How a worker may run ``task``'s body (``KIND_*``), when the run allows it.

    ``is_async``: whether its function is a coroutine function.
    """
    if task._options is DEFAULTS:  # no option set (the usual case)
        return _KIND_UNSET[is_async]
    if task.timeout is not None or task.retries or task.agent is not None or task.branch:
        return KIND_FULL
    if is_async:
        return KIND_ASYNC
    return KIND_INLINE if task.inline else KIND_FULL


_trigger_of = attrgetter("_options.trigger")  # the Options slot: no property call per task
_id_of = attrgetter("id")
_early_of = attrgetter("decides_on_success")
_waits_of = attrgetter("waits")
_on_success_of = attrgetter("runs_on_success")
_deps_of = attrgetter("deps")
_fn_of = attrgetter("fn")
_needs_of = itemgetter(1)
_async_of = itemgetter(2)
_PLAIN: Final = {FunctionType}
_Takes: TypeAlias = tuple[frozenset[str] | None, tuple[str, ...], bool]


def _takes(fn: Callable[..., Any]) -> _Takes:
    """What ``fn`` takes by keyword and needs (``_parameters``), and whether it is async."""
    names, needs = _parameters(fn)
    return names, needs, coroutine_function(fn)


def _parameters(fn: Callable[..., Any]) -> tuple[frozenset[str] | None, tuple[str, ...]]:
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


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """CPython's cyclic garbage collector paused meanwhile (as it was, after).

    For building and planning DAGs: a task makes a few containers, none in a cycle, and a
    collection every few hundred of them walks the whole growing heap (a full one every
    ~50,000 tasks walks every object of the process).
    """
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


@final
class Plan:
    """A validated DAG flattened into index arrays for the scheduler (internal).

    ``order`` is the order tasks were added when that is a topological order (each task
    added after its upstreams, the usual case: then planning is one pass), else Kahn's
    order; indexes are positions in it.

    Per task, for the scheduler: ``deps`` (its upstreams' ids), ``dependents``,
    ``indegree``, ``wants`` (the upstream outputs its body takes), ``kinds`` (``kind``:
    how its body may run), ``rules`` (its ``Rule``), and from the rule ``early`` (it may
    decide on a success before every upstream ended) and ``on_success`` (it runs when
    every upstream succeeded); ``always`` lists the tasks whose rule does not wait,
    ``threads`` says whether a sync body needs a thread and ``agent`` is the first task
    run by an agent (None: none is).
    ``upstreams`` (indexes) are built on first use: a run without hooks, journal or
    failures needs none.

    Built with whole-list operations (``map``, ``compress``) wherever a task needs no
    decision of its own: a per-task pass in Python costs as much as the rest of the
    plan (bench/scheduler.py, 100,000 tasks).
    """

    __slots__ = (
        "_upstreams",
        "agent",
        "always",
        "dependents",
        "deps",
        "early",
        "indegree",
        "index",
        "kinds",
        "on_success",
        "order",
        "rules",
        "sources",
        "threads",
        "wants",
    )

    def __init__(
        self,
        order: tuple[Task, ...],
        index: dict[str, int],
        deps: list[tuple[str, ...]],
        dependents: list[list[int]],
        takes: list[_Takes],
        takes_some: bool,
        options_set: bool,
    ) -> None:
        self.order = order
        self.index = index
        self.deps = deps
        self.dependents = dependents
        self._upstreams: list[tuple[int, ...]] | None = None
        n = len(order)
        self.indegree = indegree = list(map(len, deps))
        self.sources = tuple(compress(range(n), map(not_, indegree)))
        if takes_some:
            self.wants = list(map(_wants, takes, deps))
        else:  # no body takes an upstream output
            self.wants = [_NEEDS_NOTHING] * n
        asyncs = map(_async_of, takes)
        if options_set:
            self.kinds = kinds = list(map(kind, order, asyncs))
            self.rules: list[Rule] = list(map(RULES.__getitem__, map(_trigger_of, order)))
            self.early = list(map(_early_of, self.rules))
            self.on_success = list(map(_on_success_of, self.rules))
            self.always = tuple(compress(range(n), map(not_, map(_waits_of, self.rules))))
        else:  # no task sets an option: one rule for all, kinds by asyncness alone
            self.kinds = kinds = list(map(_KIND_UNSET.__getitem__, asyncs))
            self.rules = [_RULE_UNSET] * n
            self.early = [_RULE_UNSET.decides_on_success] * n
            self.on_success = [_RULE_UNSET.runs_on_success] * n
            self.always = () if _RULE_UNSET.waits else tuple(range(n))
        self.threads = False
        self.agent: Task | None = None
        if KIND_FULL in kinds:
            asyncs = map(_async_of, takes)
            self.threads = any(not (a or t.inline) for t, a in zip(order, asyncs, strict=True))
            self.agent = next((t for t in order if t.agent is not None), None)

    @property
    def upstreams(self) -> list[tuple[int, ...]]:
        """Per task, its upstreams' indexes (in ``deps`` order)."""
        if self._upstreams is None:
            get = self.index.__getitem__
            self._upstreams = list(map(tuple, map(map, repeat(get), self.deps)))
        return self._upstreams

    @classmethod
    def build(cls, dag: DAG) -> Plan:
        """Validate ``dag`` (iteratively: deep chains never recurse) and flatten it.

        The cyclic garbage collector pauses meanwhile: the plan makes a few containers
        per task, none in a cycle, and a collection pass over the growing heap every
        few hundred of them would cost as much as the planning itself.
        """
        with gc_paused():
            return cls._build(dag, tuple(dag._order), dag._index.copy(), None)

    @classmethod
    def _build(
        cls,
        dag: DAG,
        order: tuple[Task, ...],
        index: dict[str, int],
        signatures: tuple[list[_Takes], bool, bool] | None,
    ) -> Plan:
        """The plan of ``order``; DAGError if the DAG is not valid.

        ``signatures``: ``_signatures(order)``, already checked (None: work them out).
        When a task comes before one of its upstreams, this plans once more, in Kahn's
        order (in which none does), with the upstreams and signatures found here.
        """
        n = len(order)
        deps = list(map(_deps_of, order))
        if signatures is None:
            signatures = _signatures(order)
            takes, _, needs_some = signatures
            if needs_some:  # a body needs an upstream output: each has its upstream
                for i in compress(range(n), map(_needs_of, takes)):
                    if not set(takes[i][1]).issubset(deps[i]):
                        _diagnose(dag, order, index, takes)
        takes, takes_some, _ = signatures
        dependents: list[list[int]] = [[] for _ in order]
        in_order = True
        try:
            for i, ids in zip(compress(range(n), deps), filter(None, deps), strict=True):
                for dep in ids:
                    u = index[dep]  # a subscript, specialized for dicts: cheaper than a call
                    dependents[u].append(i)
                    if u > i:
                        in_order = False
        except KeyError:
            _diagnose(dag, order, index, takes)
        if not in_order:  # added before an upstream: the same tasks, in Kahn's order
            topo = _kahn(dag, order, deps, dependents)
            order = tuple(map(order.__getitem__, topo))
            index = dict(zip(map(_id_of, order), range(n), strict=True))
            ordered = list(map(takes.__getitem__, topo))
            return cls._build(dag, order, index, (ordered, takes_some, False))
        if dag._task_deps:  # a dependency given as a Task: this DAG's
            for task in order:
                if task._options.dep_tasks:
                    _same_dag(task, order, index)
        return cls(order, index, deps, dependents, takes, takes_some, dag._options_set)


def _signatures(order: tuple[Task, ...]) -> tuple[list[_Takes], bool, bool]:
    """Per task, ``_takes`` of its function, worked out once per function.

    Also whether any function takes an upstream output, and whether any needs one.
    """
    fns: list[Any] = list(map(_fn_of, order))
    try:  # plain functions are equal only to themselves: keyed by the function
        took: dict[Any, Any] = dict.fromkeys(fns)
        plain = set(map(type, took)) <= _PLAIN  # the distinct functions only
    except TypeError:  # an unhashable callable
        plain = False
    keys: list[object] = fns
    if not plain:  # other callables may define equality: by identity
        keys = list(map(id, fns))  # (the functions live meanwhile)
        took = dict(zip(keys, fns, strict=True))
        for key, fn in took.items():
            took[key] = _takes(fn)
    else:
        for fn in took:
            took[fn] = _takes(fn)
    signatures: list[_Takes] = list(took.values())
    return (
        list(map(took.__getitem__, keys)),
        any(names is _ALL or names for names, _, _ in signatures),
        any(needs for _, needs, _ in signatures),
    )


def _wants(took: _Takes, deps: tuple[str, ...]) -> tuple[str, ...]:
    """The upstream outputs a body that takes ``took[0]`` is given, of ``deps``."""
    names = took[0]
    if names is _ALL or (names and names.issuperset(deps)):
        return deps
    if names:
        return tuple(d for d in deps if d in names)
    return _NEEDS_NOTHING


def _diagnose(
    dag: DAG, order: tuple[Task, ...], index: Mapping[str, int], takes: list[_Takes]
) -> NoReturn:
    """Raise the first error, task by task in ``order``, that planning ran into."""
    for task, (_, needs, _) in zip(order, takes, strict=True):
        if needs and not set(needs).issubset(task.deps):
            _check_needs(task, needs)
        for dep in task.deps:
            if dep not in index:
                raise DAGError(f"task {task.id!r} depends on unknown task {dep!r}")
        if task._options.dep_tasks:
            _same_dag(task, order, index)
    raise AssertionError(f"DAG {dag.name!r}: no error to report")  # pragma: no cover


def _kahn(
    dag: DAG, order: tuple[Task, ...], deps: list[tuple[str, ...]], dependents: list[list[int]]
) -> list[int]:
    """The positions of ``order`` in Kahn's order, or DAGError naming a cycle."""
    indeg = list(map(len, deps))
    queue = deque(compress(range(len(order)), map(not_, indeg)))
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
        raise DAGError(f"DAG {dag.name!r} has a cycle: {' -> '.join(_find_cycle(dag.tasks, left))}")
    return topo


def _same_dag(task: Task, order: tuple[Task, ...], index: Mapping[str, int]) -> None:
    """Refuse a ``Task`` object given as a dependency that is not the one in this DAG."""
    for obj in task._options.dep_tasks:
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
