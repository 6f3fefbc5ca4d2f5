"""The variables Claude Code sets for its hooks, set by orchestra where Claude Code sets them.

======================  ================================================================
variable                value
======================  ================================================================
``CLAUDE_PROJECT_DIR``  the registry's project folder (every hook)
``CLAUDE_PLUGIN_ROOT``  the plugin's folder (the parent of ``hooks/hooks.json``)
``CLAUDE_PLUGIN_DATA``  the plugin's own data folder, kept across updates of the plugin:
                        ``$XDG_DATA_HOME/orchestra/plugins/NAME`` (``~/.local/share``
                        without ``XDG_DATA_HOME``), made on first use
``CLAUDE_ENV_FILE``     on SessionStart, Setup, CwdChanged and FileChanged: one file per
                        session (``env_file``), in a folder only the user can read;
                        hooks append ``export NAME=value`` lines to it
======================  ================================================================

What happens to the variables written to ``CLAUDE_ENV_FILE``: Claude Code runs the file
as a preamble before each of its Bash tool's commands; orchestra has no Bash tool, so it
only keeps the file: ``HookRegistry.env_file()`` names it, for the code that runs your
agent's shell commands to source (orchestra's own hook processes never read it, as
Claude Code's do not).

In exec form (``args``), ``${CLAUDE_PROJECT_DIR}``, ``${CLAUDE_PLUGIN_ROOT}`` and
``${CLAUDE_PLUGIN_DATA}`` are replaced in the program and each argument as plain text
(no shell reads them); in shell form the shell expands them from the environment.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final

__all__ = ["ENV_FILE_EVENTS", "PLACEHOLDERS", "env_file", "expand_placeholders", "plugin_data"]

ENV_FILE_EVENTS: Final = frozenset({"SessionStart", "Setup", "CwdChanged", "FileChanged"})
"""The events whose command hooks get ``CLAUDE_ENV_FILE``."""
PLACEHOLDERS: Final = ("CLAUDE_PROJECT_DIR", "CLAUDE_PLUGIN_ROOT", "CLAUDE_PLUGIN_DATA")
"""The path placeholders of Claude Code's exec form."""


def plugin_data(plugin_root: str) -> str:
    """The data folder of the plugin at ``plugin_root`` (made if missing)."""
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "share"
    )
    folder = Path(base) / "orchestra" / "plugins" / Path(plugin_root).name
    folder.mkdir(parents=True, exist_ok=True)
    return str(folder)


def env_file(session_id: str) -> str:
    """The ``CLAUDE_ENV_FILE`` of a session: a file in a folder only the user can read.

    The file is made (empty) if missing; the name is the session id's SHA-256, so any id
    is a safe file name.
    """
    folder = Path(tempfile.gettempdir()) / f"orchestra-env-{os.getuid()}"
    folder.mkdir(mode=0o700, exist_ok=True)
    if folder.stat().st_uid != os.getuid() or folder.is_symlink():
        raise PermissionError(f"{folder} is not the user's own folder")
    path = folder / (hashlib.sha256(session_id.encode()).hexdigest()[:32] + ".sh")
    path.touch(mode=0o600, exist_ok=True)
    return str(path)


def expand_placeholders(args: Sequence[str], env: Mapping[str, str]) -> list[str]:
    """``args`` with each ``${NAME}`` of ``PLACEHOLDERS`` replaced by its value in ``env``."""
    expanded = []
    for arg in args:
        for name in PLACEHOLDERS:
            token = "${" + name + "}"
            if token in arg:
                arg = arg.replace(token, env.get(name, ""))
        expanded.append(arg)
    return expanded
