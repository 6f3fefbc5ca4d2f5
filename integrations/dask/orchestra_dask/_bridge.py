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

from orchestra_dask._attempt import Attempt, Item, client_loop
from orchestra_dask._chain import adopt, ahead, drop, same_inputs, unlink
from orchestra_dask._output import RemoteOutput
from orchestra_dask._started import Started, killed_note
from orchestra_dask._started import started as started_record
from orchestra_dask._worker import run_body

if TYPE_CHECKING:
    from distributed import Client, Future


__all__ = ["Attempt", "Bridge", "client_loop"]

_CANCEL_GRACE: Final = 5.0  # seconds the driver waits, shielded, for a cancel to be sent


@final
class Bridge:
    """Batches one driver loop's attempts, fetches and releases onto the client's loop.

    Args:
        client: the executor's client.
    """

    __slots__ = (
        "backend",
        "client",
        "consumers",
        "count",
        "driver_soon",
        "ended",
        "flush_due",
        "linked",
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
        self.pending: deque[Item] = deque()  # driver -> client loop
        self.releases: deque[Any] = deque()  # distributed's Future is untyped
        self.release_due = False
        self.flush_due = False
        self.ended: deque[Item] = deque()  # client loop -> driver
        self.wake_due = False
        # Chained runs (on the client's loop): future key -> its attempt or spec, and ->
        # the specs submitted with that future as an input.
        self.linked: dict[str, Attempt] = {}
        self.consumers: dict[str, list[Attempt]] = {}

    # -- on the driver's loop ----------------------------------------------------------

    async def run(self, attempt: Attempt) -> Any:
        """Submit ``attempt``; its ``RemoteOutput`` (or gathered value), or its error."""
        return await self._wait(attempt)

    async def fetch(self, future: Future[Any]) -> Any:
        """Gather one future's value to the driver."""
        return await self._wait(Item(future))

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

    async def _wait(self, item: Item) -> Any:
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
        linked = self.linked
        while releases:
            future = releases.popleft()
            if linked:
                unlink(self, future)
            future.release()

    def _flush(self) -> None:
        self.flush_due = False
        pending = self.pending
        attempts: list[Attempt] = []
        while pending:
            item = pending.popleft()
            if item.cancelled:
                if type(item) is Attempt and item.chain is not None:
                    item.chain.started.add(item.task_id)  # never submitted ahead now
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
        """Submit ``attempts`` (adopting specs), then the chained dependents they make ready."""
        started = started_record(self.client)
        fresh: list[Attempt] = []
        for attempt in attempts:
            chain = attempt.chain
            if chain is not None:
                chain.started.add(attempt.task_id)
                spec = chain.specs.pop(attempt.task_id, None)
                if spec is not None:
                    if same_inputs(spec, attempt):
                        adopt(self, spec, attempt, started)
                        continue
                    drop(self, spec, started)
                if attempt.body is None:
                    try:
                        attempt.prepare(self)
                    except Exception as exc:  # say, bad metadata["dask"]
                        self._end_with(attempt, exc)
                        continue
            fresh.append(attempt)
        chained: list[Attempt] = []
        for attempt, error in self.submitted(fresh, started):
            if error is not None:
                self._end_with(attempt, error)
                continue
            self.loop.create_task(self.follow(attempt, started))
            if attempt.chain is not None:
                chained.append(attempt)
        if chained:
            ahead(self, chained, started)

    def submitted(
        self, attempts: list[Attempt], started: Started
    ) -> list[tuple[Attempt, BaseException | None]]:
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
        done: list[tuple[Attempt, BaseException | None]] = []
        for group in groups:
            try:
                futures = self._map(group)
            except Exception as exc:  # say, a body that cannot be pickled: each on its own
                if len(group) == 1:
                    done.append((group[0], exc))
                    continue
                futures = [None] * len(group)
            for attempt, future in zip(group, futures, strict=True):
                if future is None:
                    try:
                        (future,) = self._map([attempt])
                    except Exception as exc:
                        done.append((attempt, exc))
                        continue
                attempt.future = future
                started.pending.add(future.key)
                done.append((attempt, None))
        return done

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

    def _end_with(self, item: Item, error: BaseException) -> None:
        item.error = error
        self._ended(item)

    def _ended(self, item: Item) -> None:
        self.ended.append(item)
        if not self.wake_due:
            self.wake_due = True
            # After this loop pass: the futures that ended together wake the driver once.
            self.loop.call_soon(self.to_driver, self._wake)

    def _cancel(self, item: Item) -> None:
        item.cancelled = True
        future = item.future
        if type(item) is not Attempt or future is None:
            self._ended(item)  # not submitted (it never will be), or a fetch
        elif not future.done():
            self.loop.create_task(self._cancel_future(future))

    async def _cancel_future(self, future: Any) -> None:
        with contextlib.suppress(Exception):  # the client is closing: it cancels them all
            await self.client.cancel([future], asynchronous=True)  # type: ignore[no-untyped-call]

    async def _fetch(self, item: Item) -> None:
        try:
            item.outcome = await item.future
        except BaseException as exc:
            item.error = exc
        finally:
            self._ended(item)

    async def follow(self, attempt: Attempt, started: Started) -> None:
        try:
            attempt.outcome = await self._settle(attempt, started)
            outcome = attempt.outcome
            if attempt.cancelled and type(outcome) is RemoteOutput:
                if self.linked:
                    unlink(self, outcome.future)
                cast(Any, outcome.future).release()  # nobody waits for it any more
        except BaseException as exc:
            attempt.error = exc
            if attempt.chain is not None and attempt.future is not None:
                unlink(self, attempt.future)  # the specs that use it will never run
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
                if self.linked:
                    unlink(self, future)
                future.release()
                (attempt.future,) = self._map([attempt])
                started.pending.add(attempt.future.key)
                if attempt.chain is not None:
                    ahead(self, [attempt], started)
                continue
            traceback = await future.traceback()
            future.release()
            if isinstance(error, KilledWorker):
                error.add_note(killed_note(error, attempt.task_id, ran, requeued))
            raise error.with_traceback(traceback)
