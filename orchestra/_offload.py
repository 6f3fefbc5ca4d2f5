"""``def`` hooks of ``blocking`` hook objects, called in daemon threads that may be abandoned.

A plain ``def`` hook is called inline (``orchestra._watchdog``): it never yields to the
event loop, so one stuck in ``time.sleep(1e6)`` holds the run. A hook object that says
it blocks (``blocking = True``) has its ``def`` hooks called here instead: in a daemon
thread, in a copy of the caller's context, while the caller waits on the loop,
cancellably (``call_in_thread``), or, called from synchronous code, on a thread lock
with the hook's timeout (``call_in_thread_now``). A call past its timeout is abandoned:
its thread finishes on its own and, being a daemon, never holds the process open at exit.

Only public APIs: the thread hands its outcome back through the loop's native token
(``anyio.lowlevel.current_token()``). Threads are kept for reuse (one per hook
call in flight, at most ``MAX_THREADS``; beyond that a call waits for a free one).
"""

from __future__ import annotations

import contextlib
import contextvars
import queue
import sys
import threading
from collections.abc import Callable
from typing import Any, Final, final

import anyio
import anyio.lowlevel

__all__ = ["call_in_thread", "call_in_thread_now"]

MAX_THREADS: Final = 64


@final
class _Call:
    """One hook call handed to a thread: its outcome, and the event its caller waits on."""

    __slots__ = ("args", "ctx", "error", "finished", "fn", "value")

    def __init__(
        self, fn: Callable[..., Any], args: tuple[Any, ...], finished: Callable[[], object]
    ) -> None:
        self.fn = fn
        self.args = args
        self.ctx = contextvars.copy_context()
        self.finished = finished  # tells the caller, from the thread, that the call ended
        self.value: Any = None
        self.error: BaseException | None = None

    def outcome(self) -> Any:
        """The call's value, or its error raised."""
        if self.error is not None:
            raise self.error
        return self.value


_jobs: queue.SimpleQueue[_Call] = queue.SimpleQueue()
_lock = threading.Lock()
_threads = 0
_idle = 0


def _work() -> None:
    global _idle
    while True:
        call = _jobs.get()
        try:
            call.value = call.ctx.run(call.fn, *call.args)
        except BaseException as exc:  # handed to the caller, raised there
            call.error = exc
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits for it
            call.finished()
        del call
        with _lock:
            _idle += 1


def _submit(call: _Call) -> None:
    global _threads, _idle
    with _lock:  # an idle thread is reserved for the call, else one more is started
        start = not _idle and _threads < MAX_THREADS
        if start:
            _threads += 1
        elif _idle:
            _idle -= 1
    if start:
        threading.Thread(target=_work, name="orchestra hook", daemon=True).start()
    _jobs.put(call)


def _notifier() -> Callable[[Callable[[], object]], object]:
    """How a thread schedules a callback on the running loop, without waiting for it.

    ``loop.call_soon_threadsafe`` (asyncio) or ``TrioToken.run_sync_soon`` (trio): the
    native token of ``anyio.lowlevel.current_token()``. ``anyio.from_thread.run_sync``
    would also wait for the callback to run: twice the cost per call (measured).
    """
    native: Any = anyio.lowlevel.current_token().native_token  # an event loop or TrioToken
    asyncio = sys.modules.get("asyncio")  # not imported: not its loop (a light import)
    if asyncio is not None and isinstance(native, asyncio.AbstractEventLoop):
        return native.call_soon_threadsafe  # type: ignore[no-any-return]
    return native.run_sync_soon  # type: ignore[no-any-return]  # trio ships its own types


async def call_in_thread(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` in a daemon thread; cancelling the caller abandons the call."""
    done = anyio.Event()
    notify = _notifier()
    call = _Call(fn, args, lambda: notify(done.set))
    _submit(call)
    await done.wait()
    return call.outcome()


def call_in_thread_now(fn: Callable[..., Any], args: tuple[Any, ...], timeout: float | None) -> Any:
    """``fn(*args)`` in a daemon thread, waited for here at most ``timeout`` seconds.

    Raises:
        TimeoutError: the call ran past ``timeout``; its thread is abandoned.
    """
    done = threading.Event()
    call = _Call(fn, args, done.set)
    _submit(call)
    if not done.wait(timeout):
        raise TimeoutError
    return call.outcome()
