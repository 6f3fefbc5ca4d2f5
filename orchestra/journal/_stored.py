"""How the SQLite journal stores a batch of task records, and a plan, as bytes.

``marshal`` data (tuples and lists of str, int, float, bool and None: reading them runs
no code), many times cheaper than a row per task or JSON. A batch is either full records
(``TaskRecord`` columns: ``encode_full``) or records by index into the run's plan
(``encode_indexed``), where the common record, a task that SUCCEEDED at its first
attempt, is a plan index and a duration in two little-endian arrays.
"""

from __future__ import annotations

import marshal
import sys
from array import array
from collections.abc import Iterator, Sequence
from itertools import chain, repeat
from typing import Any, Final, TypeAlias

from orchestra.journal._codec import digest
from orchestra.journal._records import TaskRecord

__all__ = [
    "INDEXED_COLUMNS",
    "Plan",
    "decode_batch",
    "decode_plan",
    "encode_full",
    "encode_indexed",
    "encode_plan",
]

_MARSHAL_VERSION: Final = 4  # read by every Python 3.4+
_SUCCEEDED: Final = "succeeded"
_INDEX: Final = next(code for code in "IL" if array(code).itemsize == 4)
_SWAP: Final = sys.byteorder != "little"
_FOREIGN: Final = "a batch of task records that orchestra did not write"
INDEXED_COLUMNS: Final = len(TaskRecord._fields) - 2  # no code or input digest
"""Columns of a general record by plan index: ``TaskRecord``'s, a plan index for the id,
no code or input digest."""

Plan: TypeAlias = tuple[Sequence[str], Sequence[str], Sequence[str]]
"""A plan's task ids, code digests and input digests, in plan order."""


def encode_plan(plan: Plan) -> tuple[str, bytes]:
    """A plan's digest and stored form, for ``_begin_planned_run``."""
    ids, codes, inputs = plan
    data = marshal.dumps((list(ids), list(codes), list(inputs)), _MARSHAL_VERSION)
    return digest(data), data


def decode_plan(data: bytes) -> Plan:
    """A plan from its stored form."""
    plan = marshal.loads(data)
    if not (isinstance(plan, tuple) and len(plan) == 3):
        raise ValueError("a plan that orchestra did not write")
    return plan


def encode_full(columns: Sequence[Sequence[Any]]) -> bytes:
    """A batch of full records, given column by column (``TaskRecord`` field order)."""
    if len(columns) != len(TaskRecord._fields):
        raise ValueError(f"a batch has {len(TaskRecord._fields)} columns, got {len(columns)}")
    return marshal.dumps(list(columns), _MARSHAL_VERSION)


def encode_indexed(
    plain: tuple[Sequence[int], Sequence[float], str | Sequence[str] | None],
    general: Sequence[Sequence[Any]] | None,
) -> bytes:
    """A batch of records by plan index (see ``SQLiteJournal._record_indexed``)."""
    index, durations, output = plain
    if not (output is None or isinstance(output, str)):
        if len(output) != len(index):
            raise ValueError(f"{len(index)} plain tasks with {len(output)} output digests")
        output = list(output)
    indexes = array(_INDEX, index)
    times = array("d", durations)
    if _SWAP:
        indexes.byteswap()
        times.byteswap()
    rest: list[Sequence[Any]] | None = None
    if general is not None:
        if len(general) != INDEXED_COLUMNS:
            raise ValueError(f"a batch has {INDEXED_COLUMNS} columns, got {len(general)}")
        rest = list(general)
    return marshal.dumps((output, indexes.tobytes(), times.tobytes(), rest), _MARSHAL_VERSION)


def decode_batch(data: bytes, plan: Plan | None) -> Iterator[TaskRecord]:
    """The records of one batch (its columns zipped back into ``TaskRecord`` tuples).

    A batch is a list of ``TaskRecord`` columns (``record``), or a tuple of records by
    index into the run's plan (``_record_indexed``).
    """
    stored = marshal.loads(data)
    # tuple.__new__ is TaskRecord._make without its per-record length check
    if isinstance(stored, list) and len(stored) == len(TaskRecord._fields):
        return map(tuple.__new__, repeat(TaskRecord), zip(*stored, strict=True))
    if plan is None or not (isinstance(stored, tuple) and len(stored) == 4):
        raise ValueError(_FOREIGN)
    ids, codes, inputs = plan
    output, index_data, time_data, general = stored
    index = array(_INDEX)
    index.frombytes(index_data)
    durations = array("d")
    durations.frombytes(time_data)
    if _SWAP:
        index.byteswap()
        durations.byteswap()
    if len(index) != len(durations):
        raise ValueError(_FOREIGN)
    if not (output is None or isinstance(output, str) or len(output) == len(index)):
        raise ValueError(_FOREIGN)
    plain = zip(
        map(ids.__getitem__, index),
        repeat(_SUCCEEDED),
        repeat(1),
        durations,
        repeat(None),
        map(codes.__getitem__, index),
        map(inputs.__getitem__, index),
        repeat(output) if output is None or isinstance(output, str) else output,
        repeat(False),
        repeat(None),
    )
    records = map(tuple.__new__, repeat(TaskRecord), plain)
    if general is None:
        return records
    if len(general) != INDEXED_COLUMNS:
        raise ValueError(_FOREIGN)
    at, state, attempts, duration, error, out, reused, note = general
    rest = zip(
        map(ids.__getitem__, at),
        state,
        attempts,
        duration,
        error,
        map(codes.__getitem__, at),
        map(inputs.__getitem__, at),
        out,
        reused,
        note,
        strict=True,
    )
    return chain(records, map(tuple.__new__, repeat(TaskRecord), rest))
