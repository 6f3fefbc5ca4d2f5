"""Persistent command hooks: one long-lived process per hook, one JSON line per event.

A ``CommandHook`` with ``persistent: true`` is not spawned per event. Its process starts
at the hook's first event, with the command, environment and process group of its own
that any command hook gets, and stays: each event is one line on its stdin (the event
JSON a command hook reads, plus ``"id": N``), answered by one line on its stdout (a
result object as a command hook prints it, with the same ``id``). ``HookProcesses``
holds the processes of one registry; ``registry.aclose()`` stops them all.

What the process does, and what follows (each error is a ``HookRunError`` for the
events concerned, which then follow their hook's ``on_error``):

============================================  ========================================
the process                                   then
============================================  ========================================
answers ``{"id": N, "error": "..."}``         that event fails; the process is kept
answers a result of the wrong shape           that event fails; the process is kept
exits, or closes its stdout                   the events in flight fail; its group is
                                              killed; it restarts at the next event
prints a line that is not a JSON object       the same, the process killed first
answers an id that is not in flight           the same
answers without an id, ``max_in_flight`` > 1  the same
prints a line over 1 MiB                      the same
gives no answer within the hook's ``timeout``  the same
fails 5 times within 60 s                     broken: each event fails at once, saying
                                              so, until the registry is closed
============================================  ========================================

A restart waits a backoff after the last failure (50 ms, doubling, at most 2 s).
Stderr is read all along, so it never fills up and blocks the process; each answer
carries what the process wrote there since the answer before (at most 64 KiB).

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

import atexit
import collections
import contextlib
import enum
import itertools
import json
import math
import os
import time
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Final

import anyio
import attrs
import tenacity
from opentelemetry import context as otel_context

from orchestra.skills._command import command_argv, describe_exit
from orchestra.skills._deadlines import DEADLINES
from orchestra.skills._hook import HookCall, event_json
from orchestra.skills._hook_process import HookProcess, OutputEnded
from orchestra.skills._result import HookResult, HookRunError, result_from_json

if TYPE_CHECKING:
    from orchestra.skills._command_hook import CommandHook

__all__ = [
    "FAULT_WINDOW",
    "MAX_FAULTS",
    "MAX_IN_FLIGHT",
    "HookProcesses",
    "PersistentHook",
    "run_persistent",
]

MAX_IN_FLIGHT: Final = 256
"""The most events a persistent hook may have in flight at once (``max_in_flight``)."""
MAX_FAULTS: Final = 5
"""Failures within ``FAULT_WINDOW`` seconds after which a persistent hook is broken."""
FAULT_WINDOW: Final = 60.0
"""The window, in seconds, in which ``MAX_FAULTS`` failures break a persistent hook."""

# How long a process gets to exit by itself (after it closed its stdout, or after its
# stdin was closed on aclose) before its group is killed.
_GRACE: Final = 0.5
# The wait before a restart, by the number of recent failures: 50 ms, 100 ms, ... 2 s.
_BACKOFF: Final = tenacity.wait_exponential(multiplier=0.05, max=2.0)
_RETRYING: Final = tenacity.Retrying(wait=_BACKOFF)
_NONE: Final = HookResult()  # no opinion: ``{}``, the most common answer
_CLOSED: Final = "stopped: the registry was closed"


def _backoff(failures: int) -> float:
    state = tenacity.RetryCallState(_RETRYING, None, (), {})
    state.attempt_number = failures
    return float(_BACKOFF(state))


class _Stage(enum.Enum):
    WAITING = "waiting"  # for a slot, a restart, the writer
    WRITING = "writing"  # its line is being written
    SENT = "sent"  # in flight: its answer is awaited
    DONE = "done"  # answered, or failed


class _Waiter:
    """One event of one caller: its deadline, its stage, then its answer or error."""

    __slots__ = ("abandoned", "deadline", "error", "id", "result", "stage", "wake")

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self.stage = _Stage.WAITING
        self.id = 0
        self.abandoned = False  # its caller went away: its answer is dropped
        self.result: HookResult | None = None
        self.error: HookRunError | None = None
        self.wake: anyio.Event | None = None  # made when it has to wait

    def answer(self, result: HookResult | None, error: HookRunError | None = None) -> None:
        self.result, self.error, self.stage = result, error, _Stage.DONE
        self.nudge()

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


class _Gate:
    """A FIFO semaphore that keeps no event-loop state between calls.

    Each waiter waits on an event made in its own call, so the gate serves one event
    loop after another. A released slot goes straight to the first waiter. The caller
    takes a free slot itself (``free``, ``waiters``) to spare a coroutine.
    """

    def __init__(self, size: int) -> None:
        self.free = size
        self.waiters: collections.deque[anyio.Event] = collections.deque()

    async def wait(self) -> None:
        """Wait for a slot (call it when none is free)."""
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
        self._slots = _Gate(hook.max_in_flight)
        self._writer = _Gate(1)
        self._ids = itertools.count(1)
        self._in_flight: dict[int, _Waiter] = {}  # written, not answered; oldest first
        self._reading = False
        self._failures: collections.deque[float] = collections.deque()
        self._restart_at = 0.0
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

        Raises:
            HookRunError: the process failed (see the module's table), or is broken.
        """
        if self.broken is not None:
            raise HookRunError(self.broken)
        waiter = _Waiter(time.monotonic() + self.hook.timeout)
        slots = self._slots
        if slots.free and not slots.waiters:
            slots.free -= 1
        else:
            await self._turn(slots, waiter)
        try:
            await self._exchange(waiter, call)
        finally:
            slots.release()
            if waiter.stage is not _Stage.DONE:
                self._leave(waiter)
            if self._dying:
                await self._bury()
        if waiter.error is not None:
            raise waiter.error
        assert waiter.result is not None
        return waiter.result

    async def _turn(self, gate: _Gate, waiter: _Waiter) -> None:
        """Wait for a slot of ``gate`` until the event's deadline."""
        with anyio.move_on_after(_left(waiter)) as scope:
            await gate.wait()
        if scope.cancelled_caught:
            raise self._timed_out(waiting=True)

    def _timed_out(self, *, waiting: bool = False) -> HookRunError:
        message = f"timed out after {self.hook.timeout:g} s"
        return HookRunError(message + " waiting for the process" if waiting else message)

    async def _exchange(self, waiter: _Waiter, call: HookCall) -> None:
        child = self._child
        if child is None:
            child = await self._started(waiter)
        waiter.id = next(self._ids)
        line = event_json({**call.data, "id": waiter.id}) + b"\n"
        writer = self._writer
        if writer.free and not writer.waiters:
            writer.free -= 1
        else:
            await self._turn(writer, waiter)
        try:
            if child is not self._child:  # it failed while this event waited its turn
                waiter.answer(None, HookRunError("the process failed before the event was sent"))
                return
            waiter.stage = _Stage.WRITING
            self._in_flight[waiter.id] = waiter
            if len(self._in_flight) == 1:
                self.oldest_deadline = waiter.deadline
            DEADLINES.watch(self)
            try:
                rest = child.write_now(line)
                if rest is not None:
                    await child.write_rest(rest, waiter.deadline)
            except (BrokenPipeError, anyio.ClosedResourceError):
                pass  # it is gone: the reader finds out how
            except TimeoutError:  # it does not read its stdin
                self._fail(child, str(self._timed_out()))
            if waiter.stage is _Stage.WRITING:
                waiter.stage = _Stage.SENT
        finally:
            writer.release()
        while waiter.stage is not _Stage.DONE:
            if self._reading:
                await self._follow(child, waiter)
                continue
            self._reading = True
            try:
                await self._read(child, waiter)
            finally:
                self._reading = False
                self._pass_reading()

    async def _follow(self, child: HookProcess, waiter: _Waiter) -> None:
        """Wait while another caller reads: for the answer, or a turn to read."""
        with anyio.move_on_after(_left(waiter)):
            await waiter.wait()
        if waiter.stage is not _Stage.DONE and waiter.deadline <= time.monotonic():
            self._fail(child, str(self._timed_out()))  # the reader did not see to it

    def _leave(self, waiter: _Waiter) -> None:
        """Settle an event whose caller went away (cancelled, or timed out waiting)."""
        if waiter.stage is _Stage.WRITING:  # half a line is out: the stream is lost
            child = self._child
            if child is not None:
                self._fail(child, "an event was cancelled while being written", count=False)
        elif waiter.stage is _Stage.SENT:
            waiter.abandoned = True  # its answer is dropped when it comes
            if not self._reading:  # it may have been woken to read on
                self._pass_reading()

    def _pass_reading(self) -> None:
        """Wake a caller still waiting for its answer to read on."""
        for waiter in self._in_flight.values():
            if not waiter.abandoned and waiter.stage is _Stage.SENT:
                waiter.nudge()
                return

    async def _started(self, waiter: _Waiter) -> HookProcess:
        while self._child is None:
            if self.broken is not None:
                raise HookRunError(self.broken)
            if self.closed:  # a late event of a registry being closed
                raise HookRunError(_CLOSED)
            now = time.monotonic()
            if self._restart_at > now:
                if self._restart_at > waiter.deadline:
                    await anyio.sleep(_left(waiter))
                    raise self._timed_out(waiting=True)
                await anyio.sleep(self._restart_at - now)
                continue
            if self._wake_read < 0:
                self._wake_read, self._wake_write = os.pipe()
                os.set_blocking(self._wake_write, False)
            try:
                self._child = self._spawn(self._wake_read)
            except HookRunError as exc:
                self._count_failure(str(exc))
                raise
        return self._child

    async def _read(self, child: HookProcess, waiter: _Waiter) -> None:
        """Read answers and hand them out, until ``waiter`` has its own."""
        while waiter.stage is not _Stage.DONE and child is self._child:
            try:
                lines = await child.lines()
            except OutputEnded:
                code = await child.exited(_GRACE)
                reason = "closed its stdout" if code is None else describe_exit(code, child.shell)
                self._fail(child, reason, exit_code=code)
                return
            except HookRunError as exc:
                self._fail(child, str(exc))
                return
            except anyio.ClosedResourceError:
                return  # killed meanwhile: the failure answered every event in flight
            for line in lines:
                self._deliver(child, line)
            if self.oldest_deadline <= time.monotonic():
                self._fail(child, str(self._timed_out()))

    def _deliver(self, child: HookProcess, line: bytes) -> None:
        """Hand one answer to its caller; a line that breaks the protocol kills."""
        if child is not self._child:
            return
        try:
            data = json.loads(line) if line.strip() else {}
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
            self._fail(child, f"invalid JSON output: {_why(exc)}: {_clip(line)}")
            return
        if not isinstance(data, dict):
            self._fail(child, f"invalid JSON output: expected an object: {_clip(line)}")
            return
        key = data.pop("id", None)
        in_flight = self._in_flight
        if key is None:
            if self.hook.max_in_flight > 1 or not in_flight:
                self._fail(child, f"answered without an id: {_clip(line)}")
                return
            key = next(iter(in_flight))  # one at a time: answers come in order
        waiter = in_flight.pop(key, None)
        if waiter is None:
            self._fail(child, f"answered unknown id {json.dumps(key)}")
            return
        self.oldest_deadline = next(iter(in_flight.values())).deadline if in_flight else math.inf
        stderr = child.take_stderr()
        if waiter.abandoned:
            return
        error = data.pop("error", None)
        if error is not None:
            text = error if isinstance(error, str) else json.dumps(error)
            waiter.answer(None, HookRunError(f"answered an error: {text}", stderr=stderr))
            return
        try:
            result = result_from_json(data, strict=self.hook.strict_output) if data else _NONE
        except HookRunError as exc:
            waiter.answer(None, HookRunError(str(exc), stderr=stderr))
            return
        waiter.answer(attrs.evolve(result, stderr=stderr) if stderr else result)

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
            self._count_failure(reason)

    def _count_failure(self, reason: str) -> None:
        now = time.monotonic()
        self._failures.append(now)
        while self._failures[0] < now - FAULT_WINDOW:
            self._failures.popleft()
        count = len(self._failures)
        if count >= MAX_FAULTS:
            self.broken = (
                f"broken: failed {count} times in {FAULT_WINDOW:g} s (last: {reason}); "
                "not restarted until the registry is closed"
            )
        self._restart_at = now + _backoff(count)

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


class HookProcesses:
    """The processes of a registry's persistent hooks: one per hook, started on demand.

    Those of a registry still open when the interpreter exits are killed then (a
    process in a session of its own would outlive it otherwise).
    """

    def __init__(self) -> None:
        self._hooks: dict[int, PersistentHook] = {}

    def __len__(self) -> int:
        """How many processes are running."""
        return sum(1 for hook in self._hooks.values() if hook.pid is not None)

    def get(self, hook: CommandHook, call: HookCall) -> PersistentHook:
        """The state of ``hook``'s process (made at its first event)."""
        found = self._hooks.get(id(hook))
        if found is None or found.hook is not hook:
            found = self._hooks[id(hook)] = PersistentHook(hook, _spawner(hook, call))
            _OPEN.add(self)
        return found

    async def aclose(self) -> None:
        """Stop every process (concurrently) and forget every failure."""
        hooks, self._hooks = list(self._hooks.values()), {}
        _OPEN.discard(self)
        with anyio.CancelScope(shield=True):
            async with anyio.create_task_group() as group:
                for hook in hooks:
                    group.start_soon(hook.aclose)

    def kill(self) -> int:
        """Kill every process at once, outside any event loop; how many were running."""
        hooks, self._hooks = list(self._hooks.values()), {}
        _OPEN.discard(self)
        return sum(hook.kill() for hook in hooks)


_OPEN: Final[weakref.WeakSet[HookProcesses]] = weakref.WeakSet()
"""The ``HookProcesses`` that may have processes running."""


@atexit.register
def _kill_at_exit() -> None:
    """Kill the processes of registries nobody closed, as the interpreter exits."""
    for processes in list(_OPEN):
        processes.kill()


def _spawner(hook: CommandHook, call: HookCall) -> Callable[[int], HookProcess]:
    """How to start the hook's process: its argv, environment and folder, as any command."""
    where = HookCall(call.event, {}, call.project_dir)
    argv = [*hook.wrap(where), *command_argv(hook.command, hook.args)]

    def spawn(wake: int) -> HookProcess:
        # The process outlives this event's span: no TRACEPARENT in its environment
        # (each event line has the event's own ``traceparent`` when tracing is on).
        token = otel_context.attach(otel_context.Context())
        try:
            env = hook.environment(where)
        finally:
            otel_context.detach(token)
        return HookProcess.start(argv, env, where.project_dir, wake)

    return spawn


async def run_persistent(hook: CommandHook, call: HookCall) -> HookResult:
    """Send an event to a persistent hook's process (started if need be), read its answer.

    Raises:
        HookRunError: the process failed or is broken, or no registry holds it.
    """
    if call.processes is None:
        raise HookRunError("a persistent hook runs in a HookRegistry, which holds its process")
    return await call.processes.get(hook, call).run(call)


def _left(waiter: _Waiter) -> float:
    """Seconds left until the event's deadline (0 when past it)."""
    return max(waiter.deadline - time.monotonic(), 0.0)


def _why(exc: Exception) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg} at column {exc.colno}"
    if isinstance(exc, UnicodeDecodeError):
        return "not UTF-8"
    return "nested too deeply"


def _clip(line: bytes, size: int = 200) -> str:
    text = line.decode("utf-8", "replace")
    return text if len(text) <= size else text[:size] + "..."
