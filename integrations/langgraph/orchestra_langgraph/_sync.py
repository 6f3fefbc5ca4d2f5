"""Awaiting a hook call from synchronous code: a sync graph's node or tool (internal).

``HookChain.call`` and ``HookRegistry.fire`` return awaitables. A sync graph runs its
nodes and its ``ToolNode``'s tools in worker threads with no event loop: the awaitable
runs on a loop of its own there (``asyncio.run``), or, when the thread already runs a loop,
on a short-lived helper thread.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

__all__ = ["blocking"]

_T = TypeVar("_T")


def blocking(make: Callable[[], Awaitable[_T]]) -> _T:
    """Run the awaitable ``make()`` returns to its end from synchronous code."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_awaited(make))
    context = contextvars.copy_context()  # the caller's run and span go with it
    with ThreadPoolExecutor(1, thread_name_prefix="orchestra-hooks") as pool:
        return pool.submit(context.run, asyncio.run, _awaited(make)).result()


async def _awaited(make: Callable[[], Awaitable[_T]]) -> _T:
    return await make()
