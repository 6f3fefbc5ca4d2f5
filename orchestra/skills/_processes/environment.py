"""The environment of a hook process, and the agent's own kept from its hooks.

A hook process's: minimal by default, opened by the config. A command hook gets, from
the parent's environment, only ``PATH``, ``HOME``, ``USER``, ``LOGNAME``, ``SHELL``,
``LANG``, ``LC_*``, ``TZ``, ``TERM`` and ``TMPDIR`` (tox's ``pass_env`` idea): a secret
in the agent's environment (``AWS_SECRET_ACCESS_KEY``, ``OPENAI_API_KEY``) never reaches
a hook that was not given it. The config opens more:

- ``pass_env: [NAME, GLOB, ...]``: the parent's variables by name or glob (``AWS_*``,
  ``["*"]`` for all);
- ``env: {NAME: value}``: variables set by the config; ``${VAR}`` in a value is the
  parent's ``VAR`` (empty when unset).

Then the project variables, which the config cannot override: ``ORCHESTRA_EVENT``,
``ORCHESTRA_PROJECT_DIR`` and ``CLAUDE_PROJECT_DIR`` (the project folder), ``SKILL_DIR``
for a skill's hooks, and ``TRACEPARENT`` when traced.

The agent's own (``shield_environment``): the process made non-dumpable (Linux). A hook
gets a minimal environment, but it runs as the same user as the agent, and on
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

import fnmatch
import os
import re
import sys
import threading
from collections.abc import Mapping
from typing import Final

from orchestra._children import (
    MINIMAL_ENV,
    PR_GET_DUMPABLE,
    minimal_environment,
    prctl,
    refuse_dumps,
)
from orchestra.tracing import inject_env

__all__ = [
    "KEEP_DUMPABLE",
    "KEPT_MINIMAL",
    "MINIMAL_ENV",
    "dumpable",
    "hook_environment",
    "shield_environment",
]

KEPT_MINIMAL: Final = (
    "get orchestra's minimal environment (PATH, HOME, ...), not the whole one their "
    "own runner passes: a hook is not handed the run's secrets; "
    "load(..., pass_env=(NAME, ...)) passes named variables"
)
"""The end of the note a source's loader gives once where it keeps this difference."""

_GLOB_CHARS: Final = frozenset("*?[")
_REFERENCE: Final = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def _passed(environ: Mapping[str, str], pass_env: tuple[str, ...]) -> dict[str, str]:
    if "*" in pass_env:
        return dict(environ)
    passed = minimal_environment(environ)
    for pattern in pass_env:
        if _GLOB_CHARS.isdisjoint(pattern):
            if pattern in environ:
                passed[pattern] = environ[pattern]
        else:
            passed.update(
                (name, value)
                for name, value in environ.items()
                if fnmatch.fnmatchcase(name, pattern)
            )
    return passed


def hook_environment(
    *,
    event: str,
    project_dir: str,
    env: tuple[tuple[str, str], ...] = (),
    pass_env: tuple[str, ...] = (),
    project: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The whole environment of one hook process.

    Args:
        event: the event's name (``ORCHESTRA_EVENT``).
        project_dir: the project folder (``ORCHESTRA_PROJECT_DIR``, ``CLAUDE_PROJECT_DIR``).
        env: variables the config sets; ``${VAR}`` in a value reads the parent's.
        pass_env: names and globs of the parent's variables to pass on.
        project: more project variables (``SKILL_DIR``), which nothing overrides.
    """
    environ = os.environ
    result = _passed(environ, pass_env)
    for name, value in env:
        result[name] = _REFERENCE.sub(lambda match: environ.get(match.group(1), ""), value)
    result["ORCHESTRA_EVENT"] = event
    result["ORCHESTRA_PROJECT_DIR"] = project_dir
    result["CLAUDE_PROJECT_DIR"] = project_dir
    if project:
        result.update(project)
    return inject_env(result)  # TRACEPARENT: the hook's own span, when traced


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
