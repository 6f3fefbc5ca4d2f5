"""A writer thread that batches journal writes, so the event loop never waits for a store."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any, Final, final

__all__ = ["BatchWriter"]

logger: Final = logging.getLogger("orchestra.journal")


@final
class BatchWriter:
    """Hands items to ``write`` in batches, from a thread of its own.

    Items come in ``lanes`` (kinds of item, say a compact one for the common case and a
    general one), each a list: ``puts[k]`` (what the event loop calls) is lane ``k``'s
    bare ``list.append``: no lock, no wake-up. Only the thread takes items, from the
    front, and only the event loop adds them, at the end, so the thread takes a batch
    with two C-level slice operations. The thread looks at the lanes every
    ``delay`` seconds and writes what it finds, up to ``max_batch`` items of each lane per
    ``write`` (which gets one list per lane), so a crash loses at most the items of the
    last look. While the lanes stay empty it looks less often (up to ``idle_delay``), so
    a long run of slow tasks costs next to nothing. A failed write is logged and its
    items dropped (the run goes on, unjournaled for them); ``close`` writes what is left
    and ends the thread at once.

    Args:
        write: writes one batch (a store transaction), given one list of items per lane;
            called from the writer thread only.
        name: the thread's name.
        lanes: how many kinds of item there are.
        delay: seconds between looks at the lanes while items come.
        idle_delay: the longest wait between looks while none come.
        max_batch: the most items of one lane one ``write`` gets.
        tick: called from the thread every ``tick_every`` seconds (the run renews its
            leases); an error it raises is logged.
        tick_every: seconds between ticks.
    """

    def __init__(
        self,
        write: Callable[[list[list[Any]]], None],
        *,
        name: str,
        lanes: int = 1,
        delay: float = 0.005,
        idle_delay: float = 0.05,
        max_batch: int = 10000,
        tick: Callable[[], None] | None = None,
        tick_every: float = 5.0,
    ) -> None:
        self._write = write
        self._delay = delay
        self._idle_delay = idle_delay
        self._max_batch = max_batch
        self._tick = tick
        self._tick_every = tick_every
        self._lanes: tuple[list[Any], ...] = tuple([] for _ in range(lanes))
        self.puts: tuple[Callable[[Any], None], ...] = tuple(lane.append for lane in self._lanes)
        """Per lane: queue one item (never blocks)."""
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
        lanes = self._lanes
        closing = self._closing
        delay = self._delay
        most = self._max_batch
        next_tick = time.monotonic() + self._tick_every
        while True:
            done = closing.wait(delay)  # wakes at once on close
            if self._tick is not None and not done and time.monotonic() >= next_tick:
                next_tick = time.monotonic() + self._tick_every
                try:
                    self._tick()
                except Exception:
                    logger.exception("journal: the run's leases could not be renewed")
            delay = self._delay if any(lanes) else min(delay * 2, self._idle_delay)
            while any(lanes):
                batch = [_take(lane, most) for lane in lanes]
                try:
                    self._write(batch)
                except Exception:
                    self.failures += 1
                    logger.exception(
                        "journal: %d settled tasks could not be recorded", sum(map(len, batch))
                    )
            if done:
                return


def _take(lane: list[Any], most: int) -> list[Any]:
    """The first items of ``lane`` (``most`` at most), taken off it.

    The event loop may append between the two steps: it appends at the end, so the
    first ``n`` items are still the ones taken.
    """
    n = min(len(lane), most)
    batch = lane[:n]
    del lane[:n]
    return batch
