"""``PersistentHook``: one persistent hook's process, and the events in flight to it.

What the process may do and what follows is in ``_persistent.pool`` (the table); here is how.

No task of its own reads the process: whichever caller waits for an answer while
nobody reads becomes the reader. It reads lines and hands each answer to its caller by
id, until its own answer came, then wakes another waiting caller to read on. An event
costs one write and one read, and no state tied to an event loop outlives a call, so a
registry can serve one event loop after another (a sync guarded tool fires each call in
an event loop of its own). Two event loops at once (two threads) are not supported.

The events in flight are timed by one thread (``Deadlines``), not by a cancel scope
each, which would cost more than the rest of the round trip: at a deadline it wakes the
reader, which fails the events that ran out and kills the process. Waiting for a turn
(a slot, the writer, a restart) is timed on the event loop.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import math
import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Final

import anyio

from orchestra.skills._persistent.deadlines import DEADLINES
from orchestra.skills._persistent.faults import Faults
from orchestra.skills._persistent.lines import answer_result, clip, event_line, parse_answer
from orchestra.skills._persistent.process import HookProcess, OutputEnded
from orchestra.skills._persistent.waiters import DONE, SENT, WRITING, Gate, Waiter, left
from orchestra.skills._processes.command import describe_exit
from orchestra.skills._protocol.result import HookResult, HookRunError

if TYPE_CHECKING:
    from orchestra.skills._hooks.command import CommandHook
    from orchestra.skills._protocol.call import HookCall

__all__ = ["PersistentHook"]

# How long a process gets to exit by itself (after it closed its stdout, or after its
# stdin was closed on aclose) before its group is killed.
_GRACE: Final = 0.5
_CLOSED: Final = "stopped: the registry was closed"
_INF: Final = math.inf
_ENDED: Final[list[bytes]] = []  # ``_persistent.lines``: the process's stdout ended (by identity)


class PersistentHook:
    """The process of one persistent hook, and the events in flight to it.

    Args:
        hook: the hook.
        spawn: starts its process, given the read end of its wake-up pipe (called at the
            first event, and after a failure).

    Attributes:
        broken: why the hook is broken, or None.
        oldest_deadline: when the oldest event in flight must be answered
            (``time.monotonic()``; ``math.inf`` when none is in flight).
        watched: ``DEADLINES`` times it now.
        closed: stopped for good (its registry forgot it): it starts no process.
    """

    def __init__(self, hook: CommandHook, spawn: Callable[[int], HookProcess]) -> None:
        self.hook = hook
        self.broken: str | None = None
        self.oldest_deadline = math.inf
        self.watched = False
        self.closed = False
        self._spawn = spawn
        self._child: HookProcess | None = None
        self._slots = Gate(hook.max_in_flight)
        # Who writes a line: one at a time (with one event in flight, its slot says so).
        self._writer = Gate(1) if hook.max_in_flight > 1 else None
        self._ids = itertools.count(1)
        self._in_flight: dict[int, Waiter] = {}  # written, not answered; oldest first
        self._reading = False
        self._faults = Faults()
        self._dying: list[HookProcess] = []
        self._wake_read, self._wake_write = -1, -1

    @property
    def pid(self) -> int | None:
        """The process id (also its group's), None when it is not running."""
        return self._child.pid if self._child is not None else None

    def wake(self) -> None:
        """Wake the reader: an event ran out of time (``DEADLINES`` calls it)."""
        if self._wake_write >= 0:
            with contextlib.suppress(OSError):  # full: a wake-up is pending already
                os.write(self._wake_write, b"!")

    async def run(self, call: HookCall) -> HookResult:
        """Send one event and wait for its answer, under the hook's timeout.

        The caller does it all: a turn, a process that is sound (started, and with
        nothing unasked on its stdout), the line written, then the answers read and
        handed out until this event has its own, or another caller's reading waited for.

        Raises:
            HookRunError: the process failed (see the module's table), or is broken.
        """
        if self.broken is not None:
            raise HookRunError(self.broken)
        waiter = Waiter(time.monotonic() + self.hook.timeout)
        slots = self._slots
        if slots.free and not slots.waiters:  # ``slots.take()``, a call less per event
            slots.free -= 1
        else:
            await self._turn(slots, waiter)
        try:
            child = self._child
            if child is None or (not self._in_flight and self._stray(child)):
                child = await self._started(waiter)
            waiter.id = next(self._ids)
            await self._write(child, waiter, event_line(call, waiter.id))
            while waiter.stage is not DONE:
                if self._reading:
                    await self._follow(child, waiter)
                else:
                    await self._read(child, waiter)
        finally:
            slots.release()
            if waiter.stage is not DONE:
                self._leave(waiter)
            if self._dying:
                await self._bury()
        if waiter.error is not None:
            raise waiter.error
        assert waiter.result is not None
        return waiter.result

    def _stray(self, child: HookProcess) -> bool:
        """Whether the process wrote while no event was in flight: then it is killed.

        Such a line answers nothing (taken as the next event's answer, it would decide
        an event the process never saw).
        """
        stray = child.stray()
        if stray is not None:
            self._fail(child, f"answered while no event was in flight: {clip(stray)}")
        return stray is not None

    async def _write(self, child: HookProcess, waiter: Waiter, line: bytes) -> None:
        """Put the event in flight and write its line, one writer at a time."""
        writer = self._writer
        if writer is not None and not writer.take():
            await self._turn(writer, waiter)
        try:
            rest = self._send(child, waiter, line)
            if rest is not None:  # the pipe is full
                await self._send_rest(child, waiter, rest)
        finally:
            if writer is not None:
                writer.release()

    async def _read(self, child: HookProcess, waiter: Waiter) -> None:
        """Read answers and hand them out, until this event has its own (or it failed)."""
        self._reading = True
        try:
            while waiter.stage is not DONE and child is self._child:
                # What was read holds no whole line (the reader before took them all):
                # wait for the pipes, unless it saw an end or a wake-up.
                if not (child.ended or child.woken):
                    try:
                        await anyio.wait_readable(child.ready_fd)
                    except anyio.ClosedResourceError:
                        break  # killed meanwhile: the failure answered every event
                    if child.killed:
                        break
                    child.drain()
                lines = self._lines(child)
                if lines is _ENDED:
                    await self._ended(child)
                    break
                if lines is None:
                    break
                for answer in lines:
                    self._deliver(child, answer)
                if self._in_flight and self.oldest_deadline <= time.monotonic():
                    self._fail(child, str(self._timed_out()))
        finally:
            self._reading = False
            if self._in_flight:
                self._pass_reading()

    def _lines(self, child: HookProcess) -> list[bytes] | None:
        """The whole lines read so far (``[]``: none yet), ``_ENDED``, or None: stop."""
        try:
            return child.lines() or []
        except OutputEnded:
            return _ENDED
        except HookRunError as exc:
            self._fail(child, str(exc))
        except anyio.ClosedResourceError:
            pass  # killed meanwhile: the failure answered every event
        return None

    async def _turn(self, gate: Gate, waiter: Waiter) -> None:
        """Wait for a slot of ``gate`` until the event's deadline."""
        with anyio.move_on_after(left(waiter)) as scope:
            await gate.wait()
        if scope.cancelled_caught:
            raise self._timed_out(waiting=True)

    def _timed_out(self, *, waiting: bool = False) -> HookRunError:
        message = f"timed out after {self.hook.timeout:g} s"
        return HookRunError(message + " waiting for the process" if waiting else message)

    def _send(self, child: HookProcess, waiter: Waiter, line: bytes) -> memoryview | None:
        """Put the event in flight and write what the pipe takes of its line now.

        Returns what is left to write (None: all of it went, or nothing will).
        """
        if child is not self._child:  # it failed while this event waited its turn
            waiter.answer(None, HookRunError("the process failed before the event was sent"))
            return None
        waiter.stage = WRITING
        in_flight = self._in_flight
        in_flight[waiter.id] = waiter
        if len(in_flight) == 1:
            self.oldest_deadline = waiter.deadline
        if not self.watched:  # else no lock to take (see ``Deadlines.watch``)
            DEADLINES.watch(self)
        try:
            rest = child.write_now(line)
        except BrokenPipeError:
            rest = None  # it is gone: the reader finds out how
        if rest is None:
            waiter.stage = SENT
        return rest

    async def _send_rest(self, child: HookProcess, waiter: Waiter, rest: memoryview) -> None:
        """Write the rest of the event's line as the pipe takes it, until its deadline."""
        try:
            await child.write_rest(rest, waiter.deadline)
        except (BrokenPipeError, anyio.ClosedResourceError):
            pass  # it is gone: the reader finds out how
        except TimeoutError:  # it does not read its stdin
            self._fail(child, str(self._timed_out()))
        if waiter.stage is WRITING:
            waiter.stage = SENT

    async def _ended(self, child: HookProcess) -> None:
        """The process closed its stdout: a grace to exit, then the events in flight fail."""
        code = await child.exited(_GRACE)
        reason = "closed its stdout" if code is None else describe_exit(code, child.shell)
        self._fail(child, reason, exit_code=code)

    async def _follow(self, child: HookProcess, waiter: Waiter) -> None:
        """Wait while another caller reads: for the answer, or a turn to read."""
        with anyio.move_on_after(left(waiter)):
            await waiter.wait()
        if waiter.stage is not DONE and waiter.deadline <= time.monotonic():
            self._fail(child, str(self._timed_out()))  # the reader did not see to it

    def _leave(self, waiter: Waiter) -> None:
        """Settle an event whose caller went away (cancelled, or timed out waiting)."""
        if waiter.stage is WRITING:  # half a line is out: the stream is lost
            child = self._child
            if child is not None:
                self._fail(child, "an event was cancelled while being written", count=False)
        elif waiter.stage is SENT:
            waiter.abandoned = True  # its answer is dropped when it comes
            if not self._reading:  # it may have been woken to read on
                self._pass_reading()

    def _pass_reading(self) -> None:
        """Wake a caller still waiting for its answer to read on."""
        for waiter in self._in_flight.values():
            if not waiter.abandoned and waiter.stage is SENT:
                waiter.nudge()
                return

    async def _started(self, waiter: Waiter) -> HookProcess:
        while self._child is None:
            if self.broken is not None:
                raise HookRunError(self.broken)
            if self.closed:  # a late event of a registry being closed
                raise HookRunError(_CLOSED)
            restart_at, now = self._faults.restart_at, time.monotonic()
            if restart_at > now:
                if restart_at > waiter.deadline:
                    await anyio.sleep(left(waiter))
                    raise self._timed_out(waiting=True)
                await anyio.sleep(restart_at - now)
                continue
            if self._wake_read < 0:
                self._wake_read, self._wake_write = os.pipe()
                os.set_blocking(self._wake_write, False)
            try:
                self._child = self._spawn(self._wake_read)
            except HookRunError as exc:
                self.broken = self._faults.count(str(exc)) or self.broken
                raise
        return self._child

    def _deliver(self, child: HookProcess, line: bytes) -> None:
        """Hand one answer to its caller; a line that breaks the protocol kills."""
        if child is not self._child:
            return
        try:
            key, data = parse_answer(line)
        except ValueError as exc:
            self._fail(child, str(exc))
            return
        in_flight = self._in_flight
        if key is None:
            # One at a time, an answer without an id is the event's in flight, unless the
            # process echoed ids before, or has not read that event: a stray line.
            if self.hook.max_in_flight > 1 or not in_flight or child.echoes_ids:
                self._fail(child, f"answered without an id: {clip(line)}")
                return
            if child.unread_input():
                self._fail(child, f"answered without an id, its event unread: {clip(line)}")
                return
            key = next(iter(in_flight))
        else:
            child.echoes_ids = True
        try:
            waiter = in_flight.pop(key, None)
        except TypeError:  # an id that cannot be one (a list, an object)
            waiter = None
        if waiter is None:
            self._fail(child, f"answered unknown id {json.dumps(key)}")
            return
        self.oldest_deadline = next(iter(in_flight.values())).deadline if in_flight else _INF
        stderr = child.take_stderr() if child.err else ""
        if not waiter.abandoned:
            waiter.answer(*answer_result(data, strict=self.hook.strict_output, stderr=stderr))

    def _fail(
        self, child: HookProcess, reason: str, *, count: bool = True, exit_code: int | None = None
    ) -> None:
        """Kill the process and fail every event in flight with ``reason``."""
        if child is not self._child:
            return
        self._child = None
        stderr = child.last_words()
        child.kill()
        self._dying.append(child)
        in_flight, self._in_flight = self._in_flight, {}
        self.oldest_deadline = math.inf
        for waiter in in_flight.values():
            waiter.answer(None, HookRunError(reason, exit_code=exit_code, stderr=stderr))
        if count:
            self.broken = self._faults.count(reason) or self.broken

    async def _bury(self) -> None:
        """Reap the processes killed so far."""
        while self._dying:
            await self._dying.pop().reap()

    def _close_wake_pipe(self) -> None:
        # Under the lock: the thread never writes on a closed (or reused) descriptor. As
        # the interpreter exits, the thread may have died holding it: then leave the pipe.
        if not DEADLINES.lock.acquire(timeout=1.0):
            return
        try:
            for fd in (self._wake_read, self._wake_write):
                if fd >= 0:
                    os.close(fd)
            self._wake_read, self._wake_write = -1, -1
        finally:
            DEADLINES.lock.release()

    async def aclose(self) -> None:
        """Stop the process: end of its input, a grace to exit, then kill its group."""
        self.closed = True
        with anyio.CancelScope(shield=True):
            child, self._child = self._child, None
            if child is not None:
                in_flight, self._in_flight = self._in_flight, {}
                self.oldest_deadline = math.inf
                for waiter in in_flight.values():
                    waiter.answer(None, HookRunError(_CLOSED))
                child.close_stdin()
                await child.exited(_GRACE)
                child.kill()  # what it left behind in its group goes with it
                self._dying.append(child)
            await self._bury()
            self._close_wake_pipe()

    def kill(self) -> bool:
        """Kill the process at once, outside any event loop; whether one was running."""
        self.closed = True
        child, self._child = self._child, None
        self.oldest_deadline = math.inf
        for dead in [*self._dying, *([child] if child is not None else [])]:
            dead.kill(in_loop=False)
            dead.reap_now()
        self._dying.clear()
        self._close_wake_pipe()
        return child is not None
