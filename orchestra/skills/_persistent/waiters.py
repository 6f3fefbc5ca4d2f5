"""The waiting side of a persistent hook: each event's ``Waiter``, and FIFO gates.

Neither keeps event-loop state between calls: each wait makes its ``anyio.Event`` in
its own call, so a persistent hook can serve one event loop after another.
"""

from __future__ import annotations

import collections
import enum
import threading
import time

import anyio

from orchestra.skills._protocol.result import HookResult, HookRunError

__all__ = [
    "DONE",
    "SENT",
    "WAITING",
    "WRITING",
    "Gate",
    "Stage",
    "ThreadGates",
    "Waiter",
    "left",
]


class Stage(enum.Enum):
    """Where an event is on its way to the process and back."""

    WAITING = "waiting"  # for a slot, a restart, the writer
    WRITING = "writing"  # its line is being written
    SENT = "sent"  # in flight: its answer is awaited
    DONE = "done"  # answered, or failed


# The stages as plain names: ``Stage.DONE`` costs an enum lookup (tens of ns on 3.11), and
# a persistent hook's event checks its stage about ten times. Typed ``Stage``, not as
# literals: a stage changes under a check (another caller answers it).
WAITING: Stage = Stage.WAITING
WRITING: Stage = Stage.WRITING
SENT: Stage = Stage.SENT
DONE: Stage = Stage.DONE


class Waiter:
    """One event of one caller: its deadline, its stage, then its answer or error."""

    __slots__ = ("abandoned", "deadline", "error", "id", "result", "stage", "wake")

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self.stage = WAITING
        self.id = 0
        self.abandoned = False  # its caller went away: its answer is dropped
        self.result: HookResult | None = None
        self.error: HookRunError | None = None
        self.wake: anyio.Event | None = None  # made when it has to wait

    def answer(self, result: HookResult | None, error: HookRunError | None = None) -> None:
        self.result, self.error, self.stage = result, error, DONE
        if self.wake is not None:  # ``nudge()``, a call less per event
            self.wake.set()

    def nudge(self) -> None:
        """Wake it, if it waits: its answer came, or it is its turn to read."""
        if self.wake is not None:
            self.wake.set()

    async def wait(self) -> None:
        """Wait to be woken."""
        self.wake = anyio.Event()
        try:
            await self.wake.wait()
        finally:
            self.wake = None


class Gate:
    """A FIFO semaphore that keeps no event-loop state between calls.

    Each waiter waits on an event made in its own call, so the gate serves one event
    loop after another. A released slot goes straight to the first waiter. ``take()``
    takes a free slot without a coroutine; ``wait()`` waits for one.
    """

    def __init__(self, size: int) -> None:
        self.free = size
        self.waiters: collections.deque[anyio.Event] = collections.deque()

    def take(self) -> bool:
        """Take a free slot at once, if one is free and nobody waits: whether it did."""
        if self.free and not self.waiters:
            self.free -= 1
            return True
        return False

    async def wait(self) -> None:
        """Wait for a slot (call it when ``take()`` could not take one)."""
        event = anyio.Event()
        self.waiters.append(event)
        try:
            await event.wait()
        except BaseException:
            if event in self.waiters:
                self.waiters.remove(event)
            else:  # handed a slot while being cancelled: pass it on
                self.release()
            raise

    def release(self) -> None:
        if self.waiters:
            self.waiters.popleft().set()
        else:
            self.free += 1


def left(waiter: Waiter) -> float:
    """Seconds left until the event's deadline (0 when past it)."""
    return max(waiter.deadline - time.monotonic(), 0.0)


class ThreadGates(threading.local):
    """A ``Gate`` of ``limit`` slots per thread (``gate``): a registry's hook slots.

    A ``Gate`` keeps no event-loop state between waits, so one serves each event loop
    the thread runs in turn (a guarded sync tool runs one per call); event loops in
    other threads have their own.

    Args:
        limit: the slots of each thread's gate.
    """

    def __init__(self, limit: int) -> None:
        self.gate = Gate(limit)
