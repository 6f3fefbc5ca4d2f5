"""The executor seam: how task bodies run, locally or on another engine."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from contextvars import copy_context
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol, final, runtime_checkable

import anyio
import anyio.to_thread

if TYPE_CHECKING:
    from orchestra.dag._model import Task
    from orchestra.dag._threads import ThreadPool

__all__ = [
    "AgentDispatcher",
    "AppliesTimeouts",
    "Capabilities",
    "ChainsSubmissions",
    "ChoosesKeptOutputs",
    "Executor",
    "KeepsOutputsRemote",
    "LocalExecutor",
    "PooledExecutor",
    "ReleasesOutputs",
]


@runtime_checkable
class Executor(Protocol):
    """Runs task bodies for the scheduler.

    The scheduler, hooks and decisions stay in the driver; an executor only turns a task
    and its keyword arguments into a result (or an exception). ``execute`` is awaited in
    the task attempt's own context, so context variables (a tracing span, say) set by the
    scheduler are current while it runs; an executor that ships work elsewhere carries
    what it needs from that context. Cancelling ``execute`` must cancel the work.

    Optional capabilities, for executors that ship work elsewhere (a cluster), each a
    ``Protocol`` in ``orchestra.executors`` that the scheduler checks once per run:

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


@runtime_checkable
class KeepsOutputsRemote(Protocol):
    """Capability: ``execute`` returns handles, and ``fetch`` brings a value to the driver."""

    def fetch(self, task: Task, output: Any) -> Awaitable[Any]:
        """The value behind ``output``, a handle ``execute`` returned."""
        ...


@runtime_checkable
class ReleasesOutputs(Protocol):
    """Capability, with ``KeepsOutputsRemote``: handles the run no longer needs are released."""

    def release(self, task: Task, output: Any) -> object:
        """The run no longer needs the handle ``output``."""
        ...


@runtime_checkable
class ChoosesKeptOutputs(Protocol):
    """Capability, with ``KeepsOutputsRemote``: which outputs ``RunResult.outputs`` holds."""

    def keeps_output(self, task: Task, *, leaf: bool) -> bool:
        """Whether ``RunResult.outputs`` holds ``task``'s output (default: every one)."""
        ...


@runtime_checkable
class AppliesTimeouts(Protocol):
    """Capability: the executor applies ``task.timeout`` itself (when this is True)."""

    @property
    def applies_timeouts(self) -> bool:
        """Whether ``execute`` raises ``TimeoutError`` past ``task.timeout``."""
        ...


@runtime_checkable
class ChainsSubmissions(Protocol):
    """Capability: tasks may be submitted ahead of their upstreams' end (see ``Executor``)."""

    def chain(self, links: Sequence[tuple[Task, tuple[str, ...]]]) -> Executor:
        """The executor a run that can chain these links uses."""
        ...


@final
class Capabilities:
    """What a run's executor can do beyond ``execute``: asked once per run (internal).

    Each capability is a ``Protocol`` above, checked with ``isinstance`` here and nowhere
    else; the scheduler reads the answers.
    """

    __slots__ = ("chains", "keeps", "releases", "remote", "times")

    def __init__(self, executor: object) -> None:
        self.remote: KeepsOutputsRemote | None = None
        self.releases: ReleasesOutputs | None = None
        self.keeps: ChoosesKeptOutputs | None = None
        self.chains: ChainsSubmissions | None = None
        self.times = False
        if executor is None:  # the run's own: none (a Protocol check costs ~25 us each)
            return
        self.remote = executor if isinstance(executor, KeepsOutputsRemote) else None
        self.releases = executor if isinstance(executor, ReleasesOutputs) else None
        self.keeps = executor if isinstance(executor, ChoosesKeptOutputs) else None
        self.times = isinstance(executor, AppliesTimeouts) and bool(executor.applies_timeouts)
        self.chains = executor if isinstance(executor, ChainsSubmissions) else None


@final
class LocalExecutor:
    """The default executor: async bodies on the event loop, sync bodies in threads.

    A sync body runs in a worker thread (``anyio.to_thread.run_sync``, in a copy of the
    caller's context, where ``anyio.from_thread`` reaches the loop), unless the task says
    ``inline=True``: then it runs on the event loop (in a copy of the context too),
    which is the fastest choice for cheap bodies. A thread cannot be interrupted: on a
    timeout or a cancellation the task ends at once and its thread is abandoned, to
    finish on its own.

    Args:
        limiter: the thread limiter for sync bodies (anyio's default if None; a run
            makes one of ``max_concurrency`` threads for its own ``LocalExecutor``).
    """

    def __init__(self, limiter: anyio.CapacityLimiter | None = None) -> None:
        self.limiter = limiter

    def execute(self, task: Task, kwargs: dict[str, Any]) -> Awaitable[Any]:
        """Run one task body: an awaitable of its result (an async body's own coroutine).

        A sync body's thread that raised a ``BaseException`` other than a cancellation
        (``KeyboardInterrupt``, say) by the time its caller is cancelled (another body's
        ``BaseException`` stopping the run) raises it here, so that it is not lost.
        """
        if task.is_async:
            body: Awaitable[Any] = task.fn(**kwargs)  # awaited by the caller, as it is
            return body
        return self._sync(task, kwargs)

    async def _sync(self, task: Task, kwargs: dict[str, Any]) -> Any:
        if task.inline:
            return copy_context().run(task.fn, **kwargs)
        body = _ThreadBody(partial(task.fn, **kwargs))
        try:
            return await anyio.to_thread.run_sync(
                body.run, limiter=self.limiter, abandon_on_cancel=True
            )
        except anyio.get_cancelled_exc_class():
            if body.fatal is not None:
                raise body.fatal from None
            raise


@final
class _ThreadBody:
    """A sync body run in a thread, which keeps a ``BaseException`` it raised."""

    __slots__ = ("fatal", "fn")

    def __init__(self, fn: Callable[[], Any]) -> None:
        self.fn = fn
        self.fatal: BaseException | None = None

    def run(self) -> Any:
        try:
            return self.fn()
        except Exception:
            raise
        except BaseException as exc:
            self.fatal = exc
            raise


@final
class PooledExecutor:
    """A run's own executor when it is given none (internal).

    ``LocalExecutor``'s behaviour, with the sync bodies in the run's ``ThreadPool``
    (see ``_threads`` for why).
    """

    def __init__(self, pool: ThreadPool) -> None:
        self.pool = pool

    def execute(self, task: Task, kwargs: dict[str, Any]) -> Awaitable[Any]:
        """Run one task body: an awaitable of its result (an async body's own coroutine)."""
        if task.is_async:
            body: Awaitable[Any] = task.fn(**kwargs)  # awaited by the caller, as it is
            return body
        return self._sync(task, kwargs)

    async def _sync(self, task: Task, kwargs: dict[str, Any]) -> Any:
        if task.inline:
            return copy_context().run(task.fn, **kwargs)
        return await self.pool.run(task.fn, kwargs)


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
