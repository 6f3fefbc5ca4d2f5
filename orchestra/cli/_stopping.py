"""Stopping ``orchestra run``: Ctrl-C (SIGINT) or SIGTERM once, then once more.

| when                      | what the command does                                      |
|---------------------------|------------------------------------------------------------|
| first Ctrl-C or SIGTERM   | says at once that it stops, which tasks it waits for (sync |
|                           | bodies in threads cannot be interrupted) and that a second |
|                           | Ctrl-C abandons them; cancels the run (tasks end           |
|                           | CANCELLED, hook processes are killed, ``after_run`` runs,  |
|                           | the journal records what settled)                          |
| the run ended             | the summary, the resume command of a journaled run, then   |
|                           | waits for the abandoned bodies' threads, saying so         |
| a second Ctrl-C / SIGTERM | exits at once (no traceback), after the resume command     |
| exit status               | 128 + the first signal: 130 for Ctrl-C, 143 for SIGTERM    |

A sync task body runs in a worker thread, which Python cannot interrupt: a cancelled run
abandons it, and the interpreter would wait for it at exit, silently. The command waits
for it openly instead, and a second signal ends the process with ``os._exit``, which
waits for no thread (the journal is crash-safe: what settled is on disk).
"""

from __future__ import annotations

import asyncio
import os
import shlex
import signal
import sys
import threading
from collections.abc import Awaitable, Callable
from types import FrameType
from typing import Any, Final, NoReturn, TypeVar, final

import anyio

from orchestra import DAG, RunContext, RunResult, TaskHooks
from orchestra.dag._signals import signals_wake_the_loop

__all__ = ["Stop", "StopHooks", "run_stoppable"]

_T = TypeVar("_T")
_SIGNALS: Final = (signal.SIGINT, signal.SIGTERM)
_NAMES: Final[dict[int, str]] = {signal.SIGINT: "Ctrl-C", signal.SIGTERM: "SIGTERM"}


def _say(text: str) -> None:
    # the real stderr: rich's live progress redirects sys.stderr while it draws
    stream = sys.__stderr__ or sys.stderr
    stream.write(text + "\n")
    stream.flush()


@final
class Stop:
    """What a stopped ``orchestra run`` knows and says (one owner: the command).

    Attributes:
        signum: the first signal received, or None.
        run_id: the run's id once it started (``before_run``), else None.
        result: the run's result once ``after_run`` had it, else None.
        dag: the DAG being run, once built.
        threaded: the tasks whose sync body runs in a thread now.
        resume: how to resume the run (``--journal`` given), else None.
    """

    def __init__(self, resume: Callable[[str], str] | None) -> None:
        self.signum: int | None = None
        self.run_id: str | None = None
        self.result: RunResult | None = None
        self.dag: DAG | None = None
        self.threaded: set[str] = set()
        self._resume = resume
        self._hinted = False

    @property
    def code(self) -> int:
        """The exit status: 128 + the first signal."""
        return 128 + (self.signum or signal.SIGINT)

    def first(self, signum: int) -> None:
        """Say what stopping waits for; the caller cancels the run."""
        self.signum = signum
        waits = sorted(self.threaded)
        text = f"orchestra run: {_NAMES.get(signum, signum)}: stopping the run"
        if len(waits) == 1:
            text += (
                f"; waiting for {waits[0]} (a sync body in a thread cannot be interrupted): "
                "press Ctrl-C again to abandon it"
            )
        elif waits:
            text += (
                f"; waiting for {', '.join(waits)} (sync bodies in threads cannot be "
                "interrupted): press Ctrl-C again to abandon them"
            )
        else:
            text += " (press Ctrl-C again to exit at once)"
        _say(text)

    def resume_hint(self) -> None:
        """Print the command that resumes the run, when it is journaled."""
        if self._resume is not None and not self._hinted:
            self._hinted = True
            _say(f"resume it with: {self._resume(self.run_id or 'last')}")

    def abandon(self, signum: int, _frame: FrameType | None = None) -> None:
        """A second signal: exit at once, with the first signal's status."""
        waits = sorted(self.threaded)
        left = f", abandoning {', '.join(waits)}" if waits else ""
        _say(f"orchestra run: {_NAMES.get(signum, signum)} again: exiting now{left}")
        self.resume_hint()
        sys.stdout.flush()
        os._exit(self.code)

    def exit(self) -> NoReturn:
        """End a stopped run's command: the resume command, the threads, the status."""
        if self.signum == signal.SIGTERM:
            _say("orchestra run: terminated by SIGTERM, the run was cancelled")
        self.resume_hint()
        self.wait_for_threads()
        sys.exit(self.code)

    def wait_for_threads(self) -> None:
        """Wait for the threads of abandoned bodies; a second signal exits at once."""
        others = [
            t for t in threading.enumerate() if t is not threading.current_thread() and not t.daemon
        ]
        if not any(t.is_alive() for t in others):
            return
        if self.threaded:
            _say(
                f"waiting for {', '.join(sorted(self.threaded))} to finish (press Ctrl-C "
                "again to abandon)"
            )
        for thread in others:
            while thread.is_alive():  # a join with a timeout lets the handler run
                thread.join(0.1)


@final
class StopHooks(TaskHooks):
    """Keeps the run's id and result for a stopped run's summary (internal)."""

    def __init__(self, stop: Stop) -> None:
        self.stop = stop

    def before_run(self, ctx: RunContext) -> None:
        """Keep the run's id (for the resume command)."""
        self.stop.run_id = ctx.run_id

    def after_run(self, ctx: RunContext, result: RunResult) -> None:
        """Keep the result (the run may end cancelled, without returning it)."""
        self.stop.result = result


def resume_command(run_id: str) -> str:
    """This command line with ``--resume RUN_ID`` in place of any ``--resume``."""
    args = list(sys.argv[1:])
    kept: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
            continue
        if arg == "--resume":
            skip = True
            continue
        if not arg.startswith("--resume="):
            kept.append(arg)
    return shlex.join(["orchestra", *kept, "--resume", run_id])


def run_stoppable(stop: Stop, fn: Callable[..., Awaitable[_T]], *args: Any) -> _T | None:
    """``anyio.run(fn, *args)`` (asyncio) that the first SIGINT or SIGTERM cancels.

    The command's own handlers hold from before the event loop starts to the process's
    exit, so no signal falls between two handlers (a second Ctrl-C pressed as the run
    winds down was lost when a signal receiver of the loop's was closed): the first signal
    cancels the work from the loop, where what it waits for is said; a second exits at once.

    Returns:
        What ``fn`` returned, or None when a signal cancelled it (``stop.signum``).
    """
    done: list[_T] = []
    failed: list[BaseException] = []
    wake: list[Callable[[], object]] = []  # the running loop's way in: set while it runs

    def on_signal(signum: int, frame: FrameType | None) -> None:
        if stop.signum is not None:
            stop.abandon(signum, frame)
        stop.signum = signum
        for call in wake:
            call()

    async def main() -> None:
        work = anyio.CancelScope()

        def stopping() -> None:
            if stop.signum is not None:
                stop.first(stop.signum)
                work.cancel()

        loop = asyncio.get_running_loop()
        wake.append(lambda: loop.call_soon_threadsafe(stopping))
        stopping()  # a signal before the loop ran
        with work, signals_wake_the_loop(loop):  # a signal to a body's thread
            try:
                done.append(await fn(*args))
            except anyio.get_cancelled_exc_class():
                raise
            except BaseException as exc:  # kept aside, as the runner would format it
                failed.append(exc)
        wake.clear()

    previous = {signum: signal.signal(signum, on_signal) for signum in _SIGNALS}
    try:
        anyio.run(main, backend="asyncio")
    finally:
        if stop.signum is None:  # nothing stopped: the program's own handlers again
            for signum, handler in previous.items():
                signal.signal(signum, signal.SIG_DFL if handler is None else handler)
    if failed:
        raise failed[0]
    return done[0] if done else None
