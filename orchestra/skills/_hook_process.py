"""``HookProcess``: one long-lived hook process, its pipes read and written without a task.

The process is started in a process group of its own, with a pipe for each of stdin,
stdout and stderr, all non-blocking on orchestra's side. Reading waits on one
descriptor (an epoll or kqueue selector) that is readable when stdout, stderr or a
wake-up pipe is, so one waiting caller reads everything: stdout into complete lines,
stderr into a tail of its last 64 KiB (it never fills up and blocks the process).
Nothing here is tied to an event loop between calls.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from typing import Final

import anyio
import anyio.to_thread

from orchestra.skills._process import kill_group
from orchestra.skills._result import OUTPUT_LIMIT, HookRunError

__all__ = ["STDERR_KEPT", "HookProcess", "OutputEnded"]

STDERR_KEPT: Final = 64 * 1024
"""How much of a persistent process's stderr is kept: its last 64 KiB."""

_CHUNK: Final = 65536
_PIPE: Final = subprocess.PIPE


class OutputEnded(Exception):
    """The process's stdout ended: it exited, or closed it."""


class HookProcess:
    """One started hook process: its non-blocking pipes and what it printed so far.

    Args:
        popen: the process, started with three pipes.
        shell: it runs ``sh -c`` (for how its exit codes read).
        wake: the read end of a pipe that wakes its reader (or -1).
    """

    def __init__(self, popen: subprocess.Popen[bytes], shell: bool, wake: int) -> None:
        assert popen.stdin is not None
        assert popen.stdout is not None
        assert popen.stderr is not None
        self.popen = popen
        self.shell = shell
        self.stdin = popen.stdin.fileno()
        self.stdout = popen.stdout.fileno()
        self.stderr = popen.stderr.fileno()
        self.wake = wake
        for fd in (self.stdin, self.stdout, self.stderr):
            os.set_blocking(fd, False)
        self.selector = selectors.DefaultSelector()
        for fd in (self.stdout, self.stderr, wake):
            if fd >= 0:
                self.selector.register(fd, selectors.EVENT_READ)
        self.out = bytearray()
        self.err = bytearray()
        self.ended = False  # stdout ended
        self.woken = False  # a byte came on the wake-up pipe
        self.stdin_open = True
        self.killed = False

    @classmethod
    def start(
        cls, argv: Sequence[str], env: Mapping[str, str], cwd: str | None, wake: int = -1
    ) -> HookProcess:
        """Start ``argv`` in a process group of its own, with pipes for all three.

        Raises:
            HookRunError: it could not be started.
        """
        try:
            popen = subprocess.Popen(
                argv,
                stdin=_PIPE,
                stdout=_PIPE,
                stderr=_PIPE,
                cwd=cwd,
                env=env,
                start_new_session=True,
                bufsize=0,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            raise HookRunError(f"could not start: {exc}") from exc
        try:
            return cls(popen, list(argv[:2]) == ["/bin/sh", "-c"], wake)
        except BaseException:
            kill_group(popen.pid, signal.SIGKILL)
            popen.wait()
            raise

    @property
    def pid(self) -> int:
        """Its process id, also its process group's."""
        return self.popen.pid

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
        view = memoryview(data)
        try:  # noqa: SIM105 -- once per event: a plain try is the cheaper
            view = view[os.write(self.stdin, view) :]
        except BlockingIOError:
            pass
        return view if view else None

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

    async def lines(self) -> list[bytes]:
        """The next complete lines on stdout, waiting for at least one (or a wake-up).

        Raises:
            OutputEnded: stdout ended.
            HookRunError: a line longer than the output limit.
            anyio.ClosedResourceError: the process was killed meanwhile.
        """
        while True:
            end = self.out.rfind(b"\n")
            if end >= 0:
                lines = self.out[:end].split(b"\n")
                del self.out[: end + 1]
                return [bytes(line) for line in lines]
            if len(self.out) > OUTPUT_LIMIT:
                raise HookRunError("output over 1 MiB on stdout (one line)")
            if self.ended:
                raise OutputEnded
            if self.woken:
                self.woken = False
                return []
            await anyio.wait_readable(self.selector)
            if self.killed:
                raise anyio.ClosedResourceError
            self.drain()

    def drain(self) -> None:
        """Read what the pipes have now (of stderr, only the last 64 KiB is kept)."""
        if self.killed:
            return
        for key, _ in self.selector.select(0):
            try:
                data = os.read(key.fd, _CHUNK)
            except BlockingIOError:
                continue
            if key.fd == self.stdout:
                if data:
                    self.out += data
                else:
                    self.selector.unregister(key.fd)
                    self.ended = True
            elif key.fd == self.stderr:
                if data:
                    self.err += data
                    if len(self.err) > STDERR_KEPT:
                        del self.err[: len(self.err) - STDERR_KEPT]
                else:
                    self.selector.unregister(key.fd)
            else:
                self.woken = True

    def last_words(self) -> str:
        """What it wrote on stderr up to now, read to the end of what the pipe holds."""
        for _ in range(STDERR_KEPT // _CHUNK + 1):
            self.drain()
        return self.stderr_text()

    async def exited(self, seconds: float) -> int | None:
        """Wait up to ``seconds`` for the process to exit: its exit status, or None."""
        delay = 0.0005
        deadline = time.monotonic() + seconds
        while (code := self.popen.poll()) is None and time.monotonic() < deadline:
            await anyio.sleep(delay)
            delay = min(delay * 2, 0.05)
        return code

    def close_stdin(self, *, in_loop: bool = True) -> None:
        """Close the process's stdin: the end of its input, its cue to exit."""
        if self.stdin_open:
            self.stdin_open = False
            if in_loop:  # wake a writer waiting on it
                anyio.notify_closing(self.stdin)
            assert self.popen.stdin is not None
            with contextlib.suppress(OSError):
                self.popen.stdin.close()

    def kill(self, *, in_loop: bool = True) -> None:
        """Kill the process group and close the pipes (the child is left to reap).

        Args:
            in_loop: called on an event loop, whose waiters on the pipes are woken.
        """
        if self.killed:
            return
        self.killed = True
        kill_group(self.pid, signal.SIGKILL)
        self.close_stdin(in_loop=in_loop)
        if in_loop:  # wake a reader waiting on them
            anyio.notify_closing(self.selector)
        self.selector.close()
        for pipe in (self.popen.stdout, self.popen.stderr):
            assert pipe is not None
            pipe.close()

    async def reap(self) -> None:
        """Wait until the killed child is reaped; never cancelled."""
        with anyio.CancelScope(shield=True):
            if await self.exited(5.0) is None:
                await anyio.to_thread.run_sync(self.popen.wait)

    def reap_now(self) -> None:
        """Reap the killed child, outside any event loop (waiting at most a second)."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(timeout=1.0)
