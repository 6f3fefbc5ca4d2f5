"""``HookProcess``: one long-lived hook process, its pipes read and written without a task.

The process is started as every hook process is (``_process.spawn``): in a process group
of its own, with a pipe for each of stdin, stdout and stderr, all non-blocking on
orchestra's side, its exit awaited on a pidfd. Reading waits on one
descriptor (an epoll object, or a kqueue selector) that is readable when stdout, stderr
or a wake-up pipe is, so one waiting caller reads everything: stdout into complete lines,
stderr into a tail of its last 64 KiB (it never fills up and blocks the process).
Nothing here is tied to an event loop between calls.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
import selectors
import sys
import termios
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Final, Protocol

import anyio

from orchestra.skills._processes.spawn import Child, spawn
from orchestra.skills._protocol.result import OUTPUT_LIMIT, HookRunError

__all__ = ["STDERR_KEPT", "HookProcess", "OutputEnded"]

STDERR_KEPT: Final = 64 * 1024
"""How much of a persistent process's stderr is kept: its last 64 KiB."""

_CHUNK: Final = 65536
# How long a reaper gets to kill what is below it and exit, before it is killed itself.
_REAPER_GRACE: Final = 2.0


class _Selector(Protocol):
    """What a hook process's reader needs of a selector: a descriptor to wait on."""

    def fileno(self) -> int: ...
    def unregister(self, fd: int, /) -> object: ...
    def close(self) -> None: ...


def _selector(
    fds: Iterable[int],
) -> tuple[_Selector, Callable[[float, int], list[tuple[int, int]]]]:
    """A selector readable when one of ``fds`` is, and how to ask which are: (fd, events).

    The second is called as ``ready(timeout, maxevents)``. On Linux an epoll object
    itself (``selectors`` adds a Python layer per call, and the call comes once per
    event); elsewhere the platform's ``selectors`` selector.
    """
    if hasattr(select, "epoll"):
        epoll = select.epoll()
        for fd in fds:
            epoll.register(fd, select.EPOLLIN)
        return epoll, epoll.poll
    chosen = selectors.DefaultSelector()
    for fd in fds:
        chosen.register(fd, selectors.EVENT_READ)

    def ready(timeout: float, _maxevents: int) -> list[tuple[int, int]]:
        return [(key.fd, events) for key, events in chosen.select(timeout)]

    return chosen, ready


class OutputEnded(Exception):
    """The process's stdout ended: it exited, or closed it."""


class HookProcess:
    """One started hook process: its non-blocking pipes and what it printed so far.

    Args:
        child: the process, started by ``_process.spawn`` (three non-blocking pipes, a
            process group of its own).
        shell: it runs ``sh -c`` (for how its exit codes read).
        wake: the read end of a pipe that wakes its reader (or -1).
    """

    def __init__(self, child: Child, shell: bool, wake: int) -> None:
        self.child = child
        self.shell = shell
        self.stdin = child.stdin
        self.stdout = child.stdout
        self.stderr = child.stderr
        self.wake = wake
        fds = [fd for fd in (self.stdout, self.stderr, wake) if fd >= 0]
        self.selector, self._ready = _selector(fds)
        self.ready_fd = self.selector.fileno()  # readable when one of ``fds`` is
        self._fds = len(fds)  # at most this many are ready (epoll's buffer: no bigger)
        self.out = bytearray()
        self.err = bytearray()
        self.ended = False  # stdout ended
        self.woken = False  # a byte came on the wake-up pipe
        self.stdin_open = True
        self.killed = False
        self.echoes_ids = False  # it answered with an ``id`` once: every answer must

    @classmethod
    def start(
        cls,
        argv: Sequence[str],
        env: Mapping[str, str],
        cwd: str | None,
        wake: int = -1,
        *,
        reaped: bool = False,
    ) -> HookProcess:
        """Start ``argv`` in a process group of its own, with pipes for all three.

        ``reaped``: under the reaper (see ``_processes.reaper``), so that whatever it starts ends
        with it, ``setsid`` children included.

        Raises:
            HookRunError: it could not be started.
        """
        child = spawn(argv, env=env, cwd=cwd, reaped=reaped)
        try:
            return cls(child, list(argv[:2]) == ["/bin/sh", "-c"], wake)
        except BaseException:
            child.kill()
            child.wait_now(None)
            child.close()
            raise

    @property
    def pid(self) -> int:
        """Its process id, also its process group's."""
        return self.child.pid

    def stderr_text(self) -> str:
        """What it wrote on stderr and nobody took yet (its last 64 KiB)."""
        return self.err.decode("utf-8", "replace")

    def take_stderr(self) -> str:
        """``stderr_text()``, then forget it."""
        if not self.err:
            return ""
        text = self.stderr_text()
        self.err.clear()
        return text

    def write_now(self, data: bytes) -> memoryview | None:
        """Write what the pipe takes now; what is left (None: all of it went).

        Raises:
            BrokenPipeError: the process closed its stdin (it exited, most likely).
        """
        try:
            written = os.write(self.stdin, data)
        except BlockingIOError:
            written = 0
        return memoryview(data)[written:] if written < len(data) else None

    async def write_rest(self, view: memoryview, deadline: float) -> None:
        """Write the rest of a line, waiting for the pipe, until ``deadline`` (monotonic).

        Raises:
            BrokenPipeError: the process closed its stdin.
            anyio.ClosedResourceError: the process was killed meanwhile.
            TimeoutError: the process did not read it in time.
        """
        with anyio.fail_after(max(deadline - time.monotonic(), 0)):
            while view:
                await anyio.wait_writable(self.stdin)
                if self.killed:
                    raise anyio.ClosedResourceError
                with contextlib.suppress(BlockingIOError):
                    view = view[os.write(self.stdin, view) :]

    def lines(self) -> list[bytes] | None:
        """The complete lines on stdout now; ``[]`` after a wake-up; None: none yet.

        With None, wait until ``ready_fd`` is readable, then ``drain()``.

        Raises:
            OutputEnded: stdout ended.
            HookRunError: a line longer than the output limit.
        """
        out = self.out
        end = out.rfind(b"\n")
        if end >= 0:
            lines = bytes(out[:end])
            del out[: end + 1]
            return lines.split(b"\n")
        if len(out) > OUTPUT_LIMIT:
            raise HookRunError("output over 1 MiB on stdout (one line)")
        if self.ended:
            raise OutputEnded
        if self.woken:
            self.woken = False
            return []
        return None

    def unread_input(self) -> bool:
        """Whether what was written to its stdin is still in the pipe, not read (Linux).

        An answer without an id while its event is unread cannot be that event's answer.
        """
        if not self.stdin_open or not sys.platform.startswith("linux"):
            return False
        try:
            count = fcntl.ioctl(self.stdin, termios.FIONREAD, bytes(4))
        except OSError:
            return False
        return int.from_bytes(count, sys.byteorder) > 0

    def stray(self) -> bytes | None:
        """What is on stdout now, read while no event is in flight (None: nothing)."""
        if self.killed:
            return None
        if not self.out:
            self.drain()
        return bytes(self.out) if self.out else None

    def drain(self) -> None:
        """Read what the pipes have now (of stderr, only the last 64 KiB is kept)."""
        if self.killed:
            return
        for fd, _ in self._ready(0, self._fds):
            try:
                data = os.read(fd, _CHUNK)
            except BlockingIOError:
                continue
            if fd == self.stdout:
                if data:
                    self.out += data
                else:
                    self.selector.unregister(fd)
                    self.ended = True
            elif fd == self.stderr:
                if data:
                    self.err += data
                    if len(self.err) > STDERR_KEPT:
                        del self.err[: len(self.err) - STDERR_KEPT]
                else:
                    self.selector.unregister(fd)
            else:
                self.woken = True

    def last_words(self) -> str:
        """What it wrote on stderr up to now, read to the end of what the pipe holds."""
        for _ in range(STDERR_KEPT // _CHUNK + 1):
            self.drain()
        return self.stderr_text()

    async def exited(self, seconds: float) -> int | None:
        """Wait up to ``seconds`` for the process to exit: its exit status, or None."""
        return await self.child.exited(seconds)

    def close_stdin(self, *, in_loop: bool = True) -> None:
        """Close the process's stdin: the end of its input, its cue to exit."""
        if self.stdin_open:
            self.stdin_open = False
            if in_loop:  # wake a writer waiting on it
                anyio.notify_closing(self.stdin)
            with contextlib.suppress(OSError):
                self.child.close_stdin()

    def kill(self, *, in_loop: bool = True) -> None:
        """Kill the process group and close the pipes (the child is left to reap).

        Args:
            in_loop: called on an event loop, whose waiters on the pipes are woken.
        """
        if self.killed:
            return
        self.killed = True
        self.child.kill()
        self.close_stdin(in_loop=in_loop)
        if in_loop:  # wake a reader waiting on them
            anyio.notify_closing(self.ready_fd)
        self.selector.close()
        self.child.close_pipes()

    async def reap(self) -> None:
        """Wait until the killed child is reaped; never cancelled.

        A reaper that has not stopped within ``_REAPER_GRACE`` is killed outright.
        """
        with anyio.CancelScope(shield=True):
            if self.child.reaped and await self.child.exited(_REAPER_GRACE) is None:
                self.child.kill_hard()
            await self.child.wait()
            self.child.close()

    def reap_now(self) -> None:
        """Reap the killed child, outside any event loop (waiting at most a second)."""
        if self.child.wait_now(1.0) is None and self.child.reaped:
            self.child.kill_hard()
            self.child.wait_now(1.0)
        self.child.close()
