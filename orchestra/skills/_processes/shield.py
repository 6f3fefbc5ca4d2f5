"""The agent's environment kept from its hooks: the process made non-dumpable (Linux).

A hook gets a minimal environment, but it runs as the same user as the agent, and on
Linux any process of that user can read another's ``/proc/PID/environ`` (and, where
``kernel.yama.ptrace_scope`` is 0, its memory): ``cat /proc/$PPID/environ`` would hand a
hook every secret the minimal environment left out. Before the first hook process
(command, persistent or MCP server) starts, orchestra marks its own process
non-dumpable (``prctl(PR_SET_DUMPABLE, 0)``, as ``ssh-agent`` and ``gpg-agent`` do):
its ``/proc/PID/environ``, ``mem`` and ``fd`` are then closed to every process without
``CAP_SYS_PTRACE``, its hooks included. A hook process itself is dumpable again (the
flag is reset by ``execve``), so nothing changes for it.

What it costs: from then on, a debugger or profiler of the same user cannot attach to
the agent's process (``py-spy``, ``gdb -p``, ``strace -p``: run them with ``sudo``), and
the process leaves no core dump. ``ORCHESTRA_HOOKS_DUMPABLE=1`` in the agent's
environment keeps it dumpable, and so readable by its hooks. Root (and any process with
``CAP_SYS_PTRACE``) reads it anyway; elsewhere than Linux nothing is done.

The choice against the alternatives: a clean helper process that spawns hooks hides
``$PPID``'s environment but not the agent's own (a hook walks up ``/proc/*/stat``), and
toggling the flag only while hooks run leaves it open to a hook's detached child the
moment the last hook ends. The flag is set once and kept; it is a single system call.
No maintained library wraps ``prctl`` (``python-prctl`` is a C extension last released
in 2020), so it is called through ``ctypes`` (``orchestra._children``; the reaper,
``_processes.reaper``, has its own).
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Final

from orchestra._children import PR_GET_DUMPABLE, prctl, refuse_dumps

__all__ = ["KEEP_DUMPABLE", "dumpable", "shield_environment"]

KEEP_DUMPABLE: Final = "ORCHESTRA_HOOKS_DUMPABLE"
"""The variable that, set to ``1``, keeps the agent's process dumpable (for debuggers)."""
_LOCK: Final = threading.Lock()
_shielded = False


def dumpable() -> bool | None:
    """Whether this process is dumpable (None where ``prctl`` does not exist)."""
    if not sys.platform.startswith("linux"):
        return None
    return prctl(PR_GET_DUMPABLE) == 1


def shield_environment() -> None:
    """Mark this process non-dumpable, once, before a hook process starts (Linux).

    Its ``/proc/PID/environ`` is then unreadable to its hooks. Nothing is done
    elsewhere than Linux, or when ``ORCHESTRA_HOOKS_DUMPABLE=1`` is set.
    """
    global _shielded  # one flag for the process, as the kernel's
    with _LOCK:
        if _shielded:
            return
        if os.environ.get(KEEP_DUMPABLE) != "1":
            refuse_dumps()
        _shielded = True
