"""Each kind of hook call under its timeout (internal; ``orchestra._calling`` calls them).

=====================  ==============================================================
a hook                 how its timeout bounds it
=====================  ==============================================================
``def``, inline        ``orchestra._watchdog.watched``: called here, watched: past its
                       timeout it is reported while it runs, and when it returns it
                       is ``Late`` (it cannot be interrupted)
``def``, ``blocking``  ``offloaded``: in a worker thread (``orchestra._offload``); past
                       its timeout the caller stops waiting and the thread is abandoned
``async def``          ``stepped``: stepped once where it can be; one that waits goes on
                       under a deadline (``Waiting``) and is cancelled past it; one
                       without an await point (``may_suspend``) is awaited as it is:
                       it cannot suspend, so nothing could cancel it
=====================  ==============================================================
"""

from __future__ import annotations

import functools
import sys
import time
import types
from collections.abc import Awaitable, Coroutine, Generator
from types import CoroutineType
from typing import TYPE_CHECKING, Any, Final, cast, final

import anyio

from orchestra._offload import call_in_thread

if TYPE_CHECKING:
    from orchestra._calling import HookImpl

__all__ = ["HookTimeout", "Waiting", "may_suspend", "offloaded", "on_asyncio", "stepped"]

# What an await point compiles to (``await``, ``async with``, ``async for``): a coroutine
# whose code has none of these runs to its end in one step.
_SUSPENDS: Final = frozenset(
    {"GET_AWAITABLE", "BEFORE_ASYNC_WITH", "GET_AITER", "GET_ANEXT", "SEND", "YIELD_VALUE"}
)


def may_suspend(fn: object) -> bool:
    """Whether coroutine function ``fn`` has an await point (read once, when compiled).

    One without any never suspends: a deadline could not cancel it, and on trio a cancel
    scope per call costs more than the call (4-6 µs). A wrapper (a decorator) has its
    own code read, never what it wraps; anything without code of its own may suspend.
    """
    code = getattr(getattr(fn, "__func__", fn), "__code__", None)
    if code is None:
        return True
    import dis  # here: when a hook is compiled, never at import

    return any(ins.opname in _SUSPENDS for ins in dis.get_instructions(code))


class HookTimeout(Exception):
    """A hook call ran past its timeout (internal); its message says how, if not plain."""


_NOT_STEPPED: Final = object()


def stepped(impl: HookImpl, answer: Awaitable[Any], steps: bool) -> Any:
    """A hook's answer if it is there without waiting, else the ``Waiting`` for it.

    A cancel scope costs more than a whole ``async def`` hook that never waits (2-5 µs
    against 0.5), and cancellation can only reach a call where it waits. On asyncio a
    coroutine is stepped once here: one that finishes without waiting (most hooks) is
    done, with nothing to bound; one that waits goes on under ``asyncio.timeout``, armed
    then (asyncio keeps no stack of scopes, so a deadline armed after the first step is
    sound), the time already run taken off. trio can only interrupt a wait through a
    cancel scope opened before the hook's first step (which may open scopes of its own:
    ``trio.sleep`` does), so on trio, and for any awaitable that is not a coroutine, the
    call runs in one.
    """
    if not steps or type(answer) is not CoroutineType:
        return Waiting(impl, answer, _NOT_STEPPED, 0.0)
    started = time.monotonic()
    try:
        waits_on = answer.send(None)
    except StopIteration as done:
        return done.value
    return Waiting(impl, answer, waits_on, started)


def on_asyncio() -> bool:
    """Whether this task runs on asyncio (anyio's other backend is trio)."""
    # Asking asyncio or trio costs about 0.5 µs; trio not imported means asyncio.
    trio = sys.modules.get("trio")
    return trio is None or not trio.lowlevel.in_trio_run()


@final
class Waiting:
    """The rest of a hook call that waits, bounded by the hook's timeout (internal)."""

    __slots__ = ("answer", "impl", "started", "waits_on")

    def __init__(
        self, impl: HookImpl, answer: Awaitable[Any], waits_on: Any, started: float
    ) -> None:
        self.impl = impl
        self.answer = answer
        self.waits_on = waits_on  # what a coroutine stepped once waits on, or _NOT_STEPPED
        self.started = started

    def __await__(self) -> Generator[Any, Any, Any]:
        return self._bounded().__await__()

    async def _bounded(self) -> Any:
        limit = self.impl.timeout
        assert limit is not None  # a call without a timeout is awaited as it is
        if self.waits_on is _NOT_STEPPED:
            with anyio.move_on_after(limit):
                return await self.answer
            raise HookTimeout  # only reached when the timeout cancelled the call
        import asyncio  # loaded: its loop runs this (here: ``import orchestra`` stays light)

        deadline = asyncio.timeout(limit - (time.monotonic() - self.started))
        try:
            async with deadline:
                return await _resumed(cast("Coroutine[Any, Any, Any]", self.answer), self.waits_on)
        except TimeoutError:
            if deadline.expired():
                raise HookTimeout from None
            raise  # the hook's own TimeoutError: a hook error like any other


@types.coroutine
def _resumed(coro: Coroutine[Any, Any, Any], waits_on: Any) -> Generator[Any, Any, Any]:
    """Go on awaiting ``coro`` from where its first step suspended (on ``waits_on``).

    What ``await coro`` does after its first step: what the event loop sends or throws
    (cancellation included) goes to the coroutine, what it waits on goes to the loop.
    """
    while True:
        try:
            sent = yield waits_on
        except GeneratorExit:
            coro.close()
            raise
        except BaseException as exc:  # thrown into the hook where it waits, as await does
            step = functools.partial(coro.throw, exc)
        else:
            step = functools.partial(coro.send, sent)
        try:
            waits_on = step()
        except StopIteration as done:
            return done.value


async def offloaded(impl: HookImpl, args: tuple[Any, ...]) -> Any:
    """A ``blocking`` hook object's ``def`` hook in a worker thread, abandoned at its timeout."""
    if impl.timeout is None:
        return await call_in_thread(impl.fn, *args)
    with anyio.move_on_after(impl.timeout):
        return await call_in_thread(impl.fn, *args)
    raise HookTimeout  # only reached when the timeout cancelled the call
