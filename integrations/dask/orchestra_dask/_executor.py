"""``DaskExecutor``: the scheduler's executor seam, backed by a dask.distributed ``Client``.

How one attempt runs: ``execute`` (in the driver, inside the task attempt) captures the
OpenTelemetry context into a W3C carrier, pickles the body and queues an ``Attempt`` on
the driver loop's ``Bridge`` (``_bridge``), which submits the attempts queued meanwhile
in one message to the scheduler and wakes the driver when their dask futures reach a
state. The upstream outputs are ``RemoteOutput`` handles around dask futures: they go into
the submission as futures, so dask moves the data between workers and the driver never
sees it. On the worker, ``run_body`` (``_worker``) runs the body.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, Literal, final

import anyio.lowlevel
import cloudpickle  # type: ignore[import-untyped]  # ships no type information
from dask.base import get_annotations
from opentelemetry import propagate

from orchestra_dask._attempt import Attempt
from orchestra_dask._bridge import Bridge
from orchestra_dask._chain import ChainedRun
from orchestra_dask._output import RemoteOutput
from orchestra_dask._worker import Body, held_futures

if TYPE_CHECKING:
    from distributed import Client

    from orchestra import Task

__all__ = ["SUBMIT_OPTIONS", "DaskExecutor"]

SUBMIT_OPTIONS: Final = frozenset(
    {"workers", "resources", "priority", "allow_other_workers", "annotations"}
)
"""The dask options a task may set in ``task.metadata["dask"]`` (or ``DaskExecutor(options=)``)."""

_BACKENDS: Final = frozenset({"asyncio", "trio"})
_RETRIES_REFUSED: Final = (
    "dask's retries= is refused: orchestra decides retries (the task's retries=, or an "
    "on_failure hook answering Retry), so that every attempt passes through the hooks"
)


@final
class DaskExecutor:
    """Runs task bodies on a dask.distributed cluster; their outputs stay there.

    The scheduler, ``TaskHooks``, YAML hooks and decisions stay in the driver; each task
    attempt becomes one dask task under a key of its own (``"{task id}-{32 hex digits}"``), so the
    dashboard groups attempts by task id and a ``Retry`` really runs the body again.

    Outputs stay on the workers: a task gets its upstream outputs as dask futures, which
    dask resolves on the worker that runs it. The driver learns only each attempt's state
    (and, on failure, the exception); it fetches an output when ``after_execute`` hooks
    need it (unless they set ``needs_outputs = False``) and, when the run ends, for the
    outputs ``RunResult.outputs`` keeps (``outputs=``). An output is released as soon as
    every task that uses it has ended. A task run by an agent (``agent=``) returns its
    text to the driver, where the dispatch happens.

    With ``max_concurrency=None`` and nothing to do in the driver between tasks (no
    ``before_execute``/``after_execute`` hooks, tracing, ``fail_fast`` or journal), a run
    chains (``chain``): a task goes to dask as soon as its upstreams have attempts
    submitted, so dask starts it when they finish, without a round trip through the driver.

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

    __slots__ = ("_bridge", "async_backend", "client", "options", "outputs", "requeues")

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
        self._bridge: Bridge | None = None

    def __repr__(self) -> str:
        return f"DaskExecutor({self.client!r}, outputs={self.outputs!r})"

    async def execute(self, task: Task, kwargs: dict[str, Any]) -> Any:
        """Run ``task.fn(**kwargs)`` on the cluster; return a ``RemoteOutput`` (or raise)."""
        return await self.attempt(task, kwargs, None)

    def chain(self, links: Sequence[tuple[Task, tuple[str, ...]]]) -> ChainedRun:
        """The executor of a run whose ``links`` tasks may be submitted ahead (see ``Executor``).

        A chained task is submitted to dask as soon as each of its upstreams has an
        attempt submitted, with their futures as arguments: dask starts its body when
        they all finished, as it would with plain futures, and never when one failed.
        The driver still decides: when it executes the task, that submission becomes
        its attempt if the inputs are the same; otherwise (a retried upstream, an
        output a hook replaced) it is released and a fresh attempt is submitted.
        """
        return ChainedRun(self, links, get_annotations())

    async def attempt(self, task: Task, kwargs: dict[str, Any], chain: ChainedRun | None) -> Any:
        """Run one attempt of ``task``, in ``chain``'s run if it chains."""
        bridge = self._bridge_here()
        args = {k: v.future if type(v) is RemoteOutput else v for k, v in kwargs.items()}
        if chain is None:
            carrier: dict[str, str] = {}
            propagate.inject(carrier)
            attempt = self.prepare(task, args, bridge, carrier, get_annotations(), None)
        else:  # prepared on the client's loop, and only if no spec is adopted
            attempt = Attempt.later(task, args, chain, requeues=self.requeues)
        return await bridge.run(attempt)

    def prepare(
        self,
        task: Task,
        args: dict[str, Any],
        bridge: Bridge,
        carrier: dict[str, str],
        annotations: dict[str, Any],
        chain: ChainedRun | None,
    ) -> Attempt:
        """The ``Attempt`` that runs ``task.fn(**args)``: ``args`` may hold dask futures."""
        options = self._options(task)
        annotations = {**annotations, **options.pop("annotations", {})}
        backend = (self.async_backend or bridge.backend) if task.is_async else None
        body = Body(cloudpickle.dumps(task.fn), carrier, backend, task.timeout)
        return Attempt(
            task.id,
            body,
            args,
            held_futures(task.fn),
            options,
            annotations,
            gather=task.agent is not None,
            requeues=self.requeues,
            chain=chain,
        )

    async def fetch(self, task: Task, output: Any) -> Any:
        """Bring an output to the driver (gather its future); other values come back as they are."""
        if type(output) is not RemoteOutput:
            return output
        return await self._bridge_here().fetch(output.future)

    def release(self, task: Task, output: Any) -> None:
        """Let the cluster forget an output nobody needs any more."""
        if type(output) is RemoteOutput:
            self._bridge_here().release(output.future)

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

    def _bridge_here(self) -> Bridge:
        """The bridge of the running driver loop (one per loop, made on first use)."""
        bridge = self._bridge
        if bridge is None or bridge.native is not anyio.lowlevel.current_token().native_token:
            bridge = self._bridge = Bridge(self.client)
        return bridge


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
