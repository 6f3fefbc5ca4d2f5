"""The run's threads for sync bodies, public APIs only (internal).

Measured (``bench/scheduler.py``, sync sections): one ``anyio.to_thread.run_sync`` per
body costs a thread hand-off and a loop wake-up each, and falls below dask's threaded
scheduler on wide DAGs. So a run starts its threads once: each is one long
``anyio.to_thread.run_sync`` call (an anyio worker thread, where ``anyio.from_thread``
reaches the loop) that takes bodies from one ``queue.SimpleQueue``. A thread that
finishes a body appends the outcome to a deque and wakes the loop only when no wake-up
is pending (``call_soon_threadsafe`` on asyncio, ``TrioToken.run_sync_soon`` on trio:
the native token of ``anyio.lowlevel.current_token()``), so the loop collects every
outcome that arrived meanwhile in one callback. Threads start on demand, up to
``max_threads``.

Each body runs in a copy of its caller's context. A cancelled caller abandons its body:
the thread finishes it on its own and the outcome is dropped; a ``BaseException`` the
body raised by then (``KeyboardInterrupt``, say) is raised to the caller instead of the
cancellation, so that it is not lost.
"""

from __future__ import annotations

import contextlib
import contextvars
import queue
import sys
from collections import deque
from collections.abc import Callable
from typing import Any, Final, final

import anyio
import anyio.abc
import anyio.lowlevel
import anyio.to_thread

__all__ = ["ThreadPool"]

_STOP: Final = None


@final
class _Job:
    """One body handed to a thread, and what it ended with."""

    __slots__ = ("ctx", "done", "error", "fn", "kwargs", "value")

    def __init__(self, fn: Callable[..., Any], kwargs: dict[str, Any]) -> None:
        self.fn = fn
        self.kwargs = kwargs
        self.ctx = contextvars.copy_context()
        self.done = anyio.Event()
        self.value: Any = None
        self.error: BaseException | None = None


@final
class ThreadPool:
    """Threads for one run's sync bodies, bound to the event loop that opened it.

    Use it as ``async with ThreadPool(n) as pool:`` around the run's work, and
    ``await pool.run(fn, kwargs)`` per body.
    """

    __slots__ = (
        "_done",
        "_in_flight",
        "_jobs",
        "_limiter",
        "_notify",
        "_pending",
        "_tg",
        "_threads",
        "max_threads",
    )

    def __init__(self, max_threads: int) -> None:
        self.max_threads = max_threads
        self._limiter = anyio.CapacityLimiter(max_threads)  # not anyio's default 40
        self._in_flight = 0  # bodies handed over whose outcome the loop has not collected
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._done: deque[_Job] = deque()
        self._pending = False  # a wake-up of the loop is scheduled and not yet run
        self._threads = 0
        self._tg: anyio.abc.TaskGroup | None = None
        native: Any = anyio.lowlevel.current_token().native_token  # a loop or a TrioToken
        asyncio = sys.modules.get("asyncio")
        if asyncio is not None and isinstance(native, asyncio.AbstractEventLoop):
            self._notify: Callable[[Callable[[], None]], object] = native.call_soon_threadsafe
        else:
            self._notify = native.run_sync_soon

    async def __aenter__(self) -> ThreadPool:
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._tg is not None
        for _ in range(self._threads):
            self._jobs.put(_STOP)  # each thread ends once the bodies before it are done
        self._tg.cancel_scope.cancel()  # a thread still in a body is abandoned
        await self._tg.__aexit__(None, None, None)

    async def run(self, fn: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
        """Run ``fn(**kwargs)`` in a thread and return its result (or raise its error)."""
        job = _Job(fn, kwargs)
        self._jobs.put(job)
        self._in_flight += 1
        if self._in_flight > self._threads < self.max_threads:
            self._start()
        try:
            await job.done.wait()
        except anyio.get_cancelled_exc_class():
            if job.error is not None and not isinstance(job.error, Exception):
                raise job.error from None
            raise
        if job.error is not None:
            raise job.error
        return job.value

    def _start(self) -> None:
        assert self._tg is not None
        self._threads += 1
        self._tg.start_soon(self._thread)

    async def _thread(self) -> None:
        with contextlib.suppress(anyio.get_cancelled_exc_class()):
            await anyio.to_thread.run_sync(
                self._work, abandon_on_cancel=True, limiter=self._limiter
            )

    # -- in the threads ------------------------------------------------------------------

    def _work(self) -> None:
        get = self._jobs.get
        done = self._done
        while True:
            job = get()
            if job is _STOP:
                return
            try:
                job.value = job.ctx.run(job.fn, **job.kwargs)
            except BaseException as exc:  # handed to the caller, raised there
                job.error = exc
            done.append(job)
            del job
            if not self._pending:
                self._pending = True
                try:
                    self._notify(self._collect)
                except RuntimeError:  # the loop is closed: nobody waits any more
                    return

    # -- on the loop ---------------------------------------------------------------------

    def _collect(self) -> None:
        self._pending = False
        done = self._done
        while done:
            self._in_flight -= 1
            done.popleft().done.set()
