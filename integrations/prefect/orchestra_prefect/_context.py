"""What a hook sees of a Prefect task run: its ``orchestra.Task`` and context (internal).

The task's ``metadata`` carries Prefect's own facts: ``tags`` (the run's tags, as every
engine's tags reach ``ctx.task.metadata["tags"]``), and ``prefect.task_run_id``,
``prefect.task_run_name``, ``prefect.flow_run_id``, ``prefect.tags``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

import orchestra

__all__ = ["hook_context", "task_of"]


def task_of(name: str, fn: Callable[..., Any], retries: int, run: Any) -> orchestra.Task:
    """The ``orchestra.Task`` standing for the Prefect task run ``run``."""
    tags = tuple(run.tags)
    return orchestra.Task(
        id=name,
        fn=fn,
        retries=retries,
        metadata=MappingProxyType(
            {
                "tags": tags,
                "prefect.task_run_id": str(run.id),
                "prefect.task_run_name": run.name,
                "prefect.flow_run_id": str(run.flow_run_id) if run.flow_run_id else None,
                "prefect.tags": tags,
            }
        ),
    )


def hook_context(
    task: orchestra.Task,
    run: Any,
    signature: inspect.Signature,
    call: tuple[tuple[Any, ...], Mapping[str, Any]],
    errors: tuple[BaseException, ...],
    started_at: float,
) -> orchestra.TaskHookContext:
    """The ``TaskHookContext`` of the current attempt of ``run``, called with ``call``."""
    args, kwargs = call
    try:
        bound = signature.bind_partial(*args, **kwargs).arguments
    except TypeError:
        bound = dict(kwargs)
    return orchestra.TaskHookContext(
        task=task,
        attempt=run.run_count,
        executor=None,
        run_id=str(run.flow_run_id or run.id),
        errors=errors,
        started_at=started_at,
        inputs=MappingProxyType(bound),
    )
