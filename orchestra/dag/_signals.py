"""SIGTERM treated as SIGINT is: the run is cancelled cleanly, then the process is told.

``run_sync`` (in the main thread) and ``orchestra run`` run their event loop through
``run_terminable``: a SIGTERM cancels the work, so cancellation does what it does for a
SIGINT (tasks end CANCELLED, hook processes are killed with their process groups,
``on_end`` and ``after_run`` run shielded, the journal records what settled and releases
its leases), and then ``SystemExit(143)`` is raised: left uncaught, the process exits
with the status a shell expects of a process ended by SIGTERM (128 + 15). A SIGTERM
handler of the program's own is left in place (and so is the signal's default outside
the main thread, where no handler can be installed). A SIGINT ends the run as anyio
does on each backend, raised as a plain ``KeyboardInterrupt`` on both (trio's comes out
of the run's task group in a ``BaseExceptionGroup``).

A signal may be delivered to any thread (a sync body's too), and Python runs its handler
in the main thread only when that thread runs Python code again: an asyncio loop asleep
in its poll, with no signal receiver of its own, is woken by ``signals_wake_the_loop``.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import threading
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, Final, TypeVar

import anyio
import anyio.abc

__all__ = ["TERMINATED", "run_terminable", "signals_wake_the_loop"]

TERMINATED: Final = 128 + signal.SIGTERM
"""The exit status of a run ended by SIGTERM (143)."""

_T = TypeVar("_T")


def _interrupt(exc: BaseException) -> BaseException:
    """A Ctrl-C as a plain ``KeyboardInterrupt``, as on asyncio.

    Trio delivers it into the run's task group, which wraps it in a ``BaseExceptionGroup``.
    """
    if isinstance(exc, BaseExceptionGroup):
        matched, rest = exc.split(KeyboardInterrupt)
        if matched is not None and rest is None:
            return KeyboardInterrupt()
    return exc


@contextlib.contextmanager
def signals_wake_the_loop(loop: asyncio.AbstractEventLoop) -> Iterator[None]:
    """Every signal wakes ``loop`` (of the main thread), whichever thread received it.

    The kernel delivers a process's signal to any thread that does not block it. Python
    runs the handler in the main thread once it runs Python code again, so a loop asleep
    in its poll ran it only when something else woke it: a Ctrl-C delivered to a sync
    body's thread was seen when the body returned. ``signal.set_wakeup_fd`` makes each
    signal write a byte to a socket that the loop watches. A wakeup fd already set (by
    asyncio's own signal handlers, which read it) is left alone: it wakes the loop too.
    """
    receive, send = socket.socketpair()
    with receive, send:
        for sock in (receive, send):
            sock.setblocking(False)
        previous = signal.set_wakeup_fd(send.fileno(), warn_on_full_buffer=False)
        if previous != -1:
            signal.set_wakeup_fd(previous)
            yield
            return

        def drain() -> None:
            with contextlib.suppress(BlockingIOError):
                while receive.recv(4096):
                    pass

        loop.add_reader(receive.fileno(), drain)
        try:
            yield
        finally:
            signal.set_wakeup_fd(previous)
            loop.remove_reader(receive.fileno())


def run_terminable(fn: Callable[..., Awaitable[_T]], *args: Any, backend: str) -> _T:
    """``anyio.run(fn, *args)``, where a SIGTERM cancels ``fn`` and raises ``SystemExit(143)``.

    A SIGTERM handler of the program's own is left to handle SIGTERM; a Ctrl-C is a plain
    ``KeyboardInterrupt`` either way.
    """
    if threading.current_thread() is not threading.main_thread():
        return anyio.run(fn, *args, backend=backend)  # no signal reaches this loop
    watch_term = signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    done: list[_T] = []
    failed: list[BaseException] = []
    terminated: list[int] = []

    async def watch(scope: anyio.CancelScope, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        with anyio.open_signal_receiver(signal.SIGTERM) as signals:
            task_status.started()
            async for _ in signals:
                terminated.append(TERMINATED)
                scope.cancel()
                return

    async def main() -> None:
        cancelled = anyio.get_cancelled_exc_class()
        async with anyio.create_task_group() as tg:
            if watch_term:
                await tg.start(watch, tg.cancel_scope)
            woken = (  # trio wakes its own loop, and so does asyncio's receiver (watch's)
                signals_wake_the_loop(asyncio.get_running_loop())
                if backend == "asyncio" and not watch_term
                else contextlib.nullcontext()
            )
            with woken:
                try:
                    # kept aside, not returned: asyncio's runner formats main's result as
                    # it closes; an error too, so that the task group does not wrap it
                    done.append(await fn(*args))
                except cancelled:
                    raise
                except BaseException as exc:
                    failed.append(_interrupt(exc))
            tg.cancel_scope.cancel()  # the watcher: the work ended

    anyio.run(main, backend=backend)
    if terminated:
        raise SystemExit(TERMINATED) from (failed[0] if failed else None)
    if failed:
        raise failed[0]
    return done[0]
