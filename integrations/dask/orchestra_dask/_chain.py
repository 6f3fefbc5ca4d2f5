"""Chained runs: dependents submitted to dask before their upstreams end (internal).

When the scheduler says a run may chain (``DaskExecutor.chain``: nothing happens in the
driver between a task's upstreams succeeding and its body starting), the run's executor
is a ``ChainedRun``. Each time an attempt is submitted, the bridge also submits, on the
client's loop, the chained dependents whose upstreams all have a live attempt: a *spec*,
with the upstream futures as arguments, so dask starts the body on the cluster as soon as
they finish, without a round trip through the driver (and so on down the chain). When
the driver then executes the task, the bridge adopts the spec whose input futures are
the ones the driver passes; any other spec is released. A spec never runs its body
unless every input finished: dask errs it when one fails, and the bridge releases it
when an input's attempt fails or the driver releases an input.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, final

from orchestra_dask._started import started as started_record

if TYPE_CHECKING:
    from orchestra import Task
    from orchestra_dask._attempt import Attempt
    from orchestra_dask._bridge import Bridge
    from orchestra_dask._executor import DaskExecutor
    from orchestra_dask._started import Started

__all__ = ["ChainedRun"]


@final
class ChainedRun:
    """The executor of one run that chains: ``DaskExecutor.execute``, with the run's links.

    All its state but ``executor`` and the links is read and written on the client's loop.

    Args:
        executor: the ``DaskExecutor``.
        links: ``(task, upstream ids)`` of the tasks that may be submitted ahead.
        annotations: dask's annotations where the run started.
    """

    __slots__ = ("annotations", "dependents", "executor", "links", "live", "specs", "started")

    def __init__(
        self,
        executor: DaskExecutor,
        links: Sequence[tuple[Task, tuple[str, ...]]],
        annotations: dict[str, Any],
    ) -> None:
        self.executor = executor
        self.annotations = annotations
        self.links = {task.id: (task, ups) for task, ups in links}
        dependents: dict[str, list[str]] = {}
        for task, ups in links:
            for u in ups:
                dependents.setdefault(u, []).append(task.id)
        self.dependents = dependents
        self.live: dict[str, Any] = {}  # task id -> the future of its latest attempt or spec
        self.specs: dict[str, Attempt] = {}  # task id -> its spec, not adopted yet
        self.started: set[str] = set()  # tasks the driver executed: never submitted ahead

    def __repr__(self) -> str:
        return f"ChainedRun({self.executor!r}, {len(self.links)} links)"

    async def execute(self, task: Task, kwargs: dict[str, Any]) -> Any:
        """Run one attempt; it adopts the task's spec when the inputs are the same."""
        return await self.executor.attempt(task, kwargs, self)

    def ahead(self, submitted: Attempt) -> list[tuple[Task, dict[str, Any]]]:
        """``submitted`` has a future: the dependents now ready to submit ahead, with their args."""
        tid = submitted.task_id
        self.live[tid] = submitted.future
        ready: list[tuple[Task, dict[str, Any]]] = []
        live = self.live
        for d in self.dependents.get(tid, ()):
            if d in self.started or d in self.specs:
                continue
            task, ups = self.links[d]
            args: dict[str, Any] = {}
            for u in ups:
                future = live.get(u)
                if future is None:
                    break
                args[u] = future
            else:
                ready.append((task, args))
        return ready

    def forget(self, tid: str, future: Any) -> None:
        """``future``, of task ``tid``, failed or was released: no spec may use it."""
        if self.live.get(tid) is future:
            del self.live[tid]


def same_inputs(spec: Attempt, attempt: Attempt) -> bool:
    """Whether ``attempt`` (the driver's) gets the very futures ``spec`` was submitted with."""
    given = attempt.args
    if given.keys() != spec.args.keys():
        return False
    return all(given[k] is future for k, future in spec.args.items())


# -- on the client's loop: what a chained run submits ahead, adopts and drops -------


def ahead(bridge: Bridge, frontier: list[Attempt], started: Started) -> None:
    """Submit the chained dependents of ``frontier`` whose upstreams all have futures."""
    while frontier:
        specs: list[Attempt] = []
        for submitted in frontier:
            chain = submitted.chain
            assert chain is not None
            bridge.linked[str(submitted.future.key)] = submitted
            prepare = chain.executor.prepare
            for task, args in chain.ahead(submitted):
                try:
                    spec = prepare(task, args, bridge, {}, chain.annotations, chain)
                except Exception:  # the driver's attempt will meet the same error
                    continue
                chain.specs[task.id] = spec
                specs.append(spec)
        frontier = []
        for spec, error in bridge.submitted(specs, started):
            chain = spec.chain
            assert chain is not None
            if error is not None:
                del chain.specs[spec.task_id]
                continue
            for future in spec.args.values():
                bridge.consumers.setdefault(str(future.key), []).append(spec)
            frontier.append(spec)


def adopt(bridge: Bridge, spec: Attempt, attempt: Attempt, started: Started) -> None:
    """The driver's ``attempt`` takes over ``spec``, submitted ahead with the same inputs."""
    spec.adopted = True
    attempt.future = spec.future
    bridge.linked[str(spec.future.key)] = attempt
    bridge.loop.create_task(bridge.follow(attempt, started))


def drop(bridge: Bridge, spec: Attempt, started: Started) -> None:
    """Release a spec the driver will not adopt (and the specs that use it)."""
    chain = spec.chain
    assert chain is not None
    if chain.specs.get(spec.task_id) is spec:
        del chain.specs[spec.task_id]
    future = spec.future
    started.end(str(future.key))
    unlink(bridge, future)
    future.release()


def unlink(bridge: Bridge, future: Any) -> None:
    """``future`` failed or is released: no spec may use it; drop those that did."""
    key = str(future.key)
    attempt = bridge.linked.pop(key, None)
    if attempt is not None and attempt.chain is not None:
        attempt.chain.forget(attempt.task_id, future)
    consumers = bridge.consumers.pop(key, None)
    if consumers:
        started = started_record(bridge.client)
        for spec in consumers:
            if not spec.adopted:
                drop(bridge, spec, started)
