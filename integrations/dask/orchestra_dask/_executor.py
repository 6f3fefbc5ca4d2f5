"""``DaskExecutor``: the scheduler's executor seam, backed by a dask.distributed ``Client``.

How one attempt runs: ``execute`` (in the driver, inside the task attempt) captures the
OpenTelemetry context into a W3C carrier and pickles the body, then runs one coroutine on
the *client's* event loop that submits ``_run_body`` under a fresh key and waits for the
dask future's *state* (``Future.exception()``: nothing is gathered). The upstream outputs
are ``RemoteOutput`` handles around dask futures: they go into the submission as futures,
so dask moves the data between workers and the driver never sees it. Nothing blocks the
driver's loop and no thread is parked per task:

- a ``Client`` made the usual way (``Client(cluster)``) runs its own loop in a thread; the
  coroutine goes there with ``asyncio.run_coroutine_threadsafe`` and its completion wakes
  the driver through an anyio event-loop token, on asyncio and on trio alike;
- an asynchronous ``Client`` living on the driver's own asyncio loop is awaited directly.

On the worker, ``_run_body`` first logs the attempt's key on the ``_STARTED_TOPIC`` event
topic, to which the driver's client is subscribed: when a worker dies, a ``KilledWorker``
for a key that never started means the task was merely queued there, and the attempt is
submitted again without counting. It then applies ``task.timeout`` to the body's own
running time (``anyio.fail_after`` for async bodies; a sync body runs in a thread of its
own that the wrapper stops waiting for).

Cancelling the attempt (``fail_fast``, an outer cancel scope) cancels that coroutine,
which cancels the dask future with ``Client.cancel`` before it ends; the driver waits
(shielded, briefly) for that to be sent.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import threading
import uuid
import weakref
from collections.abc import Callable, Collection, Coroutine, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any, Final, Literal, TypeVar, cast, final

import anyio
import anyio.lowlevel
import cloudpickle  # type: ignore[import-untyped]  # ships no type information
from anyio import RunFinishedError
from dask.base import annotate, get_annotations
from distributed import Future, get_worker
from distributed.scheduler import KilledWorker
from opentelemetry import context as otel_context
from opentelemetry import propagate
from tornado.platform.asyncio import BaseAsyncIOLoop

if TYPE_CHECKING:
    from distributed import Client

    from orchestra import Task

__all__ = ["SUBMIT_OPTIONS", "DaskExecutor", "RemoteOutput"]

_T = TypeVar("_T")

SUBMIT_OPTIONS: Final = frozenset(
    {"workers", "resources", "priority", "allow_other_workers", "annotations"}
)
"""The dask options a task may set in ``task.metadata["dask"]`` (or ``DaskExecutor(options=)``)."""

_STARTED_TOPIC: Final = "orchestra-dask-started"  # workers log each started attempt's key

_CANCEL_GRACE: Final = 5.0  # seconds the driver waits, shielded, for a cancel to be sent
_BACKENDS: Final = frozenset({"asyncio", "trio"})
_RETRIES_REFUSED: Final = (
    "dask's retries= is refused: orchestra decides retries (the task's retries=, or an "
    "on_failure hook answering Retry), so that every attempt passes through the hooks"
)


@final
class RemoteOutput:
    """A task's output, kept on the cluster as a dask future.

    What dependents receive (as the future, resolved to the value on the worker), what
    ``after_execute`` hooks that set ``needs_outputs = False`` see, and never what
    ``RunResult.outputs`` holds (the executor fetches the kept outputs when the run ends).

    Attributes:
        task_id: the task that computed it.
        future: the ``distributed.Future`` holding it; released once no dependent needs it.
    """

    __slots__ = ("future", "task_id")

    def __init__(self, task_id: str, future: Future[Any]) -> None:
        self.task_id = task_id
        self.future = future

    @property
    def key(self) -> str:
        """The dask key of the attempt that computed it: ``"{task id}-{uuid}"``."""
        return str(self.future.key)

    def __repr__(self) -> str:
        kind = self.future.type
        of = f" type={kind.__name__}" if isinstance(kind, type) else ""
        return f"<RemoteOutput task={self.task_id!r} key={self.key!r}{of}>"


@final
class DaskExecutor:
    """Runs task bodies on a dask.distributed cluster; their outputs stay there.

    The scheduler, ``TaskHooks``, YAML hooks and decisions stay in the driver; each task
    attempt becomes one dask task under a key of its own (``"{task id}-{uuid}"``), so the
    dashboard groups attempts by task id and a ``Retry`` really runs the body again.

    Outputs stay on the workers: a task gets its upstream outputs as dask futures, which
    dask resolves on the worker that runs it. The driver learns only each attempt's state
    (and, on failure, the exception); it fetches an output when ``after_execute`` hooks
    need it (unless they set ``needs_outputs = False``) and, when the run ends, for the
    outputs ``RunResult.outputs`` keeps (``outputs=``). An output is released as soon as
    every task that uses it has ended. A task run by an agent (``agent=``) returns its
    text to the driver, where the dispatch happens.

    ``task.timeout`` is the body's running time on the worker, not time spent waiting in
    dask's queues: an ``async def`` body is cancelled there; a sync body runs in a thread
    of its own that the worker stops waiting for (Python cannot stop a running thread: it
    finishes in the background and its result is dropped). Either way the attempt fails
    with ``TimeoutError``.

    When a worker dies, the tasks whose body was running there fail with dask's
    ``KilledWorker`` (once ``distributed.scheduler.allowed-failures`` is spent) and
    ``on_failure`` decides; the tasks merely queued on that worker are submitted again,
    up to ``requeues`` times, without counting an attempt.

    Sync bodies run in the workers' thread pools; async bodies run to completion with
    ``anyio.run`` in a worker thread, on ``async_backend`` (by default the backend the
    driver runs on). Bodies, the values they return and the inputs that do not come from
    the cluster travel with dask's serialization (cloudpickle). A body may close over
    dask futures (scattered data), have them as defaults or as ``functools.partial``
    arguments: dask delivers their data with the task, and on the worker each is a
    ``Resolved`` whose ``result()`` returns it. The driver's OpenTelemetry context is
    attached on the worker while the body runs.

    Args:
        client: a connected ``distributed.Client``, synchronous (the usual kind: it runs
            its own event loop in a thread) or asynchronous (``Client(...,
            asynchronous=True)``, created on the driver's asyncio loop). It is not closed
            by the executor.
        outputs: which outputs ``RunResult.outputs`` holds: ``"leaves"`` (default: the
            tasks no other task depends on), ``"all"``, or a collection of task ids.
        options: dask options for every task (``SUBMIT_OPTIONS``: ``workers``,
            ``resources``, ``priority``, ``allow_other_workers``, ``annotations``); a
            task's ``metadata["dask"]`` adds to them and wins. ``retries`` is refused.
        async_backend: ``"asyncio"`` or ``"trio"`` for ``async def`` bodies on the workers;
            None (default) uses the driver's backend.
        requeues: how many times an attempt merely queued on a worker that died is
            submitted again before its ``KilledWorker`` counts as a failure.

    Raises:
        ValueError: for an unknown ``outputs`` or ``async_backend``, a negative
            ``requeues``, or options that are unknown or ``retries``.
    """

    __slots__ = ("async_backend", "client", "options", "outputs", "requeues")

    applies_timeouts: Final = True
    """``task.timeout`` is applied on the worker, to the body's running time."""

    def __init__(
        self,
        client: Client,
        *,
        outputs: Literal["leaves", "all"] | Collection[str] = "leaves",
        options: Mapping[str, Any] | None = None,
        async_backend: str | None = None,
        requeues: int = 3,
    ) -> None:
        if async_backend is not None and async_backend not in _BACKENDS:
            raise ValueError(
                f"async_backend must be None, 'asyncio' or 'trio', got {async_backend!r}"
            )
        if isinstance(outputs, str):
            if outputs not in ("leaves", "all"):
                raise ValueError(
                    f"outputs must be 'leaves', 'all' or a collection of task ids, got {outputs!r}"
                )
        else:
            outputs = frozenset(outputs)
        if not isinstance(requeues, int) or requeues < 0:
            raise ValueError(f"requeues must be an int >= 0, got {requeues!r}")
        self.client = client
        self.outputs: str | frozenset[str] = outputs
        self.options: dict[str, Any] = _checked_options(options or {}, "DaskExecutor(options=)")
        self.async_backend = async_backend
        self.requeues = requeues

    def __repr__(self) -> str:
        return f"DaskExecutor({self.client!r}, outputs={self.outputs!r})"

    async def execute(self, task: Task, kwargs: dict[str, Any]) -> Any:
        """Run ``task.fn(**kwargs)`` on the cluster; return a ``RemoteOutput`` (or raise)."""
        options = self._options(task)
        annotations = {**get_annotations(), **options.pop("annotations", {})}
        carrier: dict[str, str] = {}
        propagate.inject(carrier)
        try:
            driver_loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:  # trio
            driver_loop = None
        backend = None
        if task.is_async:
            backend = self.async_backend or ("asyncio" if driver_loop is not None else "trio")
        body = _Body(cloudpickle.dumps(task.fn), carrier, backend, task.timeout)
        args = {k: v.future if type(v) is RemoteOutput else v for k, v in kwargs.items()}
        submit = _Submission(
            self.client,
            task.id,
            body,
            args,
            options,
            annotations,
            task.agent is not None,
            _held_futures(task.fn),
        )
        return await self._on_client_loop(partial(_attempt, submit, self.requeues))

    async def fetch(self, task: Task, output: Any) -> Any:
        """Bring an output to the driver (gather its future); other values come back as they are."""
        if type(output) is not RemoteOutput:
            return output
        return await self._on_client_loop(partial(_gather, output.future))

    def release(self, task: Task, output: Any) -> None:
        """Let the cluster forget an output nobody needs any more."""
        if type(output) is RemoteOutput:
            cast(Any, output.future).release()  # distributed's Future is untyped

    def keeps_output(self, task: Task, *, leaf: bool) -> bool:
        """Whether ``RunResult.outputs`` holds this task's output (``outputs=``)."""
        if self.outputs == "leaves":
            return leaf
        if self.outputs == "all":
            return True
        return task.id in self.outputs

    def _options(self, task: Task) -> dict[str, Any]:
        given = task.metadata.get("dask")
        if given is None:
            return dict(self.options)
        if not isinstance(given, Mapping):
            raise TypeError(
                f"task {task.id!r}: metadata['dask'] must be a mapping of dask options, "
                f"got {given!r}"
            )
        return {**self.options, **_checked_options(given, f"task {task.id!r}: metadata['dask']")}

    async def _on_client_loop(
        self, make: Callable[[list[asyncio.Task[Any]]], Coroutine[Any, Any, _T]]
    ) -> _T:
        client_loop = _client_loop(self.client)
        try:
            driver_loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:  # trio
            driver_loop = None
        if client_loop is driver_loop:
            # An asynchronous Client on the driver's own loop: await it here.
            return await make([])
        return await _run_on_loop(client_loop, make)


def _checked_options(options: Mapping[str, Any], where: str) -> dict[str, Any]:
    if "retries" in options:
        raise ValueError(f"{where}: {_RETRIES_REFUSED}")
    unknown = set(options) - SUBMIT_OPTIONS
    if unknown:
        raise ValueError(
            f"{where}: unknown dask option(s) {', '.join(sorted(map(str, unknown)))}; "
            f"allowed: {', '.join(sorted(SUBMIT_OPTIONS))}"
        )
    annotations = options.get("annotations", {})
    if not isinstance(annotations, Mapping):
        raise TypeError(f"{where}: annotations must be a mapping, got {annotations!r}")
    if "retries" in annotations:
        raise ValueError(f"{where}: annotations: {_RETRIES_REFUSED}")
    return dict(options)


def _client_loop(client: Client) -> asyncio.AbstractEventLoop:
    loop = client.loop
    if not isinstance(loop, BaseAsyncIOLoop):  # tornado >= 5 loops all are
        raise RuntimeError(f"{client!r} has no asyncio event loop (is it closed?)")
    return loop.asyncio_loop


# -- the driver's side of an attempt (on the client's event loop) -------------------------


@final
class _Body:
    """What the worker needs to run one body (pickled once per attempt)."""

    __slots__ = ("backend", "carrier", "fn", "timeout")

    def __init__(
        self, fn: bytes, carrier: dict[str, str], backend: str | None, timeout: float | None
    ) -> None:
        self.fn = fn
        self.carrier = carrier
        self.backend = backend
        self.timeout = timeout


@final
class _Submission:
    __slots__ = ("annotations", "args", "body", "client", "gather", "held", "options", "task_id")

    def __init__(
        self,
        client: Client,
        task_id: str,
        body: _Body,
        args: dict[str, Any],
        options: dict[str, Any],
        annotations: dict[str, Any],
        gather: bool,
        held: dict[str, Future[Any]],
    ) -> None:
        self.held = held  # futures the body holds: dask resolves them on the worker
        self.client = client
        self.task_id = task_id
        self.body = body
        self.args = args
        self.options = options
        self.annotations = annotations
        self.gather = gather

    def submit(self) -> Future[Any]:
        key = f"{self.task_id}-{uuid.uuid4().hex}"
        with annotate(**self.annotations) if self.annotations else contextlib.nullcontext():
            return self.client.submit(
                _run_body,
                self.body,
                key,
                self.args,
                self.held,
                key=key,
                pure=False,
                **self.options,
            )


@final
class _Started:
    """The keys of this client's in-flight attempts whose body started on a worker."""

    __slots__ = ("pending", "started")

    def __init__(self) -> None:
        self.pending: set[str] = set()
        self.started: set[str] = set()

    def __call__(self, event: tuple[float, Any]) -> None:
        key = event[1]
        if key in self.pending:
            self.started.add(key)

    def end(self, key: str) -> bool:
        """Forget ``key``; whether its body had started."""
        self.pending.discard(key)
        if key in self.started:
            self.started.discard(key)
            return True
        return False


_STARTED: weakref.WeakKeyDictionary[Client, _Started] = weakref.WeakKeyDictionary()


def _started(client: Client) -> _Started:
    """The client's ``_Started`` record, subscribed to ``_STARTED_TOPIC`` on first use."""
    record = _STARTED.get(client)
    if record is None:
        record = _STARTED[client] = _Started()
        # Sent before any of our submissions on the same stream, so the scheduler knows
        # the subscription before a body can start.
        cast(Any, client).subscribe_topic(_STARTED_TOPIC, record)  # untyped
    return record


async def _attempt(submission: _Submission, requeues: int, started: list[asyncio.Task[Any]]) -> Any:
    """Submit one attempt and wait for its state; runs on the client's event loop."""
    current = asyncio.current_task()
    assert current is not None
    started.append(current)
    record = _started(submission.client)
    requeued = 0
    while True:
        future: Any = submission.submit()  # distributed's Future is untyped
        key = str(future.key)
        record.pending.add(key)
        try:
            try:
                error = await future.exception()  # waits, gathers nothing
            finally:
                ran = record.end(key)
            status = future.status
            if status == "finished":
                if submission.gather:
                    return await future
                return RemoteOutput(submission.task_id, future)
            if status != "error":  # cancelled by someone else, or lost
                raise RuntimeError(f"dask future {key!r} ended {status!r}")
            if isinstance(error, KilledWorker) and not ran and requeued < requeues:
                requeued += 1  # merely queued on the worker that died: again, uncounted
                future.release()
                continue
            traceback = await future.traceback()
            future.release()
            if isinstance(error, KilledWorker):
                error.add_note(_killed_note(error, submission.task_id, ran, requeued))
            raise error.with_traceback(traceback)
        except asyncio.CancelledError:
            if not future.done():
                await cast(Any, submission.client).cancel([future], asynchronous=True)
            future.release()
            raise


def _killed_note(error: KilledWorker, task_id: str, ran: bool, requeued: int) -> str:
    worker = getattr(error.last_worker, "address", "?")
    if ran:
        return f"task {task_id!r}: worker {worker} died while this attempt's body was running"
    return (
        f"task {task_id!r}: worker {worker} died before this attempt's body started; "
        f"it had been submitted again {requeued} time(s) after earlier deaths"
    )


async def _gather(future: Future[Any], started: list[asyncio.Task[Any]]) -> Any:
    current = asyncio.current_task()
    assert current is not None
    started.append(current)
    return await future


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


# -- the worker's side ---------------------------------------------------------------------


def _run_body(body: _Body, key: str, kwargs: dict[str, Any], held: dict[str, Any]) -> Any:
    """Run one task body on a worker: say it started, then run it in the driver's trace context."""
    worker = get_worker()
    worker.log_event(_STARTED_TOPIC, key)
    fn = _load(body.fn, held)
    token = otel_context.attach(propagate.extract(body.carrier)) if body.carrier else None
    try:
        if body.backend is not None:
            return anyio.run(_run_async, fn, kwargs, body.timeout, backend=body.backend)
        if body.timeout is None:
            return fn(**kwargs)
        return _run_in_thread(fn, kwargs, body.timeout, worker.address)
    finally:
        if token is not None:
            otel_context.detach(token)


def _held_futures(fn: Callable[..., Any]) -> dict[str, Future[Any]]:
    """The dask futures a body closes over, has as defaults or as ``partial`` arguments."""
    return {str(f.key): f for f in _held(fn) if isinstance(f, Future)}


def _held(fn: Any) -> list[Any]:
    held: list[Any] = []
    while isinstance(fn, functools.partial):
        held.extend(fn.args)
        held.extend(fn.keywords.values())
        fn = fn.func
    held.extend(cell.cell_contents for cell in getattr(fn, "__closure__", None) or ())
    held.extend(getattr(fn, "__defaults__", None) or ())
    held.extend((getattr(fn, "__kwdefaults__", None) or {}).values())
    return held


@final
class Resolved:
    """A dask future a body holds, already resolved on the worker: ``result()`` is the data."""

    __slots__ = ("_value", "key")

    def __init__(self, key: str, value: Any) -> None:
        self.key = key
        self._value = value

    status: Final = "finished"

    def result(self, timeout: float | None = None) -> Any:
        """The future's data (here already)."""
        return self._value

    def done(self) -> bool:
        """Always true."""
        return True

    def __repr__(self) -> str:
        return f"<Resolved key={self.key!r}>"


def _load(blob: bytes, values: dict[str, Any]) -> Callable[..., Any]:
    """Unpickle a body; the dask futures it holds become ``Resolved`` with their data."""
    fn = cloudpickle.loads(blob)
    if not values:
        return cast(Callable[..., Any], fn)

    def swap(value: Any) -> Any:
        if isinstance(value, Future) and str(value.key) in values:
            return Resolved(str(value.key), values[str(value.key)])
        return value

    def rebuild(target: Any) -> Any:
        if isinstance(target, functools.partial):
            return functools.partial(
                rebuild(target.func),
                *map(swap, target.args),
                **{k: swap(v) for k, v in target.keywords.items()},
            )
        for cell in getattr(target, "__closure__", None) or ():
            cell.cell_contents = swap(cell.cell_contents)
        if getattr(target, "__defaults__", None):
            target.__defaults__ = tuple(map(swap, target.__defaults__))
        if getattr(target, "__kwdefaults__", None):
            target.__kwdefaults__ = {k: swap(v) for k, v in target.__kwdefaults__.items()}
        return target

    return cast(Callable[..., Any], rebuild(fn))


async def _run_async(fn: Callable[..., Any], kwargs: dict[str, Any], limit: float | None) -> Any:
    with anyio.fail_after(limit):  # None: no limit
        return await fn(**kwargs)


def _run_in_thread(
    fn: Callable[..., Any], kwargs: dict[str, Any], timeout: float, where: str
) -> Any:
    """Run a sync body in a thread of its own and wait for it at most ``timeout`` seconds."""
    outcome: list[Any] = []
    failure: list[BaseException] = []
    done = threading.Event()

    def run() -> None:
        try:
            outcome.append(fn(**kwargs))
        except BaseException as exc:
            failure.append(exc)
        finally:
            done.set()

    context = contextvars.copy_context()  # the worker (get_worker) and the trace context
    thread = threading.Thread(target=context.run, args=(run,), daemon=True, name="orchestra-body")
    thread.start()
    if not done.wait(timeout):
        raise TimeoutError(
            f"the body ran past its timeout of {timeout:g} s on {where}; Python cannot stop "
            "a running thread: it goes on in the background and its result is dropped"
        )
    if failure:
        raise failure[0]
    return outcome[0]
