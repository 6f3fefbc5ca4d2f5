"""The worker's side of an attempt: ``run_body`` and what it needs (internal).

``run_body`` first logs the attempt's key on the ``STARTED_TOPIC`` event topic, to which
the driver's client is subscribed (a ``KilledWorker`` for a key that never started means
the task was merely queued on the worker that died). It then runs the body in the
driver's trace context and applies ``task.timeout`` to its own running time
(``anyio.fail_after`` for async bodies; a sync body runs in a thread of its own that the
wrapper stops waiting for).
"""

from __future__ import annotations

import contextvars
import functools
import threading
import types
from collections.abc import Callable
from typing import Any, Final, cast, final

import anyio
import cloudpickle  # type: ignore[import-untyped]  # ships no type information
from distributed import Future, get_worker
from opentelemetry import context as otel_context
from opentelemetry import propagate

__all__ = ["STARTED_TOPIC", "Body", "Resolved", "held_futures", "run_body"]

STARTED_TOPIC: Final = "orchestra-dask-started"  # workers log each started attempt's key


@final
class Body:
    """What the worker needs to run one body (pickled once per attempt)."""

    __slots__ = ("backend", "carrier", "fn", "timeout")

    def __init__(
        self, fn: bytes, carrier: dict[str, str], backend: str | None, timeout: float | None
    ) -> None:
        self.fn = fn
        self.carrier = carrier
        self.backend = backend
        self.timeout = timeout


def run_body(body: Body, key: str, kwargs: dict[str, Any], held: dict[str, Any]) -> Any:
    """Run one task body on a worker: say it started, then run it in the driver's trace context."""
    worker = get_worker()
    worker.log_event(STARTED_TOPIC, key)
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


def held_futures(fn: Callable[..., Any]) -> dict[str, Future[Any]]:
    """The dask futures a body holds (closure, globals it names, defaults, partial args)."""
    return {str(f.key): f for f in _held(fn) if isinstance(f, Future)}


def _global_names(code: types.CodeType) -> set[str]:
    """The global names a function's code (and the functions defined in it) may read."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names


def _named_globals(fn: Any) -> dict[str, Any]:
    """The globals a function reads (a script's top-level ``table = client.scatter(...)``)."""
    scope = getattr(fn, "__globals__", None)
    code = getattr(fn, "__code__", None)
    if scope is None or code is None:
        return {}
    return {name: scope[name] for name in _global_names(code) if name in scope}


def _held(fn: Any) -> list[Any]:
    held: list[Any] = []
    while isinstance(fn, functools.partial):
        held.extend(fn.args)
        held.extend(fn.keywords.values())
        fn = fn.func
    held.extend(cell.cell_contents for cell in getattr(fn, "__closure__", None) or ())
    held.extend(_named_globals(fn).values())
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
        for name, value in _named_globals(target).items():
            if isinstance(value, Future):  # a by-value body's own globals (cloudpickle)
                target.__globals__[name] = swap(value)
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
