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
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Awaitable, Callable
from typing import Any, Final, TypeVar

import anyio
import anyio.abc

__all__ = ["TERMINATED", "run_terminable"]

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


def run_terminable(fn: Callable[..., Awaitable[_T]], *args: Any, backend: str) -> _T:
    """``anyio.run(fn, *args)``, where a SIGTERM cancels ``fn`` and raises ``SystemExit(143)``."""
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
    ):
        return anyio.run(fn, *args, backend=backend)
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
            await tg.start(watch, tg.cancel_scope)
            try:
                # kept aside, not returned: asyncio's runner formats main's result as it
                # closes; an error too, so that the task group does not wrap it in a group
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
