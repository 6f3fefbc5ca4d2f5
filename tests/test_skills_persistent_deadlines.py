"""``Deadlines``: the thread that times the events in flight to persistent hooks."""

from __future__ import annotations

import math
import threading
import time

from orchestra.skills._persistent.deadlines import Deadlines


class Hook:
    """A stand-in for a persistent hook: a deadline, and a record of its wake-ups."""

    def __init__(self, deadline: float) -> None:
        self.oldest_deadline = deadline
        self.watched = False
        self.woken = threading.Event()
        self.wakes = 0

    def wake(self) -> None:
        self.wakes += 1
        self.oldest_deadline = math.inf  # its reader failed the events that ran out
        self.woken.set()


def test_a_hook_past_its_deadline_is_woken_and_the_thread_ends() -> None:
    deadlines = Deadlines()
    soon, later = Hook(time.monotonic() + 0.05), Hook(time.monotonic() + 0.1)
    deadlines.watch(later)
    deadlines.watch(soon)  # earlier than the one the thread sleeps for: it is told
    deadlines.watch(soon)  # watched already: one entry
    assert soon.woken.wait(5)
    assert later.woken.wait(5)
    assert (soon.wakes, later.wakes) == (1, 1)
    thread = deadlines._thread
    if thread is not None:
        thread.join(5)
    assert deadlines._thread is None  # no events in flight: no thread
    assert (soon.watched, later.watched) == (False, False)


def test_answered_events_wake_nobody() -> None:
    deadlines = Deadlines()
    hook = Hook(time.monotonic() + 0.05)
    deadlines.watch(hook)
    hook.oldest_deadline = math.inf  # answered before its deadline
    time.sleep(0.1)
    thread = deadlines._thread
    if thread is not None:
        thread.join(5)
    assert (hook.wakes, hook.watched) == (0, False)


def test_a_later_deadline_is_followed() -> None:
    deadlines = Deadlines()
    hook = Hook(time.monotonic() + 0.02)
    deadlines.watch(hook)
    hook.oldest_deadline = time.monotonic() + 0.1  # answered; a newer event in flight
    assert hook.woken.wait(5)
    assert hook.wakes == 1


class Racing(Hook):
    """A hook whose caller sends an event just as the thread drops its entry: the thread
    reads ``inf`` (its event answered) and, right after, the next event's deadline."""

    def __init__(self, deadline: float) -> None:
        super().__init__(deadline)
        # What reads of oldest_deadline give: watch(), the thread, the thread again.
        self.reads = [deadline, math.inf, deadline + 0.05]

    @property
    def oldest_deadline(self) -> float:
        reads: list[float] = getattr(self, "reads", [math.inf])
        return reads.pop(0) if len(reads) > 1 else reads[0]

    @oldest_deadline.setter
    def oldest_deadline(self, value: float) -> None:
        self.reads = [value]


def test_a_deadline_set_as_the_entry_is_dropped_is_still_timed() -> None:
    # A caller that saw ``watched`` true does not call watch(): the thread, having marked
    # the hook unwatched, reads its deadline once more and keeps timing it.
    deadlines = Deadlines()
    hook = Racing(time.monotonic() + 0.02)
    deadlines.watch(hook)
    assert hook.woken.wait(5)
    assert hook.wakes == 1
