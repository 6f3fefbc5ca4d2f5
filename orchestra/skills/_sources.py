"""Sources: which files a ``load(*paths)`` reads, and in which order.

A path is a config file (``orchestra.yaml``, any YAML file), a ``SKILL.md`` (any ``.md``
file) or a folder, which gives its ``orchestra.yaml`` and every ``SKILL.md`` below it
(not looking into version control, virtualenv, cache or dependency folders). Config
files come first, in the order given, then skills; a file reached twice is read once.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Final, final

import attrs

from orchestra.skills._yaml import Problems

__all__ = ["Source", "sources"]

# Folders never searched for skills: version control, virtualenvs, caches, dependencies.
_SKIPPED_DIRS: Final = frozenset(
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


@final
@attrs.frozen
class Source:
    """One file to read: a config file or a skill.

    Attributes:
        path: the file.
        skill: a ``SKILL.md`` (hooks in its front matter, ``${SKILL_DIR}`` set).
    """

    path: Path
    skill: bool

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
            config = path / "orchestra.yaml"
            if config.is_file():
                configs.append(Source(config, skill=False))
            skills.extend(Source(p, skill=True) for p in _skill_files(path))
        elif path.is_file():
            is_skill = path.suffix.lower() == ".md"
            (skills if is_skill else configs).append(Source(path, skill=is_skill))
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
        dirs[:] = [d for d in dirs if d not in _SKIPPED_DIRS]
        if "SKILL.md" in files:
            found.append(Path(root) / "SKILL.md")
    return sorted(found)
