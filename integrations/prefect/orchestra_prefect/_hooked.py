"""``hooked``: orchestra ``TaskHooks`` deciding what Prefect 3 does with a task run.

How each decision reaches Prefect's own machinery (so states, retry counts, logs and the
UI stay Prefect's):

- the task's function is wrapped: ``before_execute``, ``after_execute`` and
  ``on_failure`` run inside each attempt, where the inputs and the error are;
- a failure is re-raised for Prefect to handle, and the decision waits in a table for
  Prefect's ``retry_condition_fn``, which answers from it: ``Retry`` -> Prefect retries
  (``AwaitingRetry`` then ``Retrying``, ``run_count`` + 1), with the hook's delay read
  through the task's ``retry_delay_seconds``; ``Fail`` -> Prefect fails the run; no
  opinion -> the task's own ``retries``/``retry_delay_seconds``/``retry_condition_fn``;
- ``Skip`` returns a ``Completed`` state named ``"Skipped"`` (data None); ``Replace``
  changes the arguments or the returned value;
- ``on_end`` rides Prefect's ``on_completion``/``on_failure`` state hooks, which Prefect
  calls once, after the run's final state.

The attempt is one coroutine: for a ``def`` task it never suspends and is driven to its
end in the task's own thread, with no event loop; for an ``async def`` task Prefect
awaits it.
"""

from __future__ import annotations

import functools
import inspect
import time
from collections.abc import Callable, Mapping
from types import SimpleNamespace
from typing import Any, Final, TypeVar
from uuid import UUID

from prefect import Flow, Task
from prefect.context import FlowRunContext, TaskRunContext
from prefect.futures import PrefectFuture
from prefect.logging import get_run_logger
from prefect.states import Completed

import orchestra
from orchestra import (
    HookChain,
    HookError,
    Retry,
    TaskHooks,
    TaskState,
)
from orchestra.bridge import (
    AttemptDriver,
    DoGive,
    DoRun,
    DoSkip,
    DoSleep,
    Ended,
    TaskAttempts,
    no_agents,
)
from orchestra_prefect._context import hook_context, task_of
from orchestra_prefect._flow import hook_flow
from orchestra_prefect._states import SKIPPED, Delays, task_state

__all__ = ["DEFAULT_MAX_RETRIES", "hooked"]

_T = TypeVar("_T", Task[Any, Any], Flow[Any, Any])

DEFAULT_MAX_RETRIES: Final = 99
"""How many retries hooks may ask for per task run (Prefect's ``retries`` of the task)."""

_MOMENTS: Final = ("before_execute", "after_execute", "on_failure", "on_end")
_ENGINE: Final = "Prefect"
_FAIL: Final = object()  # a hook failed the run: Prefect must not retry it


def hooked(
    *hooks: object,
    hook_timeout: float | None = 60.0,
    max_retries: int = DEFAULT_MAX_RETRIES,
) -> Callable[[_T], _T]:
    """Let orchestra ``TaskHooks`` decide a Prefect task's retries, skips and failures.

    Stack it above Prefect's decorator::

        @orchestra_prefect.hooked(MyHooks())
        @task(retries=2)
        def fetch(url: str) -> bytes: ...

    Above a ``@flow``, it calls the hooks' ``before_run`` (``Fail`` fails the flow run
    before its body) and ``after_run`` (with a ``RunResult`` whose one entry is the flow)
    around each flow run.

    Args:
        *hooks: ``TaskHooks`` objects, called in this order at each moment (checked now).
        hook_timeout: seconds an ``async`` hook call may take unless the hook object sets
            its own ``timeout`` (None = no limit).
        max_retries: the most retries hooks may ask for in one task run; the hooked
            task's Prefect ``retries`` is this (or the task's own, if larger).

    Returns:
        A decorator that takes a Prefect ``Task`` or ``Flow`` and returns a hooked copy.

    Raises:
        TypeError: a hook object implements no moment of ``TaskHooks`` (or has a typo),
            the decorator is given something else than a Prefect task or flow, or a flow
            hooks that implement neither ``before_run`` nor ``after_run``.
    """
    if not isinstance(max_retries, int) or max_retries < 0:
        raise ValueError(f"max_retries must be an int >= 0, got {max_retries!r}")
    chain = HookChain(hooks, trait=TaskHooks, timeout=hook_timeout)
    moments_async = frozenset(m for m in _MOMENTS if chain.awaits(m))

    def decorate(obj: _T) -> _T:
        if isinstance(obj, Task):
            return _HookedTask(obj, chain, moments_async, max_retries).task
        if isinstance(obj, Flow):
            return hook_flow(obj, chain)
        raise TypeError(
            "hooked(...) decorates a Prefect task (or flow): put it above @task, as in\n"
            "    @orchestra_prefect.hooked(MyHooks())\n    @task\n    def work(): ...\n"
            f"got {obj!r}"
        )

    return decorate


class _HookedTask:
    """The state ``hooked`` keeps for one Prefect task (internal)."""

    def __init__(
        self,
        task: Task[Any, Any],
        chain: HookChain,
        moments_async: frozenset[str],
        max_retries: int,
    ) -> None:
        self.chain = chain
        self.moments_async = moments_async
        self.driver = AttemptDriver(
            chain,
            max_attempts=max(task.retries, max_retries) + 1,
            task_retries=False,  # Prefect applies the task's own retries
            calls_on_end=False,  # Prefect's state hooks call it, after the final state
        )
        self.has = {m: chain.has(m) for m in _MOMENTS}
        self.fn = task.fn
        self.name = task.name
        self.signature = inspect.signature(task.fn)
        self.own_retries = task.retries
        own = task.retry_delay_seconds
        self.own_delays: list[float] = (
            list(own) if isinstance(own, list) else [float(own)] if own else []
        )
        self.own_condition = task.retry_condition_fn
        self.pending: dict[UUID, object] = {}  # task run -> the failure's decision
        self.decided: dict[UUID, float] = {}  # task run -> the delay of the retry decided
        self.errors: dict[UUID, list[BaseException]] = {}
        self.started: dict[UUID, float] = {}
        self.hook_errors: list[HookError] = []

        hooked_task = task.with_options(
            retries=max(task.retries, max_retries),
            retry_condition_fn=self.retry_condition,
        )
        hooked_task.fn = self.wrap(task.fn)
        hooked_task.retry_delay_seconds = Delays(self.own_delays, self.decided)
        if self.has["on_end"]:
            hooked_task.on_completion_hooks = [*task.on_completion_hooks, self.ended]
            hooked_task.on_failure_hooks = [*task.on_failure_hooks, self.ended]
            # A run whose upstream failed never starts and Prefect calls no state hook
            # for it (it stays Pending "NotReady"): its future tells.
            submit, map_ = hooked_task.submit, hooked_task.map

            @functools.wraps(submit)
            def submit_watched(*args: Any, **kwargs: Any) -> Any:
                return self.watch(submit(*args, **kwargs))

            @functools.wraps(map_)
            def map_watched(*args: Any, **kwargs: Any) -> Any:
                futures = map_(*args, **kwargs)
                for future in futures:
                    self.watch(future)
                return futures

            hooked_task.submit = submit_watched  # type: ignore[method-assign]
            hooked_task.map = map_watched  # type: ignore[method-assign]
        hooked_task.orchestra_hooks = chain  # type: ignore[attr-defined]
        hooked_task.orchestra_hook_errors = self.hook_errors  # type: ignore[attr-defined]
        self.task = hooked_task

    # -- the attempt ------------------------------------------------------------------------

    def wrap(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def run_async(*args: Any, **kwargs: Any) -> Any:
                return await self.attempt_async(args, kwargs)

            return run_async

        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            return self.attempt_sync(args, kwargs)

        return run

    def attempt_sync(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """One attempt of one task run of a ``def`` task, in its own thread (no loop)."""
        ctx_run = TaskRunContext.get()
        if ctx_run is None:  # called as a plain function (task.fn(...))
            return self.fn(*args, **kwargs)
        run = ctx_run.task_run
        attempts = self.begin(run, args, kwargs)
        answer = attempts.started()
        if not isinstance(answer, DoRun):
            return self.carried(run.id, answer)
        args, kwargs = _inputs(answer, args, kwargs)
        try:
            result = self.fn(*args, **kwargs)
        except Exception as exc:
            return self.carried(run.id, attempts.failed(exc), exc)
        return self.carried(run.id, attempts.succeeded(result))

    async def attempt_async(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """One attempt of one task run of an ``async def`` task, awaited by Prefect."""
        ctx_run = TaskRunContext.get()
        if ctx_run is None:
            return await self.fn(*args, **kwargs)
        run = ctx_run.task_run
        attempts = self.begin(run, args, kwargs)
        answer = await attempts.astarted()
        if not isinstance(answer, DoRun):
            return self.carried(run.id, answer)
        args, kwargs = _inputs(answer, args, kwargs)
        try:
            result = await self.fn(*args, **kwargs)
        except Exception as exc:
            return self.carried(run.id, await attempts.afailed(exc), exc)
        return self.carried(run.id, await attempts.asucceeded(result))

    def begin(self, run: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> TaskAttempts:
        """The driver's view of this attempt of ``run`` (Prefect counts the attempts)."""
        rid = run.id
        self.started.setdefault(rid, time.monotonic())
        errors = self.errors.setdefault(rid, [])
        return self.driver.begin(
            self.task_of(run),
            kwargs,
            context=lambda a: self.context(
                run, args if a.inputs is kwargs else (), a.inputs, a.errors
            ),
            on_error=self.record,
            attempt=run.run_count - 1,
            errors=tuple(errors),
            settle=None,
        )

    def carried(self, rid: UUID, answer: DoSleep | Ended, error: Exception | None = None) -> Any:
        """Carry out the driver's answer in Prefect's terms (see the module docstring)."""
        if isinstance(answer, DoGive):
            if error is not None:
                self.log(f"{self.name}: failure {answer.reason} with a substitute output")
            self.forget(rid)
            return answer.output
        if error is not None:
            self.errors.setdefault(rid, []).append(error)
        if isinstance(answer, DoSkip):
            message = answer.reason
            if error is not None:
                message += f" (after {type(error).__name__}: {error})"
            self.log(f"{self.name}: {message}")
            self.forget(rid)
            return Completed(name=SKIPPED, message=message)
        if isinstance(answer, DoSleep):  # Prefect retries, after the hook's delay
            self.pending[rid] = Retry(answer.delay)
            raise error if error is not None else RuntimeError("a retry without a failure")
        if answer.decision is not None:
            self.log(f"{self.name}: {answer.reason}")
            self.pending[rid] = _FAIL
        else:  # no opinion: Prefect's retry_condition_fn applies the task's own policy
            self.pending[rid] = None
        raise answer.error

    # -- Prefect's side ---------------------------------------------------------------------

    def retry_condition(self, task: Task[Any, Any], task_run: Any, state: Any) -> Any:
        """Prefect's ``retry_condition_fn``: the hooks' decision, else the task's own policy."""
        rid = task_run.id
        decision = self.pending.pop(rid, None)
        if isinstance(decision, Retry):
            self.decided[rid] = decision.delay
            return True
        if decision is _FAIL or task_run.run_count > self.own_retries:
            self.forget(rid)
            return False
        if self.own_delays:
            self.decided[rid] = self.own_delays[min(task_run.run_count, len(self.own_delays)) - 1]
        if self.own_condition is None:
            return True
        return self.own_condition(task, task_run, state)

    async def ended(self, task: Task[Any, Any], task_run: Any, state: Any) -> None:
        """Prefect's ``on_completion``/``on_failure`` hook: ``on_end`` with the final state."""
        self.forget(task_run.id)
        await self.call("on_end", self.context(task_run, (), {}), False, task_state(state))

    def watch(self, future: Any) -> Any:
        """Call ``on_end`` (UPSTREAM_FAILED) when ``future`` ends in Prefect's NotReady."""
        if isinstance(future, PrefectFuture):
            flow_ctx = FlowRunContext.get()
            flow_run_id = flow_ctx.flow_run.id if flow_ctx and flow_ctx.flow_run else None

            def done(f: PrefectFuture[Any]) -> None:
                # The future is done: wait() returns at once and keeps the state the run
                # ended in (a NotReady state lives in the future only, not in the API).
                f.wait(0)
                state = f.state
                if state.is_pending() and state.name == "NotReady":
                    never_ran = SimpleNamespace(
                        id=f.task_run_id,
                        name=self.name,
                        run_count=0,
                        flow_run_id=flow_run_id,
                        tags=(),
                    )
                    ctx = self.context(never_ran, (), {})
                    coro = self.call("on_end", ctx, True, TaskState.UPSTREAM_FAILED)
                    HookChain.run_now(coro, needs_loop=False)

            future.add_done_callback(done)
        return future

    # -- helpers ----------------------------------------------------------------------------

    def context(
        self,
        run: Any,
        args: tuple[Any, ...],
        kwargs: Mapping[str, Any],
        errors: tuple[BaseException, ...] | None = None,
    ) -> Any:
        """The ``TaskHookContext`` of the current attempt of ``run``."""
        if errors is None:
            errors = tuple(self.errors.get(run.id, ()))
        started = self.started.get(run.id, 0.0)
        return hook_context(self.task_of(run), run, self.signature, (args, kwargs), errors, started)

    def task_of(self, run: Any) -> orchestra.Task:
        """The ``orchestra.Task`` standing for ``run``."""
        return task_of(self.name, self.fn, self.own_retries, run)

    async def call(self, moment: str, ctx: Any, sync: bool, *more: Any) -> tuple[Any, str | None]:
        coro = self.chain.call(moment, ctx, *more, subject=self.name, on_error=self.record)
        if sync:
            return HookChain.run_now(coro, needs_loop=moment in self.moments_async)
        return await coro

    def record(self, error: HookError) -> None:
        error = no_agents(error, _ENGINE)
        self.hook_errors.append(error)
        self.log(str(error), warning=True)

    def log(self, message: str, *, warning: bool = False) -> None:
        try:
            logger = get_run_logger()
        except Exception:  # no run context (a plain call)
            return
        (logger.warning if warning else logger.info)("orchestra: %s", message)

    def forget(self, rid: UUID) -> None:
        self.errors.pop(rid, None)
        self.started.pop(rid, None)
        self.pending.pop(rid, None)


def _reason(decision: object) -> str:
    reason = getattr(decision, "reason", None)
    return f": {reason}" if reason else ""


def _inputs(
    answer: DoRun, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The arguments the task's function gets: its own, or the hooks' replacement."""
    if answer.inputs is kwargs:
        return args, kwargs
    return (), dict(answer.inputs)
