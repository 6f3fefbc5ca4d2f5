"""A command hook whose program is a script that is there but not executable.

``command: "./hooks/guard.sh"`` runs the script itself, which needs its execute bit:
without it every event ends in "exited 126 (not executable)", a hook error (on a guard,
a block). ``load`` logs a warning for such a hook (logger ``orchestra.skills``) and
``orchestra hooks validate`` prints it; neither runs anything (the file's mode is read).

Only the program counts (the first word of ``command``, or ``args[0]``), named by a path:
``sh hooks/guard.sh`` and ``python3 check.py`` need no execute bit, and a bare name is
looked up on ``PATH`` when the hook runs. A path may start with ``$ORCHESTRA_PROJECT_DIR``,
``$CLAUDE_PROJECT_DIR`` or ``${SKILL_DIR}``; a relative one starts at the project folder.
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path
from typing import Final

from orchestra.skills._hooks.spec import HookSpec

__all__ = ["not_executable"]

_VARIABLE: Final = re.compile(r"^\$(?:\{(\w+)\}|(\w+))/")
_PROJECT: Final = frozenset({"ORCHESTRA_PROJECT_DIR", "CLAUDE_PROJECT_DIR"})


def _program(hook: HookSpec) -> str | None:
    args = getattr(hook, "args", None)
    if args:
        return str(args[0])
    try:
        words = shlex.split(str(getattr(hook, "command", "") or ""), comments=True)
    except ValueError:  # unbalanced quotes: the shell will say so
        return None
    return words[0] if words else None


def _candidates(hook: HookSpec, program: str, project_dir: Path) -> list[Path]:
    """Where the program may be: from the project folder, else the config's folders up."""
    variable = _VARIABLE.match(program)
    if variable is not None:
        name, rest = variable[1] or variable[2], program[variable.end() :]
        if name in _PROJECT:
            return [project_dir / rest]
        if name == "SKILL_DIR" and hook.skill_dir is not None:
            return [Path(hook.skill_dir) / rest]
        return []
    if "/" not in program or "$" in program:
        return []
    path = Path(program).expanduser()
    if path.is_absolute():
        return [path]
    folder = Path(hook.file).resolve().parent
    return [project_dir / path, folder / path, *(parent / path for parent in folder.parents)]


def not_executable(hook: HookSpec, project_dir: str | os.PathLike[str] | None = None) -> str | None:
    """A warning when ``hook`` runs a script that exists but has no execute bit, or None.

    Args:
        hook: any hook; only command hooks can warn.
        project_dir: where the hooks run (default: the current folder).
    """
    if hook.type != "command":
        return None
    program = _program(hook)
    if program is None:
        return None
    project = Path(project_dir if project_dir is not None else os.getcwd())
    for path in _candidates(hook, program, project):
        if path.is_file():
            if os.access(path, os.X_OK):
                return None
            return (
                f"{program} is not executable: chmod +x {path} (until then this hook "
                "fails each time it fires: exited 126)"
            )
    return None
