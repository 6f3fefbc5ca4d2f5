"""What a resume takes from a journal: the run it holds, and the outputs it may trust.

``find_and_hold`` finds the run ``resume=`` names (``"last"``: the DAG's latest run that
is not still going and settled a task: one killed right after it registered is passed
over) and holds it with the resuming run's lease, or raises ``Held`` naming
the live holder. ``reusable`` decides which tasks of it to reuse: a task whose record
SUCCEEDED with a kept payload, unchanged code and inputs, every upstream reused too, and
whose payload's tag checks under the journal key; only then is the payload deserialized.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any, Final

from orchestra._errors import JournalError
from orchestra.journal._key import PayloadKey
from orchestra.journal._lease import Lease, claim
from orchestra.journal._records import Journal, JournaledRun

__all__ = ["Held", "Reusable", "find_and_hold", "reusable"]

logger: Final = logging.getLogger("orchestra.journal")

_SUCCEEDED: Final = "succeeded"
_ATOMS: Final = frozenset({type(None), bool, int, float, complex, str, bytes})
_LIST_IDS: Final = 5  # run ids an unknown-run error lists
_LOOKS: Final = (1, 4, 16, 64)  # runs "last" looks at, in turn, for one that is not going
NOT_AUTHENTIC: Final = (
    "its journaled output failed authentication (written without this journal key, or "
    "changed since): not loaded, the task ran again"
)


class Held(JournalError):
    """The run to resume is held by a live process (internal: raised as ``JournalError``)."""

    def __init__(self, message: str, *, journal: str, lease: Lease) -> None:
        super().__init__(message, journal=journal)
        self.lease = lease


def _held(journal: Journal, run_id: str, lease: Lease) -> Held:
    what = "is still going" if lease.going else f"is being resumed by run {lease.by_run}"
    return Held(
        f"journal {journal}: run {run_id} {what} ({lease.describe()}): refused, so that "
        "no task runs twice; wait for it with resume_wait=SECONDS, or resume once it ends",
        journal=str(journal),
        lease=lease,
    )


def find_and_hold(journal: Journal, name: str, resume: str, lease: Lease) -> JournaledRun:
    """The run ``resume`` names, held by ``lease``'s holder (see the module docstring)."""
    if resume == "last":
        return _last(journal, name, lease)
    holder = claim(journal, lease.holding(resume))  # held first, then read once
    if holder is not None:
        raise _held(journal, resume, holder)
    found = journal.load_run(resume)
    if found is None or found.info.dag != name:  # the caller releases what it held
        ids = [r.run_id for r in journal.list_runs(name, limit=_LIST_IDS)]
        other = f" (it is a run of DAG {found.info.dag!r})" if found is not None else ""
        listed = (
            f"; its latest runs of DAG {name!r}: {', '.join(ids)}"
            if ids
            else f"; it has no run of DAG {name!r}"
        )
        raise JournalError(
            f"journal {journal} has no run {resume!r} to resume{other}{listed}",
            journal=str(journal),
        )
    return found


def _last(journal: Journal, name: str, lease: Lease) -> JournaledRun:
    """The DAG's latest run that is not still going, held; ``Held`` if a resume holds it."""
    seen: set[str] = set()
    going: list[str] = []
    for limit in _LOOKS:
        runs = journal.list_runs(name, limit=limit)
        for info in runs:
            if info.run_id in seen:
                continue
            seen.add(info.run_id)
            holder = claim(journal, lease.holding(info.run_id))
            if holder is None:
                found = journal.load_run(info.run_id)
                if found is not None and found.tasks:
                    return found
                # gone meanwhile (a store cleaned up), or registered and never started
                # (killed at once): no task of it settled, so an older run is the last
                journal.release(lease.token)
                continue
            if not holder.going:  # the latest run that ended is being resumed: refuse
                raise _held(journal, info.run_id, holder)
            going.append(info.run_id)  # a run still going is never resumed
        if len(runs) < limit:
            break
    still = f" (runs still going: {', '.join(going)})" if going else ""
    raise JournalError(
        f"journal {journal} has no run of DAG {name!r} to resume{still}", journal=str(journal)
    )


Reusable = tuple[dict[int, Any], dict[int, tuple[str, bytes]], dict[str, str]]
"""The outputs to reuse by task index, their (tag, payload), and why tasks were not reused."""


def reusable(
    previous: JournaledRun,
    plan: tuple[Sequence[str], Sequence[str], Sequence[str]],
    upstreams: Sequence[tuple[int, ...]],
    loads: Callable[[bytes], Any],
    key: PayloadKey,
) -> Reusable:
    """Which tasks of ``previous`` to reuse (in topological order), with their outputs.

    ``plan``: the new run's task ids, code digests and input digests, in plan order.
    The third part of the answer says, by task id, why a task that SUCCEEDED with a kept
    payload was not reused although its code and inputs are unchanged: its payload failed
    authentication, or could not be loaded.
    """
    ids, codes, inputs = plan
    records = previous.tasks
    payloads = previous.payloads
    reuse: dict[int, Any] = {}
    kept: dict[int, tuple[str, bytes]] = {}
    notes: dict[str, str] = {}
    reused = reuse.__contains__
    atoms: dict[str, Any] = {}  # outputs that are immutable atoms, loaded once by tag
    checked: dict[str, bool] = {}  # tags checked already, and their answer
    for i, tid in enumerate(ids):
        rec = records.get(tid)
        if rec is None or rec.state != _SUCCEEDED or rec.code_digest != codes[i]:
            continue
        tag = rec.output_digest
        if tag is None or (payload := payloads.get(tag)) is None:
            continue
        if rec.input_digest != inputs[i] or not all(map(reused, upstreams[i])):
            continue
        if tag in atoms:
            reuse[i] = atoms[tag]
            kept[i] = (tag, payload)
            continue
        authentic = checked.get(tag)
        if authentic is None:
            authentic = checked[tag] = key.check(payload, tag)
        if not authentic:
            notes[tid] = NOT_AUTHENTIC
            logger.warning(
                "journal: task %r of run %s: %s", tid, previous.info.run_id, NOT_AUTHENTIC
            )
            continue
        try:
            value = loads(payload)
        except Exception as exc:
            notes[tid] = (
                f"its journaled output cannot be loaded ({type(exc).__name__}: {exc}): "
                "the task ran again"
            )
            logger.warning(
                "journal: the output of task %r of run %s cannot be loaded (%s: %s); it runs again",
                tid,
                previous.info.run_id,
                type(exc).__name__,
                exc,
            )
            continue
        if type(value) in _ATOMS:  # safe to share between tasks
            atoms[tag] = value
        reuse[i] = value
        kept[i] = (tag, payload)
    return reuse, kept, notes
