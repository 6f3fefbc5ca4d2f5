"""``def`` hooks called inline, watched: one past its timeout is reported while it runs.

A ``def`` hook is called inline, as pluggy and Prefect call theirs: its cost is a
function call's. Python cannot interrupt it, so its timeout cannot stop it; instead,
while it runs, its call (the hook and what it is about) is in one dict of the calls
under way, in every thread, and one watchdog thread copies that dict a few times per
smallest timeout. It times a call from the look that first saw it (the call itself
reads no clock) and logs a warning naming the hook, the moment and what the call is
about once the call has run past its timeout. A call it reported is late: when it
returns, ``watched`` raises ``Late`` and the caller makes it a hook error. A hook
object with ``blocking = True`` is not called here: its ``def`` hooks run in worker
threads (``orchestra._offload``), where the timeout abandons them.

What a call pays: a tuple, and its entry put in the dict and taken out (a hook that
calls hooks, a nested run say, has each of its calls there: each is timed on its own);
the watchdog never hears of a call (no lock, no queue, no clock), it only copies the
dict. A call is reported between its timeout and its timeout plus two looks (a
look every fifth of the smallest timeout).

The watchdog reads that dict, never the threads' frames: walking another thread's
frames (``sys._current_frames()`` and ``f_back``) while it runs crashed CPython 3.11
(a segmentation fault seen here under load; CPython issues 99110 and 111363).
"""

from __future__ import annotations

import inspect
import logging
import os
import threading
import time
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from orchestra._calling import HookImpl

__all__ = ["Late", "watch", "watched"]

logger: Final = logging.getLogger("orchestra")

_MIN_TICK: Final = 0.01
_MAX_TICK: Final = 0.5

# (the hook, what the call is about) of an inline hook call; a new tuple per call, so
# the watchdog tells two calls apart by identity
_Call = tuple["HookImpl", str | None]
_under_way: dict[int, _Call] = {}  # id -> each watched call under way, in every thread
# id -> the call and when the watchdog first saw it, of each call it reported (the call
# kept: its id is not reused)
_late: dict[int, tuple[_Call, float]] = {}
_lock = threading.Lock()
_sooner = threading.Event()  # set when the tick shrinks: the watchdog looks again at once
_tick = _MAX_TICK
_thread: threading.Thread | None = None


def watch(timeout: float) -> None:
    """Make sure the watchdog runs, looking often enough for calls bounded by ``timeout``.

    Called when a hook is compiled (never per call).
    """
    global _tick, _thread
    with _lock:
        tick = max(_MIN_TICK, timeout / 5)
        if tick < _tick:
            _tick = tick
            _sooner.set()
        if _thread is None or not _thread.is_alive():
            _thread = threading.Thread(target=_look, name="orchestra hook watchdog", daemon=True)
            _thread.start()


class Late(Exception):
    """A watched call returned after the watchdog reported it past its timeout."""


def watched(impl: HookImpl, args: tuple[Any, ...], subject: str | None) -> Any:
    """``impl``'s ``def`` hook called here with ``args``, watched under its timeout; its answer.

    Raises:
        Late: the watchdog reported the call past its timeout while it ran (its answer
            is dropped).
    """
    if impl.timeout is None:
        return impl.fn(*args)
    call = (impl, subject)
    key = id(call)  # unique while the call is in the dict (the dict keeps it)
    _under_way[key] = call
    try:
        answer = impl.fn(*args)
    finally:
        _under_way.pop(key, None)  # (None: a hook that forked, in the child)
    if _late and (late := _late.pop(key, None)) is not None and late[0] is call:
        if inspect.iscoroutine(answer):
            answer.close()  # dropped: no "never awaited" warning
        raise Late(
            f"returned after {time.monotonic() - late[1]:.2f} s, past its timeout of "
            f"{impl.timeout:g} s (a def hook cannot be interrupted: its answer is dropped)"
        )
    return answer


def _look() -> None:
    seen: dict[int, tuple[_Call, float]] = {}  # id -> each running call, first seen when
    reported: set[int] = set()
    ended: set[int] = set()  # reported calls seen returned at the last look
    while True:
        if _sooner.wait(_tick):
            _sooner.clear()
        now = time.monotonic()
        running = _under_way.copy()  # one C call: no other thread runs meanwhile
        seen = {key: seen.get(key) or (call, now) for key, call in running.items()}
        late = {key for key, (call, first) in seen.items() if now - first > _timeout(call)}
        for key in ended:  # returned a look ago or more: its caller has asked _late
            _late.pop(key, None)
        ended = reported - late
        for key in late - reported:
            _late[key] = seen[key]
            _report(*seen[key], now)
        reported = late  # a call no longer late (it returned) is forgotten


def _timeout(call: _Call) -> float:
    timeout = call[0].timeout
    assert timeout is not None  # a call without one is not watched
    return timeout


def _report(call: _Call, first: float, now: float) -> None:
    impl, subject = call
    about = f" for {subject!r}" if subject is not None else ""
    logger.warning(
        "hook %s%s is still running after %.2f s, past its timeout of %g s: a def "
        "hook cannot be interrupted (blocking = True on the hook object runs its "
        "def hooks in worker threads, where the timeout abandons them)",
        impl.label,
        about,
        now - first,
        impl.timeout,
    )


def _forked() -> None:  # the child has no watchdog thread: the next compile starts one
    global _lock, _sooner, _thread
    _lock = threading.Lock()
    _sooner = threading.Event()
    _thread = None
    _under_way.clear()  # the parent's calls: none runs in the child
    _late.clear()


os.register_at_fork(after_in_child=_forked)
