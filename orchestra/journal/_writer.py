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

    ``put`` (what the event loop calls) is a bare ``deque.append``: no lock, no wake-up.
    The thread looks at the queue every ``delay`` seconds and writes what it finds, up
    to ``max_batch`` items per ``write``, so a crash loses at most the tasks of the last
    look. While the queue stays empty it looks less often (up to ``idle_delay``), so a
    long run of slow tasks costs next to nothing. A failed write is logged and its items
    dropped (the run goes on, unjournaled for them); ``close`` writes what is left and
    ends the thread at once.

    Args:
        write: writes one batch (a store transaction); called from the writer thread only.
        name: the thread's name.
        delay: seconds between looks at the queue while items come.
        idle_delay: the longest wait between looks while none come.
        max_batch: the most items one ``write`` gets.
    """

    def __init__(
        self,
        write: Callable[[list[_T]], None],
        *,
        name: str,
        delay: float = 0.005,
        idle_delay: float = 0.05,
        max_batch: int = 2000,
    ) -> None:
        self._write = write
        self._delay = delay
        self._idle_delay = idle_delay
        self._max_batch = max_batch
        self._queue: deque[_T] = deque()
        self.put: Callable[[_T], None] = self._queue.append
        """Queue one item (never blocks)."""
        self._closing = threading.Event()
        self.failures = 0
        """How many batches could not be written."""
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Write what is queued and end the thread (blocks: call it from a thread)."""
        self._closing.set()
        self._thread.join()

    def _loop(self) -> None:
        queue = self._queue
        closing = self._closing
        delay = self._delay
        while True:
            done = closing.wait(delay)  # wakes at once on close
            delay = self._delay if queue else min(delay * 2, self._idle_delay)
            while queue:
                n = min(len(queue), self._max_batch)
                batch = [queue.popleft() for _ in range(n)]
                try:
                    self._write(batch)
                except Exception:
                    self.failures += 1
                    logger.exception("journal: %d settled tasks could not be recorded", n)
            if done:
                return
