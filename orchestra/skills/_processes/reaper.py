"""The reaper: a small process between orchestra and a persistent hook, so nothing outlives it.

A process group is not a fence: a hook's child that calls ``setsid`` leaves it, and a
kill of the group misses it. The reaper closes that gap without a sandbox. It is a
child subreaper (``prctl(PR_SET_CHILD_SUBREAPER)``): every process the hook starts,
however it detaches, is re-parented to the reaper when its own parent dies, never to
init. When the hook exits, or when orchestra stops it (``SIGTERM`` to the reaper), or
when orchestra dies (the end of file of a pipe only orchestra holds open: unlike
``PR_SET_PDEATHSIG``, not fooled by the end of the thread that started it), the reaper
kills the hook's group and then every process still below it, until none is left, and
exits with the hook's status (a signal that killed the hook kills the reaper too).
Meanwhile it reaps what was re-parented to it, so no zombie piles up. The hook gets
``PR_SET_PDEATHSIG(SIGKILL)``, so it cannot outlive a reaper that was killed.

It is also a clean parent: started with an empty environment, it reads the hook's
from a file descriptor, so ``/proc/$PPID/environ`` of a persistent hook holds nothing.

Run as ``python -I -S _reaper.py LIFELINE_FD ENV_FD -- ARGV...`` (standard library only:
``-S`` skips ``site``, ``-I`` ignores the environment and the current folder). Linux
only: elsewhere a persistent hook is started without it.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import select
import signal
import sys
from collections.abc import Sequence
from typing import Final, NoReturn

__all__ = ["available", "main", "reaper_argv"]

_PR_SET_PDEATHSIG: Final = 1
_PR_SET_CHILD_SUBREAPER: Final = 36
_PR_SET_DUMPABLE: Final = 4
_NOT_FOUND: Final = 127
_REAP_EVERY: Final = 1.0  # seconds between reaping what was re-parented (zombies)
_POLL: Final = 0.05  # seconds between exit checks where there is no pidfd


class _Stop(Exception):
    """Orchestra asked the reaper to stop (``SIGTERM``), or died."""


def available() -> bool:
    """Whether the reaper can run here (Linux, an interpreter, this file on disk)."""
    return sys.platform.startswith("linux") and bool(sys.executable) and os.path.isfile(__file__)


def reaper_argv(lifeline: int, env_fd: int, argv: Sequence[str]) -> list[str]:
    """The command line that runs ``argv`` under the reaper.

    ``lifeline`` is the read end of a pipe whose write end only orchestra holds: its end
    of file means orchestra is gone. ``env_fd`` holds the hook's environment.
    """
    return [sys.executable, "-I", "-S", __file__, str(lifeline), str(env_fd), "--", *argv]


def _prctl(option: int, value: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(option, value, 0, 0, 0) != 0:
        error = ctypes.get_errno()
        raise OSError(error, os.strerror(error))


def _read_env(fd: int) -> dict[str, str]:
    """The hook's environment, ``NAME=value`` entries separated by NUL bytes."""
    data = bytearray()
    with os.fdopen(fd, "rb") as stream:
        data += stream.read()
    env = {}
    for entry in bytes(data).split(b"\0"):
        name, equals, value = entry.partition(b"=")
        if equals:
            env[os.fsdecode(name)] = os.fsdecode(value)
    return env


def _children() -> list[int]:
    """The reaper's own children (the hook, and what was re-parented to it)."""
    me = os.getpid()
    try:
        with open(f"/proc/{me}/task/{me}/children") as listing:
            return [int(pid) for pid in listing.read().split()]
    except OSError:  # a kernel without CONFIG_PROC_CHILDREN: read every process's parent
        found = []
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                with (
                    contextlib.suppress(OSError, IndexError, ValueError),
                    open(f"/proc/{entry}/stat") as stat,
                ):
                    if int(stat.read().rpartition(")")[2].split()[1]) == me:
                        found.append(int(entry))
        return found


def _kill_everything(hook: int) -> None:
    """Kill the hook's group, then every process below the reaper, until none is left."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(hook, signal.SIGKILL)
    while True:
        for pid in _children():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        try:
            os.waitpid(-1, 0)  # one dies; its children, if any, come to the reaper
        except ChildProcessError:
            return


def _start(argv: list[str], env: dict[str, str], lifeline: int) -> int:
    """Fork and exec the hook in a process group of its own; its pid."""
    reaper = os.getpid()
    pid = os.fork()
    if pid:
        return pid
    try:  # the child: its own group, killed with the reaper, default signals, then exec
        os.close(lifeline)
        os.setpgid(0, 0)
        _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != reaper:  # the reaper died before the signal was armed
            os._exit(_NOT_FOUND)
        for sig in (signal.SIGTERM, signal.SIGPIPE, signal.SIGXFSZ):
            signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, set())
        os.execvpe(argv[0], argv, env)
    except BaseException as exc:
        os.write(2, f"could not start: {exc}\n".encode())
    os._exit(_NOT_FOUND)


def _exit_as(status: int) -> NoReturn:
    """Exit as the hook did: with its code, or killed by its signal."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
        os._exit(128 + sig)  # a signal that does not kill: exit as sh reports one
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)


def _on_term(_signum: int, _frame: object) -> None:
    raise _Stop


def _wait(hook: int, lifeline: int) -> int:
    """The hook's wait status once it exits; what is re-parented meanwhile is reaped.

    Raises:
        _Stop: orchestra closed the lifeline (it died), or sent SIGTERM.
    """
    watched = [lifeline]
    if hasattr(os, "pidfd_open"):  # readable when the hook exits
        watched.append(os.pidfd_open(hook))
    every = _REAP_EVERY if len(watched) > 1 else _POLL
    while True:
        ready, _, _ = select.select(watched, [], [], every)
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:  # pragma: no cover - the hook is a child until reaped
                raise _Stop from None
            if pid == hook:
                return status
            if pid == 0:
                break
        if lifeline in ready:  # its end of file: orchestra is gone
            raise _Stop


def main(args: Sequence[str]) -> NoReturn:
    """Run the hook of ``args`` (``LIFELINE_FD ENV_FD -- ARGV...``) until it ends or is stopped."""
    lifeline, env_fd, _dashes, *argv = args
    # SIGTERM waits until there is a hook to stop (the hook unblocks it for itself).
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    signal.signal(signal.SIGTERM, _on_term)
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    _prctl(_PR_SET_DUMPABLE, 0)  # it holds the hook's environment (its exec is dumpable again)
    env = _read_env(int(env_fd))
    hook = _start(argv, env, int(lifeline))
    # The hook holds the pipes: the reaper lets go of them, so their ends mean the hook's.
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    try:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
        status = _wait(hook, int(lifeline))
    except _Stop:
        status = signal.SIGKILL  # a wait status: killed by SIGKILL
    _kill_everything(hook)
    _exit_as(status)


if __name__ == "__main__":
    main(sys.argv[1:])
