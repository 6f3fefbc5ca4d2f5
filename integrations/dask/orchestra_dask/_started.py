"""Which attempts' bodies started: told from those merely queued on a worker that died (internal).

Each body logs its key on ``STARTED_TOPIC`` as it starts (``_worker.run_body``); the
driver's client subscribes to the topic once, and a ``KilledWorker`` for a key that never
started means the task was merely queued there.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any, final

from distributed.scheduler import KilledWorker

from orchestra_dask._worker import STARTED_TOPIC

if TYPE_CHECKING:
    from distributed import Client

__all__ = ["Started", "killed_note", "started"]


@final
class Started:
    """The keys of this client's in-flight attempts whose body started on a worker."""

    __slots__ = ("pending", "started")

    def __init__(self) -> None:
        self.pending: set[str] = set()
        self.started: set[str] = set()

    def __call__(self, event: tuple[float, Any]) -> None:
        key = event[1]
        if key in self.pending:
            self.started.add(key)

    def end(self, key: str) -> bool:
        """Forget ``key``; whether its body had started."""
        self.pending.discard(key)
        if key in self.started:
            self.started.discard(key)
            return True
        return False


_STARTED: weakref.WeakKeyDictionary[Client, Started] = weakref.WeakKeyDictionary()


def started(client: Client) -> Started:
    """The client's ``Started`` record, subscribed to ``STARTED_TOPIC`` on first use."""
    record = _STARTED.get(client)
    if record is None:
        record = _STARTED[client] = Started()
        # Sent before any of our submissions on the same stream, so the scheduler knows
        # the subscription before a body can start.
        client.subscribe_topic(STARTED_TOPIC, record)  # type: ignore[no-untyped-call]
    return record


def killed_note(error: KilledWorker, task_id: str, ran: bool, requeued: int) -> str:
    worker = getattr(error.last_worker, "address", "?")
    if ran:
        return f"task {task_id!r}: worker {worker} died while this attempt's body was running"
    return (
        f"task {task_id!r}: worker {worker} died before this attempt's body started; "
        f"it had been submitted again {requeued} time(s) after earlier deaths"
    )
