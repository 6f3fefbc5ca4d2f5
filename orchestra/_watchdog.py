"""``def`` hooks called inline, watched: one past its timeout is reported while it runs.

A ``def`` hook is called inline, as pluggy and Prefect call theirs: its cost is a
function call's. Python cannot interrupt it, so its timeout cannot stop it; instead one
watchdog thread looks at every thread's stack (``sys._current_frames()``, as a sampling
profiler or ``faulthandler`` does) a few times per smallest timeout, for calls of
``watched``: the hook, and what the call is about, are that call's arguments. It times a
call from the look that first saw it (the call itself reads no clock) and logs a warning
naming the hook, the moment and what the call is about once the call has run past its
timeout. A call it reported is late: when it returns, ``watched`` raises ``Late`` and
the caller makes it a hook error. A hook object with ``blocking = True`` is not called
here: its ``def`` hooks run in worker threads (``orchestra._offload``), where the
timeout abandons them.

What a call pays: the call of ``watched``, and a dict's truth test (whether the watchdog
reported a call that has not returned yet); the watchdog never hears of a call (no lock,
no queue, no clock, nothing stored), it only reads the stacks. A call is reported
between its timeout and its timeout plus two looks (a look every fifth of the smallest
timeout); a hook that calls hooks (a nested run, say) has each of its calls timed on its
own.
"""

from __future__ import annotations

import inspect
import logging
import os
import sys
import threading
import time
from types import FrameType
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from orchestra._calling import HookImpl

__all__ = ["Late", "watch", "watched"]

logger: Final = logging.getLogger("orchestra")

_MIN_TICK: Final = 0.01
_MAX_TICK: Final = 0.5

# A call the watchdog saw: the frame of its ``watched`` (kept, so that its id is not
# reused while the watchdog knows it), the hook, what it is about, when first seen.
_Seen = tuple[FrameType, "HookImpl", str | None, float]
_late: dict[int, _Seen] = {}  # id(frame) -> each call the watchdog reported, not returned yet
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

    The watchdog finds the call by this function's frame, and reads ``impl`` and
    ``subject`` there: keep their names.

    Raises:
        Late: the watchdog reported the call past its timeout while it ran (its answer
            is dropped).
    """
    answer = impl.fn(*args)
    if _late and (late := _late.pop(id(sys._getframe()), None)) is not None:
        if inspect.iscoroutine(answer):
            answer.close()  # dropped: no "never awaited" warning
        raise Late(
            f"returned after {time.monotonic() - late[3]:.2f} s, past its timeout of "
            f"{impl.timeout:g} s (a def hook cannot be interrupted: its answer is dropped)"
        )
    return answer


_WATCHED: Final = watched.__code__


def _running() -> list[FrameType]:
    """The frames of the ``watched`` calls under way in every other thread."""
    me = threading.get_ident()
    calls = []
    for ident, top in sys._current_frames().items():
        frame: FrameType | None = top if ident != me else None
        while frame is not None:
            if frame.f_code is _WATCHED:
                calls.append(frame)
            frame = frame.f_back
    return calls


def _look() -> None:
    seen: dict[int, _Seen] = {}  # id(frame) -> each call under way, first seen when
    reported: set[int] = set()
    ended: set[int] = set()  # reported calls seen returned at the last look
    while True:
        if _sooner.wait(_tick):
            _sooner.clear()
        now = time.monotonic()
        seen = {id(frame): seen.get(id(frame)) or _first(frame, now) for frame in _running()}
        late = {
            key
            for key, (_, impl, _, first) in seen.items()
            if impl.timeout is not None and now - first > impl.timeout
        }
        for key in ended:  # returned a look ago or more: its caller has asked _late
            _late.pop(key, None)
        ended = reported - late
        for key in late - reported:
            _late[key] = seen[key]
            _report(seen[key], now)
        reported = late  # a call no longer late (it returned) is forgotten


def _first(frame: FrameType, now: float) -> _Seen:
    """A call seen for the first time: its hook and subject, read in its frame."""
    arguments = frame.f_locals
    return (frame, arguments["impl"], arguments["subject"], now)


def _report(call: _Seen, now: float) -> None:
    _, impl, subject, first = call
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
    _late.clear()


os.register_at_fork(after_in_child=_forked)
