"""The async policy called from CrewAI's synchronous hooks (internal).

CrewAI calls its tool-call hooks synchronously: from a worker thread (``kickoff``,
``kickoff_async``) or from the thread of a running event loop (``akickoff``, an async
flow method). Either way the policy runs on an event loop of its own, in a thread anyio's
``BlockingPortalProvider`` keeps while calls are in flight, so a hook never waits on the
loop it blocks (no deadlock), and each call is bounded by the policy's timeout.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Final, TypeVar

import anyio
import anyio.from_thread
from opentelemetry import trace

__all__ = ["call_blocking"]

_T = TypeVar("_T")
_PORTALS: Final = anyio.from_thread.BlockingPortalProvider()
"""One event-loop thread for every guarded crew while any call is in flight."""


def call_blocking(
    timeout: float | None,
    span: trace.Span | None,
    fn: Callable[..., Awaitable[_T]],
    *args: Any,
) -> _T:
    """``await fn(*args)`` on the policy's loop, under ``span``, within ``timeout`` seconds.

    Raises:
        TimeoutError: the call took longer than ``timeout``.
    """
    with _PORTALS as portal:
        result: _T = portal.call(_bounded, timeout, span, fn, args)
        return result


async def _bounded(
    limit: float | None,
    span: trace.Span | None,
    fn: Callable[..., Awaitable[_T]],
    args: tuple[Any, ...],
) -> _T:
    with anyio.fail_after(limit):
        if span is None:
            return await fn(*args)
        with trace.use_span(span, end_on_exit=False):
            return await fn(*args)
