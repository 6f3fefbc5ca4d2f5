"""The files a hook source runs besides itself, which its trust record covers too.

Trusting ``orchestra.yaml`` means little if the ``./guard.sh`` it runs can change
afterwards. A source's record therefore holds the SHA-256 of:

- every file its command hooks name by path inside the source's own folder: a relative
  path (``./guard.sh``, ``hooks/check.py``, an interpreter's script argument), an
  absolute one below the folder, or one through ``$ORCHESTRA_PROJECT_DIR``,
  ``$CLAUDE_PROJECT_DIR``, ``$SKILL_DIR`` or ``$CLAUDE_PLUGIN_ROOT`` (the folder is the
  config file's own, a Claude Code file's project or plugin, a skill's folder);
- the module file of each ``type: python`` hook, when the module is in that folder
  (``"checks.policy:deny"``: ``checks/policy.py`` or ``checks/policy/__init__.py``);
- for a skill, every file of its folder (its scripts may call one another), not looking
  into version control, virtualenv or cache folders, up to ``MAX_FILES``.

Programs named by bare word (``jq``, ``python3``) and files outside the folder are the
machine's, not the source's: they are not covered.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Final

from orchestra.skills._sources.files import SKIPPED_DIRS, Source
from orchestra.skills._sources.trust import digest

__all__ = ["MAX_FILES", "covered_files", "source_folder"]

MAX_FILES: Final = 10_000
"""The most files of a skill's folder a trust record covers."""
_VARIABLE: Final = re.compile(
    r"\$(?:\{(ORCHESTRA_PROJECT_DIR|CLAUDE_PROJECT_DIR|SKILL_DIR|CLAUDE_PLUGIN_ROOT)\}"
    r"|(ORCHESTRA_PROJECT_DIR|CLAUDE_PROJECT_DIR|SKILL_DIR|CLAUDE_PLUGIN_ROOT)\b)"
)


def source_folder(source: Source) -> Path:
    """The folder whose files a source's hooks run: its own, or its project's or plugin's."""
    path = source.path.resolve()
    if source.claude and path.parent.name in {".claude", "hooks"}:
        return path.parent.parent  # .claude/settings.json, a plugin's hooks/hooks.json
    return path.parent


def _words(hook: Any) -> Iterator[str]:
    """The words of a command hook's command (or its args), each split at ``=``."""
    if getattr(hook, "args", None) is not None:
        words: Iterable[str] = hook.args
    else:
        command = getattr(hook, "command", None) or ""
        try:
            words = shlex.split(command, comments=True)
        except ValueError:  # unbalanced quotes: its plain words still say something
            words = command.split()
    for word in words:
        yield from word.split("=")


def _named(hook: Any, folder: Path) -> Iterator[Path]:
    """The files below ``folder`` that one hook names."""
    if hook.type == "python":  # looked up in the folder, whatever ``sys.path`` is now
        module = Path(*str(hook.callable).partition(":")[0].split("."))
        yield folder / module.with_name(module.name + ".py")
        yield folder / module / "__init__.py"
        return
    if hook.type != "command":
        return
    for word in _words(hook):
        if not word or word.startswith("-"):
            continue
        path = Path(_VARIABLE.sub(str(folder), word))
        yield path if path.is_absolute() else folder / path


def _skill_tree(folder: Path) -> Iterator[Path]:
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS and not d.startswith("."))
        for name in sorted(files):
            yield Path(root) / name


def covered_files(source: Source, hooks: Iterable[Any]) -> dict[str, str]:
    """What ``source``'s trust covers besides itself: ``{absolute path: sha256}``.

    Raises:
        ValueError: a skill's folder holds more than ``MAX_FILES`` files.
    """
    folder = source_folder(source)
    candidates = [path for hook in hooks for path in _named(hook, folder)]
    if source.skill:
        tree = list(_skill_tree(folder))
        if len(tree) > MAX_FILES:
            raise ValueError(
                f"its folder {folder} holds over {MAX_FILES:,} files, too many to cover; "
                "keep a skill's folder to its own files"
            )
        candidates += tree
    itself = source.path.resolve()
    covered: dict[str, str] = {}
    for candidate in candidates:
        try:
            path = candidate.resolve()
            if path == itself or not path.is_relative_to(folder) or not path.is_file():
                continue
            if str(path) not in covered:
                covered[str(path)] = digest(path.read_bytes())
        except (OSError, RuntimeError, ValueError):  # unreadable, a symlink loop: not a file
            continue
    return dict(sorted(covered.items()))
