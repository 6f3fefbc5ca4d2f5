"""The thread pool that runs sync task bodies off the event loop (internal).

Measured against ``anyio.to_thread.run_sync`` and a ``concurrent.futures`` pool (see
``bench/scheduler.py``): what costs is the hand-off back to the loop, a thread-safe
wake-up per body. Here a thread that finishes a body appends the outcome to a deque and
wakes the loop only when no wake-up is already pending, so the loop collects every
outcome that arrived meanwhile in one callback. Bodies go to the threads through one
``queue.SimpleQueue``; a thread is started only when more bodies are in flight than
threads exist, up to ``max_threads``. The pool belongs to one run, which closes it.

Each body runs in a copy of its caller's context (as ``anyio.to_thread`` does), and in
a thread where ``anyio.from_thread`` reaches the loop. A cancelled caller abandons its
body: the thread finishes it on its own and the outcome is dropped.
"""

from __future__ import annotations

import contextvars
import queue
import sys
import threading
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, final

import anyio.lowlevel

if TYPE_CHECKING:
    import asyncio

__all__ = ["ThreadPool"]

try:  # anyio's thread-local that anyio.from_thread reads (anyio >= 4.11); else left unset
    from anyio._core._eventloop import threadlocals as _anyio_threadlocals

    _current_token: Callable[[], object] | None = anyio.lowlevel.current_token
except (ImportError, AttributeError):  # pragma: no cover - older anyio
    _anyio_threadlocals = None  # type: ignore[assignment]
    _current_token = None


def _on_trio() -> bool:
    """Whether the running event loop is trio's (asked of trio itself: no sniffio)."""
    trio = sys.modules.get("trio")  # not imported = not running
    if trio is None:
        return False
    try:
        trio.lowlevel.current_trio_token()
    except RuntimeError:
        return False
    return True


def _claim_for_trio(token: object) -> None:
    """Let ``trio.from_thread`` (which anyio's uses) find the loop from this thread."""
    native = getattr(token, "native_token", None)
    try:
        from trio._threads import PARENT_TASK_DATA
    except ImportError:  # pragma: no cover - another trio: from_thread needs a token
        return
    if native is not None:
        PARENT_TASK_DATA.token = native
        PARENT_TASK_DATA.abandon_on_cancel = True  # run calls in trio's system nursery


# One job: the context, the function and its keyword arguments, and the waiter (an
# asyncio future, or a one-item list holding the trio task; None once abandoned).
_Job = tuple[contextvars.Context, Callable[..., Any], dict[str, Any], Any]
_STOP: Final = None


@final
class ThreadPool:
    """Threads for sync bodies, bound to the event loop that created it (internal)."""

    __slots__ = (
        "anyio_token",
        "done",
        "in_flight",
        "jobs",
        "loop",
        "max_threads",
        "notify",
        "pending",
        "resume",
        "threads",
        "trio",
    )

    def __init__(self, max_threads: int) -> None:
        """Create a pool for the running event loop (call it on the loop)."""
        self.max_threads = max_threads
        self.jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self.done: deque[tuple[Any, bool, Any]] = deque()
        self.pending = False  # a wake-up of the loop is scheduled and not yet run
        self.threads = 0
        self.in_flight = 0  # bodies submitted whose outcome the loop has not collected
        self.anyio_token = _current_token() if _current_token is not None else None
        self.trio = _on_trio()
        self.resume: Callable[[Any, bool, Any], None] | None = None
        if self.trio:
            import outcome
            import trio

            def resume(waiter: list[Any], ok: bool, value: Any) -> None:
                task = waiter[0]
                if task is not None:
                    result = outcome.Value(value) if ok else outcome.Error(value)
                    trio.lowlevel.reschedule(task, result)

            self.resume = resume
            self.loop: asyncio.AbstractEventLoop | None = None
            self.notify: Callable[[Callable[[], None]], object] = (
                trio.lowlevel.current_trio_token().run_sync_soon
            )
        else:
            import asyncio  # loaded: its loop runs this

            self.loop = asyncio.get_running_loop()
            self.notify = self.loop.call_soon_threadsafe

    async def run(self, fn: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
        """Run ``fn(**kwargs)`` in a thread and return its result (or raise its error)."""
        ctx = contextvars.copy_context()
        if self.trio:
            return await self._run_trio(ctx, fn, kwargs)
        assert self.loop is not None
        future = self.loop.create_future()
        self._submit((ctx, fn, kwargs, future))
        return await future

    async def _run_trio(
        self, ctx: contextvars.Context, fn: Callable[..., Any], kwargs: dict[str, Any]
    ) -> Any:
        import trio

        waiter: list[Any] = [trio.lowlevel.current_task()]
        self._submit((ctx, fn, kwargs, waiter))

        def abort(_: Any) -> trio.lowlevel.Abort:
            waiter[0] = None  # the thread's outcome is dropped
            return trio.lowlevel.Abort.SUCCEEDED

        return await trio.lowlevel.wait_task_rescheduled(abort)

    def _submit(self, job: _Job) -> None:
        self.jobs.put(job)
        self.in_flight += 1
        if self.in_flight > self.threads and self.threads < self.max_threads:
            self.threads += 1
            threading.Thread(target=self._work, name="orchestra worker", daemon=True).start()

    def close(self) -> None:
        """Let every thread end once the bodies queued before this call are done."""
        for _ in range(self.threads):
            self.jobs.put(_STOP)
        self.threads = 0

    # -- in the threads ------------------------------------------------------------------

    def _work(self) -> None:
        if _anyio_threadlocals is not None and self.anyio_token is not None:
            _anyio_threadlocals.current_token = self.anyio_token
        if self.trio:
            _claim_for_trio(self.anyio_token)
        get = self.jobs.get
        done = self.done
        while True:
            job = get()
            if job is _STOP:
                return
            ctx, fn, kwargs, waiter = job
            try:
                outcome: tuple[Any, bool, Any] = (waiter, True, ctx.run(fn, **kwargs))
            except BaseException as exc:  # handed to the caller, re-raised there
                outcome = (waiter, False, exc)
            del job, ctx, fn, kwargs, waiter
            done.append(outcome)
            del outcome
            if not self.pending:
                self.pending = True
                try:
                    self.notify(self._collect)
                except RuntimeError:  # the loop is closed: nobody waits any more
                    return

    # -- on the loop ---------------------------------------------------------------------

    def _collect(self) -> None:
        self.pending = False
        done = self.done
        resume = self.resume
        while done:
            waiter, ok, value = done.popleft()
            self.in_flight -= 1
            if resume is not None:
                resume(waiter, ok, value)
            elif not waiter.done():
                if ok:
                    waiter.set_result(value)
                else:
                    waiter.set_exception(value)
