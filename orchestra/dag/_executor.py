"""The executor seam: how task bodies run, locally or on another engine."""

from __future__ import annotations

from collections.abc import Awaitable
from contextvars import copy_context
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol, final, runtime_checkable

import anyio
import anyio.to_thread

if TYPE_CHECKING:
    from orchestra.dag._model import Task
    from orchestra.dag._threads import ThreadPool

__all__ = ["AgentDispatcher", "Executor", "LocalExecutor"]


@runtime_checkable
class Executor(Protocol):
    """Runs task bodies for the scheduler.

    The scheduler, hooks and decisions stay in the driver; an executor only turns a task
    and its keyword arguments into a result (or an exception). ``execute`` is awaited in
    the task attempt's own context, so context variables (a tracing span, say) set by the
    scheduler are current while it runs; an executor that ships work elsewhere carries
    what it needs from that context. Cancelling ``execute`` must cancel the work.

    Two optional extensions, for executors that ship work elsewhere (a cluster):

    - **Outputs that stay remote.** ``execute`` may return a handle to where the output
      was computed instead of the value, when the executor also implements
      ``async fetch(task, output) -> value`` (bring it to the driver), and optionally
      ``release(task, output)`` (the run no longer needs it) and
      ``keeps_output(task, *, leaf) -> bool`` (whether ``RunResult.outputs`` holds it;
      default: every output). The scheduler hands handles to the dependents' ``execute``
      as they are, fetches a value only when the driver needs it (for ``after_execute``
      hooks, unless every such hook object sets ``needs_outputs = False``: they then see
      the handle; and for the kept outputs, all at once when the run ends), and releases
      each other handle as soon as every dependent has ended.
    - **Timeouts applied by the executor.** With ``applies_timeouts = True`` the scheduler
      leaves ``task.timeout`` to ``execute`` (say, to measure running time on a worker
      rather than time in a queue), which raises ``TimeoutError`` past it. For a task
      run by an agent the scheduler still times the body and the dispatch together.
    - **Chained submissions.** An executor with outputs that stay remote may implement
      ``chain(links) -> Executor``. When nothing has to happen in the driver between a
      task's upstreams succeeding and its body starting (no ``before_execute`` or
      ``after_execute`` hooks, no tracing, no ``fail_fast``, ``max_concurrency=None``,
      no journal), the scheduler calls it once per run, before any task starts, and the
      run uses the executor it returns. ``links`` lists ``(task, upstream ids)`` for the
      tasks that run exactly when their upstreams succeed (a rule that runs after
      successes and decides late, no agent) and whose body takes every upstream's
      output, keyed by upstream id. That executor may submit such a task ahead, with the
      handles of its upstreams' attempts still running, if its body can only start once
      all of them succeeded; ``execute`` for that task (with the same handles) then
      adopts the submission. A submission not adopted is dropped when an input's attempt
      fails or its handle is released.
    """

    def execute(self, task: Task, kwargs: dict[str, Any]) -> Awaitable[Any]:
        """Run ``task.fn(**kwargs)`` and return its result, or raise its exception."""
        ...


@final
class LocalExecutor:
    """The default executor: async bodies on the event loop, sync bodies in threads.

    A sync body runs in a worker thread, in a copy of the caller's context, unless the
    task says ``inline=True``: then it runs on the event loop (in a copy of the context
    too), which is the fastest choice for cheap bodies. A thread cannot be interrupted:
    on a timeout or a cancellation the task ends at once and its thread is abandoned, to
    finish on its own. In a run, sync bodies go to the run's own thread pool (at most
    ``max_concurrency`` threads); elsewhere, or with a ``limiter``, to anyio's threads.

    Args:
        limiter: the thread limiter for sync bodies (anyio's default if None).
    """

    def __init__(self, limiter: anyio.CapacityLimiter | None = None) -> None:
        self.limiter = limiter
        self._threads: ThreadPool | None = None  # the run's pool, set by the scheduler

    async def execute(self, task: Task, kwargs: dict[str, Any]) -> Any:
        """Run one task body."""
        if task.is_async:
            return await task.fn(**kwargs)
        if task.inline:
            return copy_context().run(task.fn, **kwargs)
        if self._threads is not None:
            return await self._threads.run(task.fn, kwargs)
        return await anyio.to_thread.run_sync(
            partial(task.fn, **kwargs), limiter=self.limiter, abandon_on_cancel=True
        )


class _DispatchResult(Protocol):
    @property
    def output(self) -> Any: ...


class AgentDispatcher(Protocol):
    """What the scheduler needs of a dispatcher to run tasks that name an agent."""

    async def dispatch(
        self, name: str, task: str, /, *, parent: str | None = None
    ) -> _DispatchResult:
        """Dispatch ``task`` to the agent ``name`` and return its result."""
        ...
