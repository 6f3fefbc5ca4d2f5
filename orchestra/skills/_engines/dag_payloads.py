"""The payloads of the DAG's own events (``RunStart`` ... ``RunEnd``), JSON-safe.

=================  ===============================================================
event              fields (beside ``dag`` and ``run_id``)
=================  ===============================================================
``RunStart``       ``task_ids``
``AttemptStart``   ``task_id``, ``type`` (``metadata["type"]``), ``attempt``,
                   ``max_attempts``, ``executor``, ``metadata``, ``inputs``
``AttemptEnd``     the same but ``inputs``, and ``state`` (``succeeded`` or
                   ``failed``), ``output``, ``error``, ``error_type``
``AttemptRetry``   the same as ``AttemptStart`` but ``inputs`` (``attempt``: the one
                   about to start), and the last ``error``, ``error_type``
``EdgeSelected``   the task's fields, ``selected`` (the ids chosen), ``edge_from``,
                   ``edge_to`` (the first id chosen)
``RunEnd``         ``state`` (``succeeded`` or ``failed``), ``ok``, ``states`` (by
                   id), ``failed`` (the ids of the tasks that did not end well)
=================  ===============================================================

Values go through ``safe_serialize``, as the graph executor's own does: what JSON cannot
hold becomes its ``str()``, so a hook always gets valid JSON, whatever a task returns.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from orchestra._tool_flow import error_fields

if TYPE_CHECKING:
    from orchestra._hooks import RunContext, TaskHookContext

__all__ = [
    "end_payload",
    "run_end_payload",
    "run_payload",
    "safe_serialize",
    "task_payload",
]

_PLAIN: Final = (str, int, float, bool, type(None))
_MAX_DEPTH: Final = 64


def safe_serialize(value: Any, _depth: int = 0) -> Any:
    """``value`` as JSON can hold it: mappings, sequences and scalars kept, others ``str()``.

    Examples:
        >>> safe_serialize({"a": (1, 2), "b": {3}, 4: b"x"})
        {'a': [1, 2], 'b': ['3'], '4': 'x'}
    """
    if isinstance(value, _PLAIN):
        return value
    if _depth >= _MAX_DEPTH:
        return str(value)
    if isinstance(value, Mapping):
        return {str(key): safe_serialize(item, _depth + 1) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [safe_serialize(item, _depth + 1) for item in value]
    if isinstance(value, set | frozenset):
        return sorted((safe_serialize(item, _depth + 1) for item in value), key=str)
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", "replace")
    if isinstance(value, enum.Enum):
        return safe_serialize(value.value, _depth + 1)
    return str(value)


def run_payload(ctx: RunContext) -> dict[str, Any]:
    """``RunStart``'s fields."""
    return {"dag": ctx.dag, "run_id": ctx.run_id, "task_ids": list(ctx.task_ids)}


def task_payload(ctx: TaskHookContext, dag: str | None) -> dict[str, Any]:
    """The fields every task event has: ``task_id``, ``type``, ``attempt``, ..."""
    metadata = ctx.task.metadata
    kind = metadata.get("type")
    return {
        "dag": dag,
        "run_id": ctx.run_id,
        "task_id": ctx.task.id,
        "type": kind if kind is None or isinstance(kind, str) else str(kind),
        "attempt": ctx.attempt,
        "max_attempts": ctx.task.retries + 1,
        "executor": ctx.executor,
        "metadata": safe_serialize(metadata),
    }


def end_payload(
    ctx: TaskHookContext, dag: str | None, output: Any, error: BaseException | None
) -> dict[str, Any]:
    """``AttemptEnd``'s fields: the output of a success, or the error of a failure."""
    payload = task_payload(ctx, dag)
    payload["state"] = "failed" if error is not None else "succeeded"
    payload["output"] = None if error is not None else safe_serialize(output)
    payload.update(error_fields(error))
    return payload


def run_end_payload(ctx: RunContext, states: Mapping[str, enum.Enum], ok: bool) -> dict[str, Any]:
    """``RunEnd``'s fields: the run's state and every task's."""
    good = {"succeeded", "skipped"}
    failed: Sequence[str] = [tid for tid, state in states.items() if state.value not in good]
    return {
        "dag": ctx.dag,
        "run_id": ctx.run_id,
        "state": "succeeded" if ok else "failed",
        "ok": ok,
        "states": {tid: state.value for tid, state in states.items()},
        "failed": list(failed),
    }
