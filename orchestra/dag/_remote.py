"""Outputs that stay where the executor computed them (internal).

An executor whose ``execute`` returns a handle instead of the value implements
``KeepsOutputsRemote`` (``fetch``; and, optionally, ``ReleasesOutputs`` and
``ChoosesKeptOutputs``: see ``Executor``). The scheduler then keeps one ``RemoteOutputs``
per run, which decides when the driver needs a value and when nobody needs a handle any
more; the handles themselves are the executor's business. With any other executor
the scheduler makes none, and pays one ``is None`` check per task.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Final, final

import anyio

if TYPE_CHECKING:
    from orchestra.dag._executor import Capabilities, Executor
    from orchestra.dag._model import Task
    from orchestra.dag._plan import Plan
    from orchestra.dag._scheduler import _Run

__all__ = ["RemoteOutputs", "chained"]

_MISSING: Final = object()


@final
class RemoteOutputs:
    """One run's bookkeeping of the handles an executor returned.

    - ``value``: what ``after_execute`` hooks see (the fetched value, unless every such
      hook object sets ``needs_outputs = False``: then the handle).
    - ``ended``: a task reached its terminal state; each upstream whose dependents have
      all ended, and the task itself when it has none, is released and dropped from the
      outputs, unless the executor's ``keeps_output`` keeps it for the ``RunResult``.
    - ``finish``: the kept outputs are fetched (all at once) for the ``RunResult``; a
      fetch that fails leaves the output out and records the error for that task.
    - ``release_all``: the run was cancelled or failed fatally: every handle is released.
    """

    __slots__ = (
        "_fetch",
        "_hooks_need",
        "_keep",
        "_local",
        "_order",
        "_release",
        "_upstreams",
        "_waiting",
    )

    def __init__(
        self,
        fetch: Callable[[Task, Any], Awaitable[Any]],
        release: Callable[[Task, Any], object] | None,
        keeps: Callable[..., bool] | None,
        order: Sequence[Task],
        upstreams: Sequence[tuple[int, ...]],
        dependents: Sequence[Sequence[int]],
        hooks_need: bool,
    ) -> None:
        self._fetch = fetch
        self._release = release
        self._keep = [
            True if keeps is None else bool(keeps(task, leaf=not dependents[i]))
            for i, task in enumerate(order)
        ]
        self._order = order
        self._upstreams = upstreams
        self._waiting = [len(d) for d in dependents]
        self._hooks_need = hooks_need
        self._local: set[int] = set()  # tasks whose output a hook replaced with a value

    @classmethod
    def for_run(
        cls, capabilities: Capabilities, plan: Plan, after_hooks: Sequence[object]
    ) -> RemoteOutputs | None:
        """The bookkeeping for the run's executor, or None when its outputs are values.

        Args:
            capabilities: what the run's executor can do.
            plan: the run's plan (its tasks, their upstreams and dependents).
            after_hooks: the hook objects that implement ``after_execute``.
        """
        if capabilities.remote is None:
            return None
        return cls(
            capabilities.remote.fetch,
            capabilities.releases.release if capabilities.releases is not None else None,
            capabilities.keeps.keeps_output if capabilities.keeps is not None else None,
            plan.order,
            plan.upstreams,
            plan.dependents,
            hooks_need=any(getattr(hook, "needs_outputs", True) for hook in after_hooks),
        )

    async def value(self, i: int, output: Any) -> Any:
        """What ``after_execute`` hooks see for task ``i``'s output."""
        if not self._hooks_need:
            return output
        return await self._fetch(self._order[i], output)

    def replaced(self, i: int, handle: Any) -> None:
        """A hook replaced task ``i``'s output with a value: release ``handle`` (if any)."""
        self._local.add(i)
        if handle is not None and self._release is not None:
            self._release(self._order[i], handle)

    def ended(self, i: int, outputs: dict[str, Any]) -> None:
        """Task ``i`` ended: drop the outputs no task still to end may need."""
        waiting = self._waiting
        for u in self._upstreams[i]:
            waiting[u] -= 1
            if not waiting[u]:
                self._drop(u, outputs)
        if not waiting[i]:
            self._drop(i, outputs)

    def _drop(self, i: int, outputs: dict[str, Any]) -> None:
        if self._keep[i]:
            return
        task = self._order[i]
        output = outputs.pop(task.id, _MISSING)
        if output is not _MISSING and self._release is not None and i not in self._local:
            self._release(task, output)

    async def finish(self, outputs: dict[str, Any], errors: dict[str, BaseException]) -> None:
        """Fetch every output still held (the kept ones) into ``outputs``, concurrently."""
        by_id = {task.id: task for task in self._order}

        async def fetch(task: Task, output: Any) -> None:
            try:
                outputs[task.id] = await self._fetch(task, output)
            except Exception as exc:
                del outputs[task.id]
                errors[task.id] = exc
            if self._release is not None:
                self._release(task, output)

        local = {self._order[i].id for i in self._local}
        async with anyio.create_task_group() as tg:
            for tid, output in list(outputs.items()):
                if tid not in local:
                    tg.start_soon(fetch, by_id[tid], output)

    def release_all(self, outputs: dict[str, Any]) -> None:
        """Release every handle still held (a cancelled or fatally failed run)."""
        if self._release is None:
            return
        by_id = {task.id: task for task in self._order}
        local = {self._order[i].id for i in self._local}
        for tid, output in outputs.items():
            if tid not in local:
                self._release(by_id[tid], output)


def chained(run: _Run, executor: Executor) -> Executor:
    """The executor ``run`` uses: ``executor.chain(links)``'s when the run may chain tasks.

    See ``Executor`` (chained submissions). The caller checks that the run is not traced.
    """
    chains = run.capabilities.chains
    if chains is None or run.remote is None or _driver_works_between_tasks(run):
        return executor
    plan = run.plan
    links = [(task, plan.wants[d]) for d, task in enumerate(plan.order) if _chainable(run, d)]
    return chains.chain(links) if links else executor


def _driver_works_between_tasks(run: _Run) -> bool:
    """Whether something happens in the driver between a task's upstreams and its body."""
    return run.has_before or run.has_after or run.fail_fast or run.capped or run.journal is not None


def _chainable(run: _Run, d: int) -> bool:
    """Whether task ``d`` runs exactly when its upstreams succeed, on all their outputs."""
    plan = run.plan
    task = plan.order[d]
    ups = plan.upstreams[d]
    if not ups or len(plan.wants[d]) != len(ups) or task.agent is not None or task.branch:
        return False  # a source, a body that does not take every output, a dispatch
    rule = plan.rules[d]
    if not rule.runs_on_success or rule.decides_on_success or not rule.waits:
        return False  # its rule may run it otherwise than after every upstream succeeded
    if task.timeout is not None and not run.capabilities.times:
        return False  # the scheduler times its attempt
    return all(plan.order[u].agent is None and not plan.order[u].branch for u in ups)
