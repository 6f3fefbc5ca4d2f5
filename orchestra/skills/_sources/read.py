"""Validation: config files and SKILL.md front matter turned into hooks.

Everything is checked at load time, so a config that loads runs. Every problem found is
reported at once, each as ``file:line: field.path: what is wrong``, in one
``ConfigError`` (``errors`` holds them one by one). Each file goes to the reader of its
format: orchestra's own (``_sources.orchestra``), Claude Code's, the graph executor's, Arc's.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias, final

import attrs

from orchestra.skills._config.yaml import (
    FRONT_MATTER_LINE,
    Problems,
    decode,
    front_matter,
    parse_yaml,
    read_bytes,
)
from orchestra.skills._hooks.python import without_imports
from orchestra.skills._hooks.spec import HookSpec
from orchestra.skills._sources.arc.hooks import ArcHook
from orchestra.skills._sources.covered import covered_files
from orchestra.skills._sources.files import Source, sources
from orchestra.skills._sources.graph import is_graph_file, read_graph
from orchestra.skills._sources.orchestra import OrchestraChecker
from orchestra.skills._sources.trust import TrustStore, digest

if TYPE_CHECKING:
    from orchestra._budget import Budget
    from orchestra.skills._sources.claude.reader import ClaudeFile

__all__ = ["Loaded", "load_hooks", "read_sources"]

_Claude: TypeAlias = "list[ClaudeFile] | None"  # where Claude Code files' reads go
_Budgets: TypeAlias = "list[Budget] | None"  # where orchestra files' budgets go


@final
@attrs.frozen
class Loaded:
    """One source file read: its content's digest and its hooks (before merging).

    Attributes:
        source: the file.
        sha256: the SHA-256 of its bytes.
        hooks: its hooks, in order.
    """

    source: Source
    sha256: str
    hooks: tuple[HookSpec, ...]


def load_hooks(
    paths: Sequence[str | Path],
    notes: list[str] | None = None,
    *,
    require_trust: bool = False,
    store: TrustStore | None = None,
    budgets: list[Budget] | None = None,
) -> tuple[HookSpec, ...]:
    """Read and validate config files, SKILL.md files and folders into merged hooks.

    Config files come first, in the order given (pass the global one before the
    project's), then skills; identical hooks are kept once, where first seen.

    Args:
        paths: files and folders to read.
        notes: where what was ignored on purpose goes (a Claude Code file's other
            settings, events and hook types this version does not run).
        require_trust: refuse a file that ``store`` does not trust as it is now.
        store: the trust store (default: the user's).
        budgets: where each orchestra file's ``budget:`` goes, in file order.

    Raises:
        ConfigError: every problem found, each with file:line and field path.
    """
    problems = Problems()
    hooks: list[HookSpec] = []
    claude: list[ClaudeFile] = []
    for source in sources(paths, problems):
        data = read_bytes(source.path, problems)
        if data is None:
            continue
        if require_trust:
            store = store or TrustStore()
            refusal = store.refusal(
                source.path,
                digest(data),
                partial(_described, source, data),
                partial(covered_files, source),
            )
            if refusal is not None:  # read nothing of it: a python hook imports its module
                problems.add(str(source.path), None, None, refusal)
                continue
        hooks.extend(_read_source(source, data, problems, claude, budgets))
    problems.raise_if_any()
    hooks = _with_claude_settings(hooks, claude, problems)
    if notes is not None:
        notes.extend(problems.notes)
    return tuple(_override_by_name(_dedup(hooks)))


def _with_claude_settings(
    hooks: list[HookSpec], claude: list[ClaudeFile], problems: Problems
) -> list[HookSpec]:
    """``hooks`` after the settings Claude Code applies across its files.

    See ``_sources.claude.settings``: ``disableAllHooks``, ``allowedHttpHookUrls``, ...
    """
    if not claude:
        return hooks
    from orchestra.skills._sources.claude.settings import apply_claude_settings

    originals = [(read, list(read.hooks)) for read in claude]
    dropped = apply_claude_settings(claude, problems.notes)
    after = {
        id(old): new
        for read, before in originals
        for old, new in zip(before, read.hooks, strict=True)
    }
    return [after.get(id(hook), hook) for hook in hooks if id(hook) not in dropped]


def read_sources(paths: Sequence[str | Path], problems: Problems) -> list[Loaded]:
    """Every source file of ``paths``, read and validated; problems go to ``problems``.

    Only read: no ``type: python`` hook's module is imported (it would run its code).
    """
    loaded: list[Loaded] = []
    with without_imports():
        for source in sources(paths, problems):
            data = read_bytes(source.path, problems)
            if data is not None:
                hooks = _read_source(source, data, problems)
                loaded.append(Loaded(source, digest(data), tuple(hooks)))
    return loaded


def _described(source: Source, raw: bytes) -> list[HookSpec]:
    """A file's hooks, read only to describe them: nothing imported, problems dropped."""
    with without_imports():
        return _read_source(source, raw, Problems())


def _read_source(
    source: Source, raw: bytes, problems: Problems, claude: _Claude = None, budgets: _Budgets = None
) -> list[HookSpec]:
    name = str(source.path)
    text = decode(raw, name, problems)
    if text is None:
        return []
    if source.path.suffix.lower() == ".toml":
        from orchestra.skills._sources.arc.toml import read_arc

        return list(read_arc(name, text, problems))
    if source.claude:
        from orchestra.skills._sources.claude.reader import read_claude

        data = parse_yaml(text, name, 0, problems)
        if is_graph_file(data):  # a graph executor's hooks list, not Claude Code's
            return list(read_graph(name, data, problems))
        read = read_claude(source.path, data, problems)
        if claude is not None:
            claude.append(read)
        return list(read.hooks)
    offset = 0
    if source.skill:
        text = front_matter(text, name, problems)
        if text is None:
            return []
        offset = FRONT_MATTER_LINE
    data = parse_yaml(text, name, offset, problems)
    checker = OrchestraChecker(
        file=name, offset=offset, skill_dir=source.skill_dir, problems=problems
    )
    checker.document(data, skill=source.skill)
    if budgets is not None and checker.budget is not None:
        budgets.append(checker.budget)
    return checker.hooks


def _dedup(hooks: Iterable[HookSpec]) -> Iterator[HookSpec]:
    seen: set[tuple[Any, ...]] = set()
    for hook in hooks:
        key = hook.key()
        if key not in seen:
            seen.add(key)
            yield hook


def _override_by_name(hooks: Iterable[HookSpec]) -> list[HookSpec]:
    """The hooks, each named Arc hook replaced by the last one of its name, in its place."""
    ordered = list(hooks)
    last = {h.name: h for h in ordered if isinstance(h, ArcHook) and h.name}
    seen: set[str] = set()
    merged: list[HookSpec] = []
    for hook in ordered:
        name = hook.name if isinstance(hook, ArcHook) else None
        if not name:
            merged.append(hook)
        elif name not in seen:
            seen.add(name)
            merged.append(last[name])
    return merged
