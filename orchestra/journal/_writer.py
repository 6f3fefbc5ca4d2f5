"""A writer thread that batches journal writes, so the event loop never waits for a store."""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable
from typing import Final, Generic, TypeVar, final

__all__ = ["BatchWriter"]

logger: Final = logging.getLogger("orchestra.journal")

_T = TypeVar("_T")


@final
class BatchWriter(Generic[_T]):
    """Hands items to ``write`` in batches, from a thread of its own.

    ``put`` is what the event loop calls: an append to a deque, and a wake-up only when
    the thread sleeps for want of work. The thread waits ``delay`` seconds after it wakes
    so a batch gathers, then writes up to ``max_batch`` items at a time until none is
    left. A failed write is logged and its items dropped (the run goes on, unjournaled
    for them); ``close`` writes what is left and ends the thread.

    Args:
        write: writes one batch (a store transaction); called from the writer thread only.
        name: the thread's name.
        delay: seconds to gather a batch after the first item arrives.
        max_batch: the most items one ``write`` gets.
    """

    def __init__(
        self,
        write: Callable[[list[_T]], None],
        *,
        name: str,
        delay: float = 0.005,
        max_batch: int = 2000,
    ) -> None:
        self._write = write
        self._delay = delay
        self._max_batch = max_batch
        self._queue: deque[_T] = deque()
        self._wake = threading.Event()
        self._closed = threading.Event()  # cuts the gathering delay short
        self._idle = False
        self._closing = False
        self.failures = 0
        """How many batches could not be written."""
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    def put(self, item: _T) -> None:
        """Queue ``item`` (never blocks)."""
        self._queue.append(item)
        if self._idle:  # the thread sleeps for want of work: wake it
            self._idle = False
            self._wake.set()

    def close(self) -> None:
        """Write what is queued and end the thread (blocks: call it from a thread)."""
        self._closing = True
        self._closed.set()
        self._wake.set()
        self._thread.join()

    def _loop(self) -> None:
        queue = self._queue
        while True:
            if not queue:
                if self._closing:
                    return
                self._idle = True
                # A put() that came before the flag was seen left an item: look again.
                if not queue and not self._closing:
                    self._wake.wait()
                self._wake.clear()
                self._idle = False
                self._closed.wait(self._delay)  # let a batch gather
            while queue:
                n = min(len(queue), self._max_batch)
                batch = [queue.popleft() for _ in range(n)]
                try:
                    self._write(batch)
                except Exception:
                    self.failures += 1
                    logger.exception("journal: %d settled tasks could not be recorded", n)
