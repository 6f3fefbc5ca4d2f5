"""Run journals: what ``run(dag, journal=...)`` records, and where.

A journal keeps every settled task of a run (state, attempts, error, duration, digests of
its code and inputs, and its serialized output) as the run goes, so that
``run(dag, journal=..., resume="last")`` can reuse what a crashed or cancelled run did.

- ``Journal``: the protocol a store implements (also ``orchestra.Journal``).
- ``SQLiteJournal``: the embedded store, one SQLite file (a path given as ``journal=``).
- ``RunInfo``, ``TaskRecord``, ``JournaledRun``: what a store keeps and gives back.
- ``Lease``: which process holds a run (going on, or being resumed), kept by the store.
- ``Serializer``, ``PickleSerializer``: how outputs become payloads (``serializer=``).
- ``orchestra.journal.conformance``: the tests every store passes (needs pytest).
"""

from typing import TYPE_CHECKING

from orchestra._exports import export, lazy
from orchestra.journal._codec import DEFAULT_MAX_BYTES as DEFAULT_MAX_BYTES
from orchestra.journal._codec import PickleSerializer as PickleSerializer
from orchestra.journal._codec import Serializer as Serializer
from orchestra.journal._lease import Lease as Lease
from orchestra.journal._records import Journal as Journal
from orchestra.journal._records import JournaledRun as JournaledRun
from orchestra.journal._records import RunInfo as RunInfo
from orchestra.journal._records import TaskRecord as TaskRecord

if TYPE_CHECKING:
    from orchestra.journal._sqlite import SCHEMA_VERSION as SCHEMA_VERSION
    from orchestra.journal._sqlite import SQLiteJournal as SQLiteJournal

__all__ = [
    "DEFAULT_MAX_BYTES",
    "SCHEMA_VERSION",
    "Journal",
    "JournaledRun",
    "Lease",
    "PickleSerializer",
    "RunInfo",
    "SQLiteJournal",
    "Serializer",
    "TaskRecord",
]

# The SQLite store loads when first asked for: ``import orchestra`` loads no sqlite3.
_LAZY = {
    "SCHEMA_VERSION": "orchestra.journal._sqlite",
    "SQLiteJournal": "orchestra.journal._sqlite",
}
__getattr__ = lazy(globals(), _LAZY)
# Journal is exported again by orchestra itself: its public path is orchestra.Journal.
export(globals(), [name for name in __all__ if name not in ("Journal", *_LAZY)])
