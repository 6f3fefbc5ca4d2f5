"""What a ``Task`` checks of its function and options when it is made (internal).

And ``Options``, the value that holds a task's options.
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final, final

import attrs

from orchestra.dag._rules import RULES, TriggerRule

if TYPE_CHECKING:
    from orchestra.dag._task import Task

__all__ = ["DEFAULTS", "NO_METADATA", "Options", "check_options", "is_async"]

NO_METADATA: Final[Mapping[str, Any]] = MappingProxyType({})  # read-only: safe to share


def is_async(fn: Callable[..., Any]) -> bool:
    """Whether calling ``fn`` returns a coroutine (async functions and callable objects)."""
    try:
        return _inspected(fn)
    except TypeError:  # an unhashable callable: inspected each time
        return _returns_coroutine(fn)


def _returns_coroutine(fn: Callable[..., Any]) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004  # async callable objects
    )


# One inspection per function object, as a DAG gives many tasks one function (typed:
# equal callables of two types are told apart; the last 256 are kept alive).
_inspected: Final = functools.lru_cache(maxsize=256, typed=True)(_returns_coroutine)


def check_options(
    task_id: str, retries: int, retry_delay: float, timeout: float | None, trigger: str
) -> None:
    """Refuse an option out of range, naming the task.

    Raises:
        ValueError: a retries, retry_delay, timeout or trigger that is not valid.
    """
    if retries != 0 and (not isinstance(retries, int) or retries < 0):
        raise ValueError(f"task {task_id!r}: retries must be an int >= 0, got {retries!r}")
    if retry_delay != 0 and not (math.isfinite(retry_delay) and retry_delay >= 0):
        raise ValueError(
            f"task {task_id!r}: retry_delay must be a finite number >= 0, got {retry_delay!r}"
        )
    if timeout is not None and not (timeout > 0):
        raise ValueError(f"task {task_id!r}: timeout must be > 0, got {timeout!r}")
    if trigger not in RULES:
        raise ValueError(
            f"task {task_id!r}: unknown trigger rule {trigger!r}; "
            f"expected one of {', '.join(sorted(RULES))}"
        )


@final
@attrs.frozen(eq=False, repr=False)
class Options:
    """A task's options beside its id, function and deps (internal).

    Most tasks set none: they share one value, ``DEFAULTS``, so that making such a task
    sets four fields rather than fourteen (bench/scheduler.py, build section). It also
    keeps the deps given as ``Task`` objects, which the plan checks.
    """

    inline: bool = False
    retries: int = 0
    retry_delay: float = 0.0
    timeout: float | None = None
    trigger: TriggerRule = "all_success"
    metadata: Mapping[str, Any] = NO_METADATA
    agent: str | None = None
    run_on_fail_fast: bool = False
    branch: bool = False
    dep_tasks: tuple[Task, ...] = ()  # deps given as Task objects (not an option)


DEFAULTS: Final = Options()
