"""``Deadlines``: one thread that times the events in flight to persistent hooks.

An anyio cancel scope per event costs more than the rest of a round trip to a
persistent process. So the events in flight are timed here instead: for each hook, one
entry, the deadline of its oldest event in flight. When it passes, the thread writes a
byte on the hook's wake-up pipe, which its reader waits on (with the process's pipes),
and the reader fails the events that ran out. The thread only reads the hooks'
``oldest_deadline`` and writes on their pipes, under the lock; everything else stays on
the event loop. It wakes once per hook and timeout period while events flow, and ends
when no hook has events in flight.
"""

from __future__ import annotations

import heapq
import itertools
import math
import threading
import time
from typing import Final, Protocol

__all__ = ["DEADLINES", "Deadlines", "Watched"]

# When a woken hook still has events past their deadline, it is woken again this often.
_AGAIN: Final = 0.5


class Watched(Protocol):
    """What ``Deadlines`` needs of a hook: its oldest deadline, a flag, a way to wake it."""

    oldest_deadline: float
    """``time.monotonic()`` by which its oldest event in flight must be answered
    (``math.inf`` when none is in flight)."""
    watched: bool
    """It has an entry (set and cleared by ``Deadlines`` under its lock)."""

    def wake(self) -> None:
        """Wake its reader (called by the thread, under the lock)."""


class Deadlines:
    """The deadlines of persistent hooks' events in flight, watched by one thread."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self._changed = threading.Condition(self.lock)
        self._heap: list[tuple[float, int, Watched]] = []
        self._order = itertools.count()
        self._thread: threading.Thread | None = None

    def watch(self, hook: Watched) -> None:
        """Watch ``hook``'s ``oldest_deadline`` (call it after sending it an event).

        A caller may skip the call, and the lock, when ``hook.watched`` is true: the
        thread reads a hook's deadline again after it marks it unwatched (see
        ``_run``), so a deadline set before ``watched`` was seen true is not missed.

        Raises:
            RuntimeError: the thread could not be started.
        """
        with self.lock:
            if hook.watched:
                return
            entry = (hook.oldest_deadline, next(self._order), hook)
            heapq.heappush(self._heap, entry)
            hook.watched = True
            if self._thread is None:
                thread = threading.Thread(
                    target=self._run, name="orchestra-hook-deadlines", daemon=True
                )
                try:
                    thread.start()
                except BaseException:
                    self._heap.remove(entry)
                    heapq.heapify(self._heap)
                    hook.watched = False
                    raise
                self._thread = thread
            elif self._heap[0] is entry:
                self._changed.notify()

    def _run(self) -> None:
        with self.lock:
            while self._heap:
                deadline, _, hook = self._heap[0]
                now = time.monotonic()
                if deadline > now:
                    self._changed.wait(deadline - now)
                    continue
                heapq.heappop(self._heap)
                oldest = hook.oldest_deadline
                if oldest == math.inf:
                    hook.watched = False  # from now on watch() takes the lock; one
                    oldest = hook.oldest_deadline  # before it set this deadline first
                    if oldest == math.inf:
                        continue
                    hook.watched = True
                if oldest <= now:
                    hook.wake()
                    oldest = now + _AGAIN  # until its reader has dealt with it
                heapq.heappush(self._heap, (oldest, next(self._order), hook))
            self._thread = None


DEADLINES: Final = Deadlines()
"""The one ``Deadlines`` of the process."""
