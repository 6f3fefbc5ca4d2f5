"""Driving an awaitable of hook calls to its end from synchronous code (internal).

``HookChain.run_now`` is its public face, for engines that call hooks from synchronous
code (Hamilton's driver, Prefect's sync tasks): ``HookChain.call`` returns an awaitable.
When every hook implementing a moment is a plain ``def``, the coroutine never suspends:
it is driven to its end right here, with no event loop at all (a few microseconds). A
moment with an ``async def`` hook runs on an event loop of its own (``asyncio.run``), or,
when this thread already runs a loop (a notebook), on a short-lived helper thread.
"""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

__all__ = ["run_now"]

_T = TypeVar("_T")


def run_now(awaitable: Awaitable[_T], *, needs_loop: bool) -> _T:
    """Run ``awaitable`` to its end from synchronous code and return its value.

    Args:
        awaitable: what to run, e.g. ``chain.call(moment, ctx)``.
        needs_loop: whether it may suspend (``chain.awaits(moment)``): then it runs on
            an event loop of its own; else it is driven here, without one.

    Raises:
        RuntimeError: ``needs_loop=False`` but the awaitable suspended.
    """
    if not needs_loop:
        steps = awaitable.__await__()
        try:
            steps.send(None)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]  # the awaitable's own value
        steps.close()
        raise RuntimeError(
            "a synchronous hook suspended (it returned an awaitable?): declare it async def"
        )
    import asyncio  # here: ``import orchestra`` stays light

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_awaited(awaitable))
    with ThreadPoolExecutor(1, thread_name_prefix="orchestra-hooks") as pool:
        # the caller's context variables (a run, a span) go with it, as they would on a task
        context = contextvars.copy_context()
        return pool.submit(context.run, asyncio.run, _awaited(awaitable)).result()


async def _awaited(awaitable: Awaitable[_T]) -> _T:
    return await awaitable
