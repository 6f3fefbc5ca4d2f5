"""Sources: which files a ``load(*paths)`` reads, and in which order.

A path is a config file (``orchestra.yaml``, ``echo-agent.yaml``, any YAML file), a
Claude Code file (``settings.json``, ``settings.local.json``, a plugin's ``hooks.json``,
any ``.json`` file), a ``SKILL.md`` (any ``.md`` file) or a folder, which gives its
``orchestra.yaml``, its ``echo-agent.yaml``, its ``.claude/settings.json`` and
``.claude/settings.local.json``, its ``hooks/hooks.json`` when it is a Claude Code plugin
(it has ``.claude-plugin/``), and every ``SKILL.md`` below it (not looking into version
control, virtualenv, cache or dependency folders). Config files come first, in the order
given (global, then project), then skills; a file reached twice is read once.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Final, final

import attrs

from orchestra.skills._config.yaml import Problems

__all__ = ["CONFIG_NAMES", "SKIPPED_DIRS", "Source", "sources"]

CONFIG_NAMES: Final = ("orchestra.yaml", "echo-agent.yaml")
"""The config files a folder gives, in this order (``echo-agent.yaml``: the seed's name)."""
_CLAUDE_IN_FOLDER: Final = (
    Path(".claude") / "settings.json",
    Path(".claude") / "settings.local.json",
)

SKIPPED_DIRS: Final = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".venv",
        "venv",
        ".tox",
        ".nox",
        "node_modules",
        "site-packages",
        "__pycache__",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
    }
)
"""Folders never searched for skills: version control, virtualenvs, caches, dependencies."""


@final
@attrs.frozen
class Source:
    """One file to read: a config file or a skill.

    Attributes:
        path: the file.
        skill: a ``SKILL.md`` (hooks in its front matter, ``${SKILL_DIR}`` set).
        claude: a Claude Code file (JSON, read as Claude Code reads it).
    """

    path: Path
    skill: bool
    claude: bool = False

    @property
    def skill_dir(self) -> str | None:
        """The skill's folder (absolute), None for a config file."""
        return str(self.path.parent.resolve()) if self.skill else None


def sources(paths: Sequence[str | Path], problems: Problems) -> list[Source]:
    """The files to read for ``paths``: config files first, then skills, each once."""
    configs: list[Source] = []
    skills: list[Source] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            configs.extend(
                Source(path / name, skill=False) for name in CONFIG_NAMES if (path / name).is_file()
            )
            configs.extend(
                Source(path / name, skill=False, claude=True)
                for name in _CLAUDE_IN_FOLDER
                if (path / name).is_file()
            )
            plugin_hooks = path / "hooks" / "hooks.json"
            if (path / ".claude-plugin").is_dir() and plugin_hooks.is_file():
                configs.append(Source(plugin_hooks, skill=False, claude=True))
            skills.extend(Source(p, skill=True) for p in _skill_files(path))
        elif path.is_file():
            suffix = path.suffix.lower()
            if suffix == ".md":
                skills.append(Source(path, skill=True))
            else:
                configs.append(Source(path, skill=False, claude=suffix == ".json"))
        else:
            problems.add(str(path), None, None, "no such file or folder")
    seen: set[Path] = set()
    ordered: list[Source] = []
    for source in configs + skills:
        resolved = source.path.resolve()
        if resolved not in seen:
            seen.add(resolved)
            ordered.append(source)
    return ordered


def _skill_files(folder: Path) -> list[Path]:
    """Every ``SKILL.md`` below ``folder``, sorted, not looking into tool folders."""
    found: list[Path] = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if d not in SKIPPED_DIRS]
        if "SKILL.md" in files:
            found.append(Path(root) / "SKILL.md")
    return sorted(found)
