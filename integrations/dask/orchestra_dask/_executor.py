"""``DaskExecutor``: the scheduler's executor seam, backed by a dask.distributed ``Client``.

How one attempt runs: ``execute`` (in the driver, inside the task attempt) captures the
OpenTelemetry context into a W3C carrier, then runs one coroutine on the *client's* event
loop that submits ``_run_body`` under a fresh key and awaits the dask future there.
Nothing blocks the driver's loop and no thread is parked per task:

- a ``Client`` made the usual way (``Client(cluster)``) runs its own loop in a thread; the
  coroutine goes there with ``asyncio.run_coroutine_threadsafe`` and its completion wakes
  the driver through an anyio event-loop token, on asyncio and on trio alike;
- an asynchronous ``Client`` living on the driver's own asyncio loop is awaited directly.

Cancelling the attempt (timeout, ``fail_fast``, an outer cancel scope) cancels that
coroutine, which cancels the dask future with ``Client.cancel`` before it ends; the driver
waits (shielded, briefly) for that to be sent. Every attempt has its own key, so a
``Retry`` resubmits instead of getting dask's cached failure back.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Callable, Coroutine, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any, Final, TypeVar, cast, final

import anyio
import anyio.lowlevel
from anyio import RunFinishedError
from opentelemetry import context as otel_context
from opentelemetry import propagate
from tornado.platform.asyncio import BaseAsyncIOLoop

if TYPE_CHECKING:
    from distributed import Client

    from orchestra.dag import Task

__all__ = ["SUBMIT_OPTIONS", "DaskExecutor"]

_T = TypeVar("_T")

SUBMIT_OPTIONS: Final = frozenset({"workers", "resources", "priority", "allow_other_workers"})
"""The ``Client.submit`` options a task may set in ``task.metadata["dask"]``."""

_CANCEL_GRACE: Final = 5.0  # seconds the driver waits, shielded, for a cancel to be sent
_BACKENDS: Final = frozenset({"asyncio", "trio"})


@final
class DaskExecutor:
    """Runs task bodies on a dask.distributed cluster.

    The scheduler, ``TaskHooks``, YAML hooks and decisions stay in the driver; each task
    attempt becomes one dask task under a key of its own (``"{task id}-{uuid}"``), so the
    dashboard groups attempts by task id and a ``Retry`` really runs the body again.

    Sync bodies run in the workers' thread pools; async bodies run to completion with
    ``anyio.run`` in a worker thread, on ``async_backend`` (by default the backend the
    driver runs on, so an ``async def`` body behaves as it would locally). The body, its
    keyword arguments (upstream outputs) and its result travel with dask's serialization
    (cloudpickle), so they must be picklable. The driver's OpenTelemetry context is
    attached on the worker while the body runs, so spans the body (or its libraries)
    start there continue the run's trace when the worker has a tracer provider.

    A task may pass options to ``Client.submit`` through ``task.metadata["dask"]``: a
    mapping with any of ``workers``, ``resources``, ``priority`` and
    ``allow_other_workers`` (``SUBMIT_OPTIONS``).

    Args:
        client: a connected ``distributed.Client``, synchronous (the usual kind: it runs
            its own event loop in a thread) or asynchronous (``Client(...,
            asynchronous=True)``, created on the driver's asyncio loop). It is not closed
            by the executor.
        async_backend: ``"asyncio"`` or ``"trio"`` for ``async def`` bodies on the workers;
            None (default) uses the driver's backend.
    """

    __slots__ = ("async_backend", "client")

    def __init__(self, client: Client, *, async_backend: str | None = None) -> None:
        if async_backend is not None and async_backend not in _BACKENDS:
            raise ValueError(
                f"async_backend must be None, 'asyncio' or 'trio', got {async_backend!r}"
            )
        self.client = client
        self.async_backend = async_backend

    def __repr__(self) -> str:
        return f"DaskExecutor({self.client!r})"

    async def execute(self, task: Task, kwargs: dict[str, Any]) -> Any:
        """Run ``task.fn(**kwargs)`` on the cluster and return its result (or raise its error)."""
        options = _submit_options(task)
        carrier: dict[str, str] = {}
        propagate.inject(carrier)
        try:
            driver_loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:  # trio
            driver_loop = None
        backend = None
        if task.is_async:
            backend = self.async_backend or ("asyncio" if driver_loop is not None else "trio")
        key = f"{task.id}-{uuid.uuid4().hex}"
        client_loop = _client_loop(self.client)
        if client_loop is driver_loop:
            # An asynchronous Client on the driver's own loop: await it here.
            return await _attempt(
                self.client, key, options, task.fn, kwargs, carrier, backend, None
            )
        return await _run_on_loop(
            client_loop,
            partial(_attempt, self.client, key, options, task.fn, kwargs, carrier, backend),
        )


def _client_loop(client: Client) -> asyncio.AbstractEventLoop:
    loop = client.loop
    if not isinstance(loop, BaseAsyncIOLoop):  # tornado >= 5 loops all are
        raise RuntimeError(f"{client!r} has no asyncio event loop (is it closed?)")
    return loop.asyncio_loop


def _submit_options(task: Task) -> dict[str, Any]:
    options = task.metadata.get("dask")
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise TypeError(
            f"task {task.id!r}: metadata['dask'] must be a mapping of Client.submit "
            f"options, got {options!r}"
        )
    unknown = set(options) - SUBMIT_OPTIONS
    if unknown:
        raise ValueError(
            f"task {task.id!r}: unknown option(s) in metadata['dask']: "
            f"{', '.join(sorted(map(str, unknown)))}; allowed: {', '.join(sorted(SUBMIT_OPTIONS))}"
        )
    return dict(options)


async def _attempt(
    client: Client,
    key: str,
    options: dict[str, Any],
    fn: Callable[..., Any],
    kwargs: dict[str, Any],
    carrier: dict[str, str],
    backend: str | None,
    started: list[asyncio.Task[Any]] | None,
) -> Any:
    """Submit one attempt and await it; runs on the client's event loop."""
    if started is not None:
        current = asyncio.current_task()
        assert current is not None
        started.append(current)
    future: Any = client.submit(  # distributed.Future's methods are untyped
        _run_body, fn, kwargs, carrier, backend, key=key, pure=False, **options
    )
    try:
        return await future
    except asyncio.CancelledError:
        if not future.done():
            await cast(Any, client).cancel([future], asynchronous=True)  # untyped
        raise
    finally:
        # Let the cluster forget the key now, even while an error's traceback (kept in
        # the RunResult) still references this frame.
        future.release()


async def _run_on_loop(
    loop: asyncio.AbstractEventLoop,
    make: Callable[[list[asyncio.Task[Any]]], Coroutine[Any, Any, _T]],
) -> _T:
    """Run ``make(started)`` on another thread's asyncio ``loop``; await it from any backend.

    The coroutine appends its asyncio task to ``started`` when it begins, so a
    cancellation here can cancel it on its own loop (where its cleanup runs) and wait,
    shielded and briefly, for that cleanup to finish.
    """
    token = anyio.lowlevel.current_token()
    done = anyio.Event()

    def wake(_: object) -> None:
        with contextlib.suppress(RunFinishedError):  # the driver's loop is gone
            token.backend_class.run_sync_soon(done.set, (), token.native_token)

    started: list[asyncio.Task[Any]] = []
    handle = asyncio.run_coroutine_threadsafe(make(started), loop)
    handle.add_done_callback(wake)
    try:
        await done.wait()
    except BaseException:
        # Cancelled (or interrupted): cancel the coroutine on its own loop and give its
        # cleanup (Client.cancel) a moment to run before the cancellation propagates.
        def cancel() -> None:
            if started:
                started[0].cancel()
            else:  # not begun yet: it never will, and never submits
                handle.cancel()

        try:
            loop.call_soon_threadsafe(cancel)
        except RuntimeError:  # the client's loop is closed
            handle.cancel()
        else:
            with anyio.move_on_after(_CANCEL_GRACE, shield=True):
                await done.wait()
        raise
    return handle.result()


def _run_body(
    fn: Callable[..., Any],
    kwargs: dict[str, Any],
    carrier: dict[str, str],
    backend: str | None,
) -> Any:
    """Run one task body on a worker, in the driver's trace context."""
    token = otel_context.attach(propagate.extract(carrier)) if carrier else None
    try:
        if backend is None:
            return fn(**kwargs)
        return anyio.run(partial(fn, **kwargs), backend=backend)
    finally:
        if token is not None:
            otel_context.detach(token)
