"""Leak checks for hook runners: orphan processes, zombies and file descriptors.

Every hook a test starts gets ``ORCHESTRA_TEST_MARK=<uuid>`` in its environment, which
its children inherit; a live process that carries the mark after the runner returned
is an orphan. A zombie is a child of the test process that nobody reaped.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import anyio

MARK_VAR = "ORCHESTRA_TEST_MARK"

# How long the polls below wait for processes to settle. They return as soon as the state
# is reached, so a generous cap costs nothing when all is well; 5 s failed on a loaded
# 2-core machine (a killed process waits for a CPU to act on its SIGKILL).
SETTLE_S = 30


def _state(stat: str) -> tuple[str, int, int]:
    """Answer (state, ppid, pgrp) from a /proc/PID/stat line."""
    fields = stat.rpartition(")")[2].split()
    return fields[0], int(fields[1]), int(fields[2])


def _processes() -> list[tuple[int, str, int, int]]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                state, ppid, pgrp = _state((entry / "stat").read_text())
            except (OSError, IndexError, ValueError):
                continue  # gone meanwhile
            found.append((int(entry.name), state, ppid, pgrp))
    return found


def marked(mark: str) -> list[int]:
    """Live (not zombie) processes whose environment carries ``mark``."""
    needle = f"{MARK_VAR}={mark}".encode()
    live = []
    for pid, state, _, _ in _processes():
        if state in "ZX":
            continue
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes()
        except OSError:
            continue
        if needle in environ.split(b"\0"):
            live.append(pid)
    return live


async def marked_as(mark: str, expected: set[int]) -> set[int]:
    """The processes carrying ``mark``, once they are ``expected`` (waiting up to ``SETTLE_S``).

    A process that was just started shows no environment while it execs.
    """
    with anyio.move_on_after(SETTLE_S):
        while set(marked(mark)) != expected:  # noqa: ASYNC110 -- polling /proc
            await anyio.sleep(0.01)
    return set(marked(mark))


def group_alive(pgid: int) -> bool:
    """Whether a process of group ``pgid`` is still running (zombies do not count)."""
    return any(pgrp == pgid and state not in "ZX" for _, state, _, pgrp in _processes())


async def group_gone(pgid: int) -> bool:
    """Whether the group ``pgid`` is gone, waiting (up to ``SETTLE_S``) for killed ones to die.

    SIGKILL cannot be caught, but a process on another CPU takes a moment to act on it.
    """
    with anyio.move_on_after(SETTLE_S):
        while group_alive(pgid):  # noqa: ASYNC110 -- polling /proc, nothing to wait on
            await anyio.sleep(0.01)
    return not group_alive(pgid)


def children(pid: int) -> set[int]:
    """The live (not zombie) child processes of ``pid``.

    Read from each process's parent in /proc/PID/stat, not /proc/PID/task/TID/children,
    which vanishes when that thread ends while it is read (a thread pool's, say).
    """
    return {child for child, state, ppid, _ in _processes() if ppid == pid and state not in "ZX"}


def zombies() -> list[int]:
    """Children of this process that exited and were not reaped."""
    me = os.getpid()
    return [pid for pid, state, ppid, _ in _processes() if ppid == me and state == "Z"]


def open_fds() -> set[str]:
    """The file descriptors this process has open, with what each points at."""
    fds = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            fds.add(f"{fd} -> {os.readlink(f'/proc/self/fd/{fd}')}")
        except OSError:
            continue  # the directory's own fd, closed by now
    return fds


class LeakCheck:
    """Marks hook environments; ``await check()`` asserts nothing was left behind.

    Attributes:
        mark: the value of ``ORCHESTRA_TEST_MARK`` for this test.
        env: a full environment for hooks: this process's plus the mark.
    """

    def __init__(self) -> None:
        self.mark = uuid.uuid4().hex
        self.env = {**os.environ, MARK_VAR: self.mark}
        self.fds: set[str] = set()
        self.zombies: set[int] = set(zombies())  # those from before the test are not its own

    def snapshot(self) -> None:
        """Record the open file descriptors, and the zombies already here, to compare with.

        A zombie from before the test (another test's child, or a process reparented to
        this one, a child subreaper) is not this test's: only new ones count.
        """
        self.fds = open_fds()
        self.zombies = set(zombies())

    async def check(self) -> None:
        """Assert no orphan, no zombie and no new file descriptor.

        Closing a transport can take a loop iteration or two, and a killed process
        a moment to be gone: the check polls until clean, for at most ``SETTLE_S``.
        """
        with anyio.move_on_after(SETTLE_S):
            while marked(self.mark) or self._new_zombies() or open_fds() - self.fds:  # noqa: ASYNC110
                await anyio.sleep(0.01)  # polling /proc, nothing to wait on
        orphans, unreaped, leaked = marked(self.mark), self._new_zombies(), open_fds() - self.fds
        # A plain module: pytest does not rewrite these asserts, so they say it themselves.
        assert not orphans, f"orphan processes: {orphans}"
        assert not unreaped, f"unreaped children: {unreaped}"
        assert not leaked, f"leaked file descriptors: {sorted(leaked)}"

    def _new_zombies(self) -> list[int]:
        return [pid for pid in zombies() if pid not in self.zombies]
