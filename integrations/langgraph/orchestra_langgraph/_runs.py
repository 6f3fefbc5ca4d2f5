"""The run moments of a hooked graph or entrypoint: ``before_run``/``after_run`` (internal).

``HookedRuns`` goes before LangGraph's own class (``CompiledStateGraph`` or ``Pregel``)
in a hooked graph's bases: each ``invoke``/``ainvoke``/``stream``/``astream`` (the first
two call the last two) is one run, with its ``Run``, its ambient policy, its budgets and
its callbacks (the model calls' and the tools' of its tree, ``_steps`` and ``_tree``), in
a context of its own; a run started inside another hooked run is part of that one.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import AsyncIterator, Callable, Iterator
from typing import TYPE_CHECKING, Any

from langgraph.pregel import Pregel
from opentelemetry import context as otel_context
from opentelemetry import trace

from orchestra import Fail, TaskFailed
from orchestra.bridge import enter_budgets, set_policy
from orchestra_langgraph._node import reason
from orchestra_langgraph._run import Run, current
from orchestra_langgraph._steps import configured
from orchestra_langgraph._sync import blocking

if TYPE_CHECKING:
    from orchestra_langgraph._graph import _Bridge

__all__ = ["HookedRuns"]


class HookedRuns(Pregel):  # type: ignore[type-arg]  # generic like its base
    """Each ``stream``/``astream`` of LangGraph's class after this one, as one hooked run."""

    __slots__ = ()  # Pregel's layout: a graph's class can be swapped for a hooked one

    def stream(self, *args: Any, **kwargs: Any) -> Iterator[Any]:
        """LangGraph's own ``stream``, as one hooked run."""
        if current.get() is not None or not self._bridge().active:  # part of a run / idle
            context = self._nested()
            if context is None:
                yield from super().stream(*args, **kwargs)
            else:
                yield from _each(context, context.run(super().stream, *args, **kwargs))
            return
        run, context, args, kwargs = self._start(args, kwargs)
        error: BaseException | None = None
        try:
            self._before_run_sync(run, context)
            yield from _each(context, context.run(super().stream, *args, **kwargs))
        except BaseException as exc:
            error = exc
            raise
        finally:
            self._after_run_sync(run, context, error)

    async def astream(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        """LangGraph's own ``astream``, as one hooked run."""
        if current.get() is not None or not self._bridge().active:
            context = self._nested()
            if context is None:
                chunks = super().astream(*args, **kwargs)
            else:
                chunks = _aeach(context, super().astream, args, kwargs)
            async for chunk in chunks:
                yield chunk
            return
        run, context, args, kwargs = self._start(args, kwargs)
        error: BaseException | None = None
        try:
            await asyncio.create_task(self._before_run(run), context=context)
            async for chunk in _aeach(context, super().astream, args, kwargs):
                yield chunk
        except BaseException as exc:
            error = exc
            raise
        finally:
            if self._bridge().has_after_run:
                ending = asyncio.create_task(self._after_run(run, error), context=context)
                await asyncio.shield(ending)
            else:
                run.finish(error)

    # -- the run moments ----------------------------------------------------------------

    def _bridge(self) -> _Bridge:
        raise NotImplementedError  # the graph's or the entrypoint's

    def _node_names(self) -> tuple[str, ...]:
        raise NotImplementedError

    def _hooked_by_parent(self) -> bool:
        """Whether this is the hooked copy of a subgraph its parent graph hooked."""
        return False

    def _configured(
        self, run: Run, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """The run's config with handlers of the model calls and of the tools in its tree."""
        bridge = self._bridge()
        steps = bridge.run_steps()
        if steps is None and bridge.tree is None:
            return args, kwargs
        return configured(steps, run, args, kwargs, bridge.tree)

    def _start(
        self, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[Run, contextvars.Context, tuple[Any, ...], dict[str, Any]]:
        """A run starts: its record, the context it runs in, the stream's arguments.

        The context holds the run, its policy and budgets, its span as the current one;
        the arguments are the caller's, with the run's own handlers in their config.
        """
        run = Run(self.name, self._node_names())
        args, kwargs = self._configured(run, args, kwargs)
        context = contextvars.copy_context()
        context.run(current.set, run)
        policy = self._bridge().policy
        context.run(set_policy, policy.registry, policy.hooks)
        run.budgets = context.run(enter_budgets, self._bridge().budgets)  # its model, tool calls
        if run.span is not None:
            context.run(otel_context.attach, trace.set_span_in_context(run.span))
        return run, context, args, kwargs

    def _nested(self) -> contextvars.Context | None:
        """The context of a run inside another hooked run, given budgets of its own, or None.

        Its own budgets count there (``scope="tree"``: in the enclosing run's count when
        that one counts the same budget); its calls are the enclosing run's otherwise.
        """
        budgets = self._bridge().budgets
        if not budgets or current.get() is None or self._hooked_by_parent():
            return None
        context = contextvars.copy_context()
        context.run(enter_budgets, budgets)
        return context

    def _before_run_sync(self, run: Run, context: contextvars.Context) -> None:
        if self._bridge().has_before_run:
            context.run(blocking, lambda: self._before_run(run))

    def _after_run_sync(
        self, run: Run, context: contextvars.Context, error: BaseException | None
    ) -> None:
        if self._bridge().has_after_run:
            context.run(blocking, lambda: self._after_run(run, error))
        else:
            run.finish(error)

    async def _before_run(self, run: Run) -> None:
        bridge = self._bridge()
        if not bridge.has_before_run:
            return
        decision, by = await bridge.chain.call(
            "before_run", run.run_context(run.nodes), subject=run.name, on_error=run.record
        )
        if isinstance(decision, Fail):
            raise TaskFailed(run.name, f"run refused by {by}" + reason(decision))

    async def _after_run(self, run: Run, error: BaseException | None) -> None:
        bridge = self._bridge()
        try:
            if bridge.has_after_run:
                await bridge.chain.call(
                    "after_run",
                    run.run_context(run.nodes),
                    run.result(error),
                    subject=run.name,
                    on_error=run.record,
                )
        finally:
            run.finish(error)


def _each(context: contextvars.Context, chunks: Iterator[Any]) -> Iterator[Any]:
    """A run's chunks, each taken in the run's context (where its nodes find the run)."""
    while True:
        try:
            chunk = context.run(next, chunks)
        except StopIteration:
            return
        yield chunk


async def _aeach(
    context: contextvars.Context,
    astream: Callable[..., AsyncIterator[Any]],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> AsyncIterator[Any]:
    """A run's chunks, each awaited in the run's context (where its nodes find the run)."""
    chunks = context.run(astream, *args, **kwargs)
    while True:
        try:
            chunk = await asyncio.create_task(_next(chunks), context=context)
        except StopAsyncIteration:
            return
        yield chunk


async def _next(chunks: AsyncIterator[Any]) -> Any:
    return await anext(chunks)
