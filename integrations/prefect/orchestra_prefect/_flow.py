"""``hooked`` above a Prefect ``@flow``: the run hooks around each flow run (internal).

The flow's function is wrapped: ``before_run`` runs before its body (``Fail`` raises
``orchestra.TaskFailed``, so the flow run ends ``Failed`` before any task starts) and
``after_run`` after it, whatever way it ended, with a ``RunResult`` whose one entry is
the flow itself (its state, output or error): the flow's tasks report through their own
``hooked`` (``on_end``).
"""

from __future__ import annotations

import functools
import inspect
import time
from collections.abc import Callable
from typing import Any, Final

from prefect import Flow
from prefect.context import FlowRunContext
from prefect.logging import get_run_logger

import orchestra
from orchestra import Fail, HookChain, HookError, RunContext, TaskFailed, TaskState

__all__ = ["RUN_MOMENTS", "hook_flow"]

RUN_MOMENTS: Final = ("before_run", "after_run")


def hook_flow(flow: Flow[Any, Any], chain: HookChain) -> Flow[Any, Any]:
    """A copy of ``flow`` whose runs go through the chain's run hooks."""
    if not any(chain.has(m) for m in RUN_MOMENTS):
        raise TypeError(
            f"hooked(...) above a flow calls before_run and after_run; {chain!r} implements "
            "neither: put hooked(...) above the flow's @task functions"
        )
    hooked_flow = flow.with_options()
    hooked_flow.fn = _HookedFlow(flow, chain).wrap(flow.fn)
    hooked_flow.orchestra_hooks = chain  # type: ignore[attr-defined]
    return hooked_flow


class _HookedFlow:
    """The state ``hooked`` keeps for one Prefect flow (internal)."""

    def __init__(self, flow: Flow[Any, Any], chain: HookChain) -> None:
        self.chain = chain
        self.name = flow.name
        self.fn = flow.fn
        self.awaiting = frozenset(m for m in RUN_MOMENTS if chain.awaits(m))

    def wrap(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def run_async(*args: Any, **kwargs: Any) -> Any:
                return await self.run(args, kwargs, sync=False)

            return run_async

        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            return HookChain.run_now(self.run(args, kwargs, sync=True), needs_loop=False)

        return run

    async def run(self, args: tuple[Any, ...], kwargs: dict[str, Any], *, sync: bool) -> Any:
        """One flow run: ``before_run``, the flow's body, ``after_run``."""
        flow_ctx = FlowRunContext.get()
        if flow_ctx is None or flow_ctx.flow_run is None:  # a plain call (flow.fn(...))
            result = self.fn(*args, **kwargs)
            return (await result) if not sync and inspect.isawaitable(result) else result
        flow_run = flow_ctx.flow_run
        started = time.monotonic()
        ctx = RunContext(dag=self.name, run_id=str(flow_run.id), task_ids=(), started_at=started)
        hook_errors: list[HookError] = []
        output: Any = None
        error: BaseException | None = None
        reason: str | None = None
        try:
            decision, by = await self.call("before_run", sync, ctx, hook_errors)
            if isinstance(decision, Fail):
                why = getattr(decision, "reason", None)
                reason = f"run failed by {by}" + (f": {why}" if why else "")
                _log(f"{self.name}: {reason}")
                raise TaskFailed(self.name, why)
            output = self.fn(*args, **kwargs)
            if not sync and inspect.isawaitable(output):
                output = await output
            return output
        except BaseException as exc:
            error = exc
            raise
        finally:
            if self.chain.has("after_run"):
                result = orchestra.RunResult(
                    ok=error is None,
                    states={self.name: TaskState.SUCCEEDED if error is None else TaskState.FAILED},
                    outputs={self.name: output} if error is None else {},
                    errors={self.name: error} if error is not None else {},
                    attempts={self.name: flow_run.run_count},
                    run_id=str(flow_run.id),
                    reasons={self.name: reason} if reason else {},
                    hook_errors=tuple(hook_errors),
                    durations={self.name: time.monotonic() - started},
                    duration=time.monotonic() - started,
                )
                await self.call("after_run", sync, ctx, hook_errors, result)

    async def call(
        self, moment: str, sync: bool, ctx: RunContext, errors: list[HookError], *more: Any
    ) -> tuple[Any, str | None]:
        if not self.chain.has(moment):
            return None, None

        def record(error: HookError) -> None:
            errors.append(error)
            _log(str(error), warning=True)

        call = self.chain.call(moment, ctx, *more, subject=self.name, on_error=record)
        if sync:
            return HookChain.run_now(call, needs_loop=moment in self.awaiting)
        return await call


def _log(message: str, *, warning: bool = False) -> None:
    try:
        logger = get_run_logger()
    except Exception:  # no run context
        return
    (logger.warning if warning else logger.info)("orchestra: %s", message)
