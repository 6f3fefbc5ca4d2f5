"""The driver's side of attempts: one ``Bridge`` per driver event loop (internal).

Why a bridge: a synchronous ``Client`` runs its own event loop in a thread, and dask's
scheduler pays for every ``update_graph`` message (it scans its task groups each time).
So the driver does not hop to the client's loop once per task: ``execute`` queues an
``Attempt``, and the first item queued schedules, after the driver's current loop pass,
one ``flush`` on the client's loop. It submits everything queued meanwhile with one
``Client.map`` per set of dask options (one ``update_graph``) and starts the gathers.
Each submitted future is followed by one coroutine on the client's loop, which waits for
its *state* (``Future.exception()``: nothing is gathered) and decides what a dead worker
means. The ends are queued back, and the first one wakes the driver once, after the
client loop's pass, through an anyio event-loop token (asyncio and trio alike), for all
the items ended meanwhile. Releases are batched too, but never wait for the driver.

An asynchronous ``Client`` living on the driver's own asyncio loop takes the same path,
with no thread in between.

Cancelling an item (``fail_fast``, an outer cancel scope) asks the client's loop to cancel
its dask future with ``Client.cancel``; the driver waits (shielded, briefly) for that.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import uuid
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, cast, final

import anyio
import anyio.lowlevel
from anyio import RunFinishedError
from dask.base import annotate
from distributed.scheduler import KilledWorker
from tornado.platform.asyncio import BaseAsyncIOLoop

from orchestra_dask._output import RemoteOutput
from orchestra_dask._started import Started, killed_note
from orchestra_dask._started import started as started_record
from orchestra_dask._worker import Body, run_body

if TYPE_CHECKING:
    from distributed import Client, Future

__all__ = ["Attempt", "Bridge"]

_CANCEL_GRACE: Final = 5.0  # seconds the driver waits, shielded, for a cancel to be sent


class _Item:
    """Something the driver waits for: its outcome or error, set on the client's loop."""

    __slots__ = ("cancelled", "done", "error", "future", "outcome")

    def __init__(self, future: Future[Any] | None) -> None:
        self.future: Any = future  # distributed's Future is untyped
        self.done = anyio.Event()
        self.outcome: Any = None
        self.error: BaseException | None = None
        self.cancelled = False


@final
class Attempt(_Item):
    """One attempt: what to submit, then its dask future."""

    __slots__ = ("annotations", "args", "body", "gather", "held", "options", "requeues", "task_id")

    def __init__(
        self,
        task_id: str,
        body: Body,
        args: dict[str, Any],
        held: dict[str, Future[Any]],
        options: dict[str, Any],
        annotations: dict[str, Any],
        *,
        gather: bool,
        requeues: int,
    ) -> None:
        super().__init__(None)
        self.task_id = task_id
        self.body = body
        self.args = args
        self.held = held  # futures the body holds: dask resolves them on the worker
        self.options = options
        self.annotations = annotations
        self.gather = gather  # bring the output to the driver (a task run by an agent)
        self.requeues = requeues


@final
class Bridge:
    """Batches one driver loop's attempts, fetches and releases onto the client's loop.

    Args:
        client: the executor's client.
    """

    __slots__ = (
        "backend",
        "client",
        "count",
        "driver_soon",
        "ended",
        "flush_due",
        "loop",
        "native",
        "pending",
        "prefix",
        "release_due",
        "releases",
        "token",
        "wake_due",
    )

    def __init__(self, client: Client) -> None:
        self.client = client
        self.loop = client_loop(client)
        self.token = anyio.lowlevel.current_token()
        self.native = self.token.native_token  # which driver loop this bridge serves
        self.driver_soon: Callable[[Callable[[], object]], object]
        try:
            self.driver_soon = asyncio.get_running_loop().call_soon
            self.backend = "asyncio"
        except RuntimeError:
            self.driver_soon = self.to_driver
            self.backend = "trio"
        # Keys "{task id}-{32 hex digits}": a random half per bridge, a counter.
        self.prefix = uuid.uuid4().hex[:16]
        self.count = itertools.count()
        self.pending: deque[_Item] = deque()  # driver -> client loop
        self.releases: deque[Any] = deque()  # distributed's Future is untyped
        self.release_due = False
        self.flush_due = False
        self.ended: deque[_Item] = deque()  # client loop -> driver
        self.wake_due = False

    # -- on the driver's loop ----------------------------------------------------------

    async def run(self, attempt: Attempt) -> Any:
        """Submit ``attempt``; its ``RemoteOutput`` (or gathered value), or its error."""
        return await self._wait(attempt)

    async def fetch(self, future: Future[Any]) -> Any:
        """Gather one future's value to the driver."""
        return await self._wait(_Item(future))

    def release(self, future: Future[Any]) -> None:
        """Let the cluster forget ``future`` (soon, with the others released meanwhile).

        Not deferred to the driver's next loop pass, as submissions are: the releases at
        the end of a run must not wait for a loop that is closing.
        """
        self.releases.append(future)
        if not self.release_due:
            self.release_due = True
            try:
                self.loop.call_soon_threadsafe(self._release)
            except RuntimeError:  # the client's loop is closed: nothing to release
                self.release_due = False
                self.releases.clear()

    async def _wait(self, item: _Item) -> Any:
        self.pending.append(item)
        self._flush_soon()
        try:
            await item.done.wait()
        except BaseException:
            # Cancelled (or interrupted): cancel the item on the client's loop and give
            # that (Client.cancel) a moment before the cancellation propagates.
            try:
                self.loop.call_soon_threadsafe(self._cancel, item)
            except RuntimeError:  # the client's loop is closed
                pass
            else:
                with anyio.move_on_after(_CANCEL_GRACE, shield=True):
                    await item.done.wait()
            raise
        error = item.error
        if error is None:
            return item.outcome
        item.error = None
        if isinstance(error, asyncio.CancelledError):  # the client's loop stopped it
            raise RuntimeError(f"{self.client!r} stopped waiting for a dask future") from error
        raise error

    def _flush_soon(self) -> None:
        # After the driver's current loop pass: the tasks it started submit together.
        if not self.flush_due:
            self.flush_due = True
            self.driver_soon(self._hop)

    def _hop(self) -> None:
        try:
            self.loop.call_soon_threadsafe(self._flush)
        except RuntimeError as exc:  # the client's loop is closed
            self.flush_due = False
            pending = self.pending
            while pending:
                item = pending.popleft()
                item.error = RuntimeError(f"{self.client!r}: its event loop is closed")
                item.error.__cause__ = exc
                item.done.set()

    def to_driver(self, fn: Callable[[], object]) -> None:
        """Call ``fn`` on the driver's loop soon (from any thread)."""
        with contextlib.suppress(RunFinishedError):  # the driver's loop is gone
            self.token.backend_class.run_sync_soon(fn, (), self.native)

    def _wake(self) -> None:
        self.wake_due = False
        ended = self.ended
        while ended:
            ended.popleft().done.set()

    # -- on the client's loop ----------------------------------------------------------

    def _release(self) -> None:
        self.release_due = False
        releases = self.releases
        while releases:
            releases.popleft().release()

    def _flush(self) -> None:
        self.flush_due = False
        pending = self.pending
        attempts: list[Attempt] = []
        while pending:
            item = pending.popleft()
            if item.cancelled:
                continue
            if type(item) is Attempt:
                attempts.append(item)
            else:
                self.loop.create_task(self._fetch(item))
        if attempts:
            try:
                self._submit(attempts)
            except Exception as exc:  # say, the client is closing: nobody waits forever
                for attempt in attempts:
                    if attempt.future is None:
                        self._end_with(attempt, exc)

    def _submit(self, attempts: list[Attempt]) -> None:
        """Submit ``attempts``: one ``Client.map`` per set of options and annotations."""
        groups: list[list[Attempt]] = []
        for attempt in attempts:
            for group in groups:
                first = group[0]
                if first.options == attempt.options and first.annotations == attempt.annotations:
                    group.append(attempt)
                    break
            else:
                groups.append([attempt])
        started = started_record(self.client)
        for group in groups:
            try:
                futures = self._map(group)
            except Exception as exc:  # say, a body that cannot be pickled: each on its own
                if len(group) == 1:
                    self._end_with(group[0], exc)
                    continue
                futures = [None] * len(group)
            for attempt, future in zip(group, futures, strict=True):
                if future is None:
                    try:
                        (future,) = self._map([attempt])
                    except Exception as exc:
                        self._end_with(attempt, exc)
                        continue
                attempt.future = future
                started.pending.add(future.key)
                self.loop.create_task(self._follow(attempt, started))

    def _map(self, attempts: list[Attempt]) -> list[Any]:
        """Submit ``attempts`` (same options) in one message to the scheduler."""
        first = attempts[0]
        keys = [f"{a.task_id}-{self.prefix}{next(self.count):016x}" for a in attempts]
        with annotate(**first.annotations) if first.annotations else contextlib.nullcontext():
            return self.client.map(
                run_body,
                [a.body for a in attempts],
                keys,
                [a.args for a in attempts],
                [a.held for a in attempts],
                key=keys,
                pure=False,
                **first.options,
            )

    def _end_with(self, item: _Item, error: BaseException) -> None:
        item.error = error
        self._ended(item)

    def _ended(self, item: _Item) -> None:
        self.ended.append(item)
        if not self.wake_due:
            self.wake_due = True
            # After this loop pass: the futures that ended together wake the driver once.
            self.loop.call_soon(self.to_driver, self._wake)

    def _cancel(self, item: _Item) -> None:
        item.cancelled = True
        future = item.future
        if type(item) is not Attempt or future is None:
            self._ended(item)  # not submitted (it never will be), or a fetch
        elif not future.done():
            self.loop.create_task(self._cancel_future(future))

    async def _cancel_future(self, future: Any) -> None:
        with contextlib.suppress(Exception):  # the client is closing: it cancels them all
            await self.client.cancel([future], asynchronous=True)  # type: ignore[no-untyped-call]

    async def _fetch(self, item: _Item) -> None:
        try:
            item.outcome = await item.future
        except BaseException as exc:
            item.error = exc
        finally:
            self._ended(item)

    async def _follow(self, attempt: Attempt, started: Started) -> None:
        try:
            attempt.outcome = await self._settle(attempt, started)
            outcome = attempt.outcome
            if attempt.cancelled and type(outcome) is RemoteOutput:
                cast(Any, outcome.future).release()  # nobody waits for it any more
        except BaseException as exc:
            attempt.error = exc
        finally:
            self._ended(attempt)

    async def _settle(self, attempt: Attempt, started: Started) -> Any:
        """Wait for the attempt's state; submit it again if its worker died before it began."""
        requeued = 0
        while True:
            future = attempt.future
            key = str(future.key)
            try:
                error = await future.exception()  # waits, gathers nothing
            finally:
                ran = started.end(key)
            status = future.status
            if status == "finished":
                if attempt.gather:
                    return await future
                return RemoteOutput(attempt.task_id, future)
            if status != "error":  # cancelled (by us or someone else), or lost
                future.release()
                raise RuntimeError(f"dask future {key!r} ended {status!r}")
            requeue = not ran and requeued < attempt.requeues and not attempt.cancelled
            if isinstance(error, KilledWorker) and requeue:
                requeued += 1  # merely queued on the worker that died: again, uncounted
                future.release()
                (attempt.future,) = self._map([attempt])
                started.pending.add(attempt.future.key)
                continue
            traceback = await future.traceback()
            future.release()
            if isinstance(error, KilledWorker):
                error.add_note(killed_note(error, attempt.task_id, ran, requeued))
            raise error.with_traceback(traceback)


def client_loop(client: Client) -> asyncio.AbstractEventLoop:
    """The asyncio loop ``client`` runs on."""
    loop = client.loop
    if not isinstance(loop, BaseAsyncIOLoop):  # tornado >= 5 loops all are
        raise RuntimeError(f"{client!r} has no asyncio event loop (is it closed?)")
    return loop.asyncio_loop
