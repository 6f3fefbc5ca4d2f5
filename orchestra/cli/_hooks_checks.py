"""What ``orchestra hooks validate`` warns about on this machine, beside the config itself.

A config can be valid and still fail each time a hook fires, for what the machine lacks:

- an ``http`` hook without httpx installed, an ``mcp_tool`` hook without the mcp SDK
  (the extras ``orchestra-hooks[http]`` and ``[mcp]``);
- a command hook whose script, named by a relative path (``./guard.sh``,
  ``python3 hooks/check.py``) or through ``$ORCHESTRA_PROJECT_DIR`` /
  ``$CLAUDE_PROJECT_DIR`` / ``$CLAUDE_PLUGIN_ROOT``, exists neither in the working
  directory nor from the config's folder up (wherever the project folder, where hooks
  run, may be);
- a command hook whose script is there but not executable (``chmod +x`` it:
  ``orchestra.skills._hooks.command``).

Warnings, not errors: the file still validates (exit 0), each warning says what to do.
Nothing is imported or run: a module is looked up with ``importlib.util.find_spec``.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Final

from orchestra.skills import HookSpec
from orchestra.skills._hooks.command import not_executable

__all__ = ["machine_warnings"]

_EXTRAS: Final = {
    "http": ("httpx", "http hooks need httpx", "http"),
    "mcp_tool": ("mcp", "mcp_tool hooks need the mcp SDK", "mcp"),
}
_SCRIPT_SUFFIXES: Final = (".sh", ".bash", ".zsh", ".py", ".js", ".mjs", ".ts", ".rb", ".pl")
_PROJECT: Final = re.compile(r"^\$(?:\{(\w+)\}|(\w+))(?=/)")
_PROJECT_VARIABLES: Final = frozenset({"ORCHESTRA_PROJECT_DIR", "CLAUDE_PROJECT_DIR"})
_SHELL_CHARACTERS: Final = frozenset("$*?[]{}<>|&;`'\"\\ \t\n:")


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a broken install is no install
        return False


def _words(hook: HookSpec) -> list[str]:
    args = getattr(hook, "args", None)
    if args is not None:
        return list(args)
    command = str(getattr(hook, "command", "") or "")
    try:
        return shlex.split(command, comments=True)
    except ValueError:  # unbalanced quotes: its plain words still say something
        return command.split()


def _plugin_root(hook: HookSpec) -> Path:
    path = Path(hook.file).resolve()
    return path.parent.parent if path.parent.name == "hooks" else path.parent


def _script_paths(hook: HookSpec) -> Iterator[tuple[str, Path]]:
    """The scripts a command hook names by path: (as written, relative to the project)."""
    for i, word in enumerate(_words(hook)):
        variable = _PROJECT.match(word)
        if variable is not None:
            name = variable[1] or variable[2]
            if name in _PROJECT_VARIABLES:
                yield word, Path(word[variable.end() + 1 :])
            elif name == "CLAUDE_PLUGIN_ROOT":
                yield word, _plugin_root(hook) / word[variable.end() + 1 :]
            continue
        if (
            not word
            or word.startswith(("-", "/", "~"))
            or "=" in word
            or any(c in _SHELL_CHARACTERS for c in word)
        ):
            continue
        if (
            word.startswith(("./", "../"))
            or (i == 0 and "/" in word)
            or word.endswith(_SCRIPT_SUFFIXES)
        ):
            yield word, Path(word)


def _missing_scripts(hook: HookSpec, cwd: Path) -> Iterator[str]:
    """A warning for each script found neither in ``cwd`` nor from the config's folders.

    The project folder (where hooks run) is the working directory when they run: here,
    or the config's folder or one above it (``.claude/``'s project, a repository's root).
    """
    folder = Path(hook.file).resolve().parent
    places = [cwd, folder, *folder.parents]
    for word, path in _script_paths(hook):
        if any((place / path).exists() for place in places):
            continue
        yield (
            f"{word} not found (looked for {cwd / path}, and from {folder} up; a relative "
            "path starts at the project folder, where hooks run): create it, or fix the "
            "path; until then this hook fails when it fires"
        )


def machine_warnings(hook: HookSpec, cwd: str | os.PathLike[str] | None = None) -> list[str]:
    """What may keep ``hook`` from running here: a missing extra, a missing script."""
    found: list[str] = []
    extra = _EXTRAS.get(hook.type)
    if extra is not None and not _installed(extra[0]):
        _, what, name = extra
        found.append(
            f"{what}, which is not installed: pip install 'orchestra-hooks[{name}]' "
            "(until then this hook fails when it fires, as a hook error)"
        )
    if hook.type == "command":
        found += _missing_scripts(hook, Path(cwd if cwd is not None else os.getcwd()))
        if (warning := not_executable(hook, cwd)) is not None:
            found.append(warning)
    return found
