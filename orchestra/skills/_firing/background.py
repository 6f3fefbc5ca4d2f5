"""Background hooks: Claude Code's ``async`` and ``asyncRewake``, run without waiting.

``fire`` starts them and returns at once. They run in an event loop of their own (one
thread per registry, started with the first of them, through anyio's blocking portal),
so a caller's loop ending does not stop them, and they do not hold up its events. At
most ``max_parallel_hooks`` of them run at once (the rest wait their turn, as command
hooks do). When one ends, what it says for the agent waits for the next ``fire`` of the
session that started it (the event's ``session_id``), which adds it to its outcome
(Claude Code delivers it on the next turn); another session never sees it:

- an ``async`` hook's ``additionalContext`` and ``systemMessage`` go to ``messages``;
- an ``asyncRewake`` hook that exits 2 gives its stderr (or stdout), after its
  ``rewakeMessage``, to ``messages``, and its ``rewakeSummary`` to ``system_message``.

``aclose()`` cancels those still running (their processes are killed, as Claude Code's
``-p`` mode does at teardown); each start runs its own processes (no de-duplication).
"""

from __future__ import annotations

import collections
import contextlib
import functools
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from typing import Any

import anyio
import anyio.from_thread
import attrs

from orchestra.skills._firing.call import attempt
from orchestra.skills._firing.outcome import HookOutcome, HookRecord
from orchestra.skills._hooks.spec import HookCall, HookSpec
from orchestra.skills._persistent.waiters import Gate

__all__ = ["BackgroundHooks", "delivered"]


def delivered(record: HookRecord) -> tuple[tuple[str, ...], str | None]:
    """What a finished background hook says: (messages for the agent, one for the user)."""
    result, hook = record.result, record.hook
    if result is None:
        return (), None
    if getattr(hook, "rewake", False):
        if result.exit_code != 2:
            return (), None
        text = result.reason or ""
        message = getattr(hook, "rewake_message", None)
        return (f"{message}\n\n{text}" if message else text,), getattr(hook, "rewake_summary", None)
    messages = list(result.messages)
    if result.system_message:
        messages.append(result.system_message)
    return tuple(messages), None


class BackgroundHooks:
    """The background hooks of one registry: its only writer of what they delivered.

    Args:
        max_parallel: how many of them run at once (the registry's ``max_parallel_hooks``).

    The lock guards this object's fields only: it is never held while waiting for the
    background loop (whose threads call ``_finished``), so the two never wait on each other.
    """

    def __init__(self, max_parallel: int = 32) -> None:
        self._lock = threading.Lock()
        self._max_parallel = max_parallel
        self._stack: contextlib.ExitStack | None = None
        self._portal: anyio.from_thread.BlockingPortal | None = None
        self._slots = Gate(max_parallel)  # used in the background loop's thread only
        self._running: set[Future[HookRecord]] = set()
        self._done: dict[str, collections.deque[HookRecord]] = {}
        self.waiting = False
        """Whether finished hooks wait to be delivered (read by ``fire`` on every event)."""

    def __len__(self) -> int:
        return len(self._running)

    def start(self, hooks: tuple[HookSpec, ...], call: HookCall) -> tuple[HookSpec, ...]:
        """Start the background hooks of ``hooks`` on ``call``; answer the others."""
        session = str(call.data.get("session_id"))
        for hook in hooks:
            if hook.background:
                self._start(session, functools.partial(attempt, hook, call, self._slots))
        return tuple(hook for hook in hooks if not hook.background)

    def _start(self, session: str, run: Callable[[], Awaitable[HookRecord]]) -> None:
        """Run ``run()`` in the background loop; its record waits for ``session``."""
        with self._lock:
            if self._portal is None:
                self._stack = contextlib.ExitStack()
                self._portal = self._stack.enter_context(anyio.from_thread.start_blocking_portal())
            portal = self._portal
        # Not under the lock: the portal waits for its loop, whose finished hooks take it.
        future = portal.start_task_soon(run)
        with self._lock:
            self._running.add(future)
        future.add_done_callback(functools.partial(self._finished, session))

    def _finished(self, session: str, future: Future[HookRecord]) -> None:
        with self._lock:
            self._running.discard(future)
            if future.cancelled() or future.exception() is not None:
                return
            self._done.setdefault(session, collections.deque()).append(future.result())
            self.waiting = True

    def take(self, session: str) -> tuple[HookRecord, ...]:
        """The records of ``session``'s hooks that finished by now, each taken once.

        An event takes them before its own hooks start, so what its own background hooks
        say comes with the session's next event, never with the one that started them.
        """
        with self._lock:
            done = self._done.pop(session, None)
            self.waiting = bool(self._done)
        return tuple(done or ())

    def give_back(self, session: str, done: tuple[HookRecord, ...]) -> None:
        """Put taken records back first in line (their event never got an outcome)."""
        if not done:
            return
        with self._lock:
            self._done.setdefault(session, collections.deque()).extendleft(reversed(done))
            self.waiting = True

    @staticmethod
    def deliver(outcome: HookOutcome, done: tuple[HookRecord, ...]) -> HookOutcome:
        """``outcome`` with what the taken records said added (each said once)."""
        messages: list[str] = []
        shown: list[str] = []
        for record in done:
            said, user = delivered(record)
            messages.extend(said)
            if user:
                shown.append(user)
        if not messages and not shown:
            return outcome
        if outcome.system_message:
            shown.insert(0, outcome.system_message)
        changes: dict[str, Any] = {"messages": (*outcome.messages, *messages)}
        if shown:
            changes["system_message"] = "\n".join(shown)
        return attrs.evolve(outcome, **changes)

    def _stop(self) -> None:
        with self._lock:
            stack, self._stack, self._portal = self._stack, None, None
            running = list(self._running)
            self._slots = Gate(self._max_parallel)  # the next loop's: none waits in it
        for future in running:
            future.cancel()
        if stack is not None:
            stack.close()  # waits for the cancelled hooks to have killed their processes

    async def aclose(self) -> None:
        """Cancel the hooks still running and stop the background loop."""
        if self._portal is not None:
            await anyio.to_thread.run_sync(self._stop)

    def kill(self) -> None:
        """``aclose`` from a finalizer (blocks the thread until they are gone)."""
        if self._portal is not None:
            self._stop()
