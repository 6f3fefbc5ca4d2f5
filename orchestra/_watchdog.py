"""``def`` hooks called inline, watched: one past its timeout is reported while it runs.

A ``def`` hook is called inline, as pluggy and Prefect call theirs: its cost is a
function call's. Python cannot interrupt it, so its timeout cannot stop it; instead,
while it runs, its call is in ``_running`` (by thread), and one watchdog thread looks
there a few times per smallest timeout and logs a warning naming the hook, the moment
and what the call is about as soon as a call is past its timeout. A call it reported is
late: when it returns, ``watched`` raises ``Late`` and the caller makes it a hook error.
A hook object with ``blocking = True`` is not called here: its ``def`` hooks run in worker
threads (``orchestra._offload``), where the timeout abandons them.

What a call pays: one ``time.monotonic()`` (a clock read costs as much as a hook call on
a loaded VM: the end of a call reads none, it asks ``_late``, empty but for a call the
watchdog reported) and two dict writes; the watchdog never hears of a call (no lock, no
queue), it only reads ``_running``.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from typing import Any, Final

__all__ = ["Late", "watch", "watched"]

logger: Final = logging.getLogger("orchestra")

_MIN_TICK: Final = 0.01
_MAX_TICK: Final = 0.5

# thread ident -> (label, subject, timeout, started) of the inline hook call running there
_Call = tuple[str, str | None, float, float]
_running: dict[int, _Call] = {}
# id -> the call, of each call the watchdog reported (the call kept: its id is not reused)
_late: dict[int, _Call] = {}
_lock = threading.Lock()
_tick = _MAX_TICK
_thread: threading.Thread | None = None


def watch(timeout: float) -> None:
    """Make sure the watchdog runs, looking often enough for calls bounded by ``timeout``.

    Called when a hook is compiled (never per call).
    """
    global _tick, _thread
    with _lock:
        _tick = min(_tick, max(_MIN_TICK, timeout / 5))
        if _thread is None or not _thread.is_alive():
            _thread = threading.Thread(target=_look, name="orchestra hook watchdog", daemon=True)
            _thread.start()


class Late(Exception):
    """A watched call returned after the watchdog reported it past its timeout."""

    def __init__(self, answer: Any, took: float) -> None:
        super().__init__(answer, took)
        self.answer = answer
        self.took = took


def watched(
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    label: str,
    subject: str | None,
    timeout: float,
) -> Any:
    """``fn(*args)`` inline, watched under ``timeout``; its answer.

    Raises:
        Late: the watchdog reported the call past its timeout while it ran.
    """
    ident = threading.get_ident()
    outer = _running.get(ident)  # a hook that calls hooks (a nested run, say)
    call = _running[ident] = (label, subject, timeout, time.monotonic())
    try:
        answer = fn(*args)
    finally:
        if outer is None:
            del _running[ident]
        else:
            _running[ident] = outer
    if _late and _late.pop(id(call), None) is call:
        raise Late(answer, time.monotonic() - call[3])
    return answer


def _look() -> None:
    reported: set[_Call] = set()
    ended: set[_Call] = set()  # reported calls seen returned at the last look
    while True:
        time.sleep(_tick)
        now = time.monotonic()
        running = list(_running.values())
        late = {call for call in running if now - call[3] > call[2]}
        for call in ended:  # returned a tick ago or more: its caller has asked _late
            _late.pop(id(call), None)
        ended = reported - late
        for call in late - reported:
            _late[id(call)] = call
            label, subject, timeout, started = call
            about = f" for {subject!r}" if subject is not None else ""
            logger.warning(
                "hook %s%s is still running after %.2f s, past its timeout of %g s: a def "
                "hook cannot be interrupted (blocking = True on the hook object runs its "
                "def hooks in worker threads, where the timeout abandons them)",
                label,
                about,
                now - started,
                timeout,
            )
        reported = late  # a call no longer late (it returned) is forgotten


def _forked() -> None:  # the child has no watchdog thread: the next compile starts one
    global _lock, _thread
    _lock = threading.Lock()
    _thread = None
    _running.clear()
    _late.clear()


os.register_at_fork(after_in_child=_forked)
