"""Hook processes without threads: spawned in the calling thread, watched through fds.

``anyio.open_process`` on asyncio (Python 3.11) starts a thread per child to wait for
it; when that thread cannot start (``can't start new thread`` under memory pressure),
asyncio leaves the child running, unwatched, with its pipes open. Here a child is
started with ``subprocess.Popen`` in the calling thread (as asyncio does too), its exit
is awaited on a pidfd (Linux; elsewhere by polling), and its pipes are non-blocking fds
read and written with ``anyio.wait_readable``/``wait_writable``: no thread at any point,
and a failure after the fork kills the child's process group, reaps the child and closes
every fd before the error goes up. The command runner (a process per event) and
``HookProcess`` (a persistent hook's process) both start theirs here.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import signal
import subprocess
from collections.abc import Mapping, Sequence
from typing import IO, Final, final

import anyio

from orchestra.skills._processes.environment import shield_environment
from orchestra.skills._processes.reaper import available, reaper_argv
from orchestra.skills._protocol.result import HookRunError

__all__ = ["Child", "kill_group", "spawn"]

_POLL: Final = 0.005  # seconds between exit checks where there is no pidfd
_HAS_PIDFD: Final = hasattr(os, "pidfd_open")


def kill_group(pgid: int, sig: signal.Signals) -> None:
    """Send ``sig`` to a process group that may be gone already."""
    # ProcessLookupError: the group is gone; PermissionError: macOS says so of zombies.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _pipe_fd(pipe: IO[bytes] | None) -> int:
    assert pipe is not None  # every pipe is requested
    os.set_blocking(pipe.fileno(), False)
    return pipe.fileno()


@final
class Child:
    """A running hook process, leader of its own process group, with three pipes.

    Attributes:
        pid: its process id (also its process group id).
        stdin: the write end of its stdin, non-blocking.
        stdout: the read end of its stdout, non-blocking.
        stderr: the read end of its stderr, non-blocking.
        reaped: it runs under the reaper (``lifeline`` is the write end of the pipe
            whose end of file tells the reaper that orchestra is gone).
    """

    __slots__ = ("_lifeline", "_pidfd", "_popen", "pid", "reaped", "stderr", "stdin", "stdout")

    def __init__(self, popen: subprocess.Popen[bytes], *, lifeline: int = -1) -> None:
        self._popen = popen
        self.pid = popen.pid
        self.reaped = lifeline >= 0
        self._lifeline = -1  # owned once the child is set up (else the caller closes it)
        self._pidfd: int | None = None
        try:
            if _HAS_PIDFD:
                self._pidfd = os.pidfd_open(popen.pid)
            self.stdin = _pipe_fd(popen.stdin)
            self.stdout = _pipe_fd(popen.stdout)
            self.stderr = _pipe_fd(popen.stderr)
        except BaseException:
            kill_group(self.pid, signal.SIGKILL)
            popen.wait()
            self.close()
            raise
        self._lifeline = lifeline

    @property
    def returncode(self) -> int | None:
        """The exit status once reaped (negative: the signal that killed it), else None."""
        return self._popen.returncode

    async def wait(self) -> int:
        """Wait for the child to exit and reap it; answer its exit status."""
        if self._popen.returncode is None:
            if self._pidfd is not None:
                await anyio.wait_readable(self._pidfd)
            else:
                while self._popen.poll() is None:  # noqa: ASYNC110 -- no pidfd: poll
                    await anyio.sleep(_POLL)
        return self._popen.wait()  # it has exited: this only reaps it

    async def exited(self, seconds: float) -> int | None:
        """Wait up to ``seconds`` for the child to exit: its exit status, or None."""
        with anyio.move_on_after(seconds):
            return await self.wait()
        return None

    def wait_now(self, seconds: float | None) -> int | None:
        """Wait for the child outside any event loop, at most ``seconds``; None if it lives."""
        try:
            return self._popen.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            return None

    def kill(self) -> None:
        """Kill the child's process group at once (SIGKILL); the child is left to reap.

        A child run under the reaper is asked to stop (SIGTERM to the reaper, which
        kills everything below it, then exits): see ``kill_hard`` if it does not.
        """
        if self.reaped:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGTERM)
        else:
            kill_group(self.pid, signal.SIGKILL)

    def kill_hard(self) -> None:
        """SIGKILL to the child's group, the reaper's too (what it started dies with it)."""
        kill_group(self.pid, signal.SIGKILL)

    def close_stdin(self) -> None:
        """Close the write end of the child's stdin (it reads end of file)."""
        stdin = self._popen.stdin
        if stdin is not None:
            stdin.close()

    def close_pipes(self) -> None:
        """Close the child's three pipes (no task may still wait on one)."""
        for pipe in (self._popen.stdin, self._popen.stdout, self._popen.stderr):
            if pipe is not None:
                pipe.close()

    def close(self) -> None:
        """Close every fd held for the child (no task may still wait on one)."""
        self.close_pipes()
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None
        if self._lifeline >= 0:
            os.close(self._lifeline)
            self._lifeline = -1


def spawn(
    argv: Sequence[str], *, env: Mapping[str, str], cwd: str | None, reaped: bool = False
) -> Child:
    """Start ``argv`` in a new session (its own process group) with three pipes.

    Args:
        argv: the program and its arguments.
        env: its whole environment.
        cwd: its working folder.
        reaped: run it under the reaper (Linux; see ``_processes.reaper``): whatever it starts,
            ``setsid`` or not, ends with it, and its parent's environment is empty.

    Raises:
        HookRunError: it could not be started (``could not start: ...``); nothing is
            left behind (``Popen`` closes its pipes, and a child started before a later
            step failed is killed and reaped).
    """
    shield_environment()
    env_fd = lifeline = held = -1
    try:
        command = list(argv)
        reaped = reaped and available()
        if reaped:  # the reaper execs it: a program that is not there fails here, as Popen
            _check_program(command[0], env, cwd)
            env_fd = _environment_fd(env)
            lifeline, held = os.pipe()
            command = reaper_argv(lifeline, env_fd, command)
        popen = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env={} if reaped else dict(env),
            start_new_session=True,
            bufsize=0,
            pass_fds=(env_fd, lifeline) if reaped else (),
        )
        child, held = Child(popen, lifeline=held), -1
        return child
    except (OSError, ValueError, subprocess.SubprocessError) as exc:
        raise HookRunError(f"could not start: {exc}") from exc
    finally:
        for fd in (env_fd, lifeline, held):
            if fd >= 0:
                os.close(fd)


def _check_program(program: str, env: Mapping[str, str], cwd: str | None) -> None:
    """Raise what ``Popen`` would for a program that is not there or not executable."""
    if os.sep in program:
        path: str | None = os.path.join(cwd or "", program)
    else:
        path = shutil.which(program, path=env.get("PATH", os.defpath))
    if path is None or not os.path.exists(path):
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), program)
    if os.path.isdir(path) or not os.access(path, os.X_OK):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), program)


def _environment_fd(env: Mapping[str, str]) -> int:
    """A memory file holding ``env`` for the reaper (never its own environment)."""
    fd = os.memfd_create("orchestra-hook-env")
    try:
        data = b"\0".join(os.fsencode(f"{name}={value}") for name, value in env.items())
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.lseek(fd, 0, os.SEEK_SET)
    except BaseException:
        os.close(fd)
        raise
    return fd
