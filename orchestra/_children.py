"""What every process orchestra starts gets: a minimal environment, and no dump (Linux).

A hook is given a minimal environment (``skills`` adds what its config opens); so is
every helper process orchestra starts beside it (the hooks' reaper): none of them is
handed the agent's secrets, so none can leak them through its ``/proc/PID/environ``. A
helper that holds data of the run (a hook's environment) also marks itself
non-dumpable (``prctl(PR_SET_DUMPABLE, 0)``), so a process of the same user cannot read
its memory either (root still can).
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Mapping
from typing import Final

__all__ = ["MINIMAL_ENV", "minimal_environment", "prctl", "refuse_dumps"]

MINIMAL_ENV: Final = frozenset(
    {"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "TZ", "TERM", "TMPDIR"}
)
"""The parent's variables every process orchestra starts gets (and ``LC_*``)."""
PR_SET_DUMPABLE: Final = 4
PR_GET_DUMPABLE: Final = 3


def minimal_environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The variables of ``environ`` (default: this process's) a started process gets."""
    source = os.environ if environ is None else environ
    return {
        name: value
        for name, value in source.items()
        if name in MINIMAL_ENV or name.startswith("LC_")
    }


def prctl(option: int, value: int = 0) -> int:
    """``prctl(option, value)`` through libc (Linux; no maintained library wraps it)."""
    libc = ctypes.CDLL(None, use_errno=True)
    return int(libc.prctl(option, value, 0, 0, 0))


def refuse_dumps() -> None:
    """Mark this process non-dumpable: its environ, memory and fds closed to its user."""
    if sys.platform.startswith("linux"):
        prctl(PR_SET_DUMPABLE, 0)
