"""Validation: config files and SKILL.md front matter turned into hooks.

Everything is checked at load time, so a config that loads runs. Every problem found is
reported at once, each as ``file:line: field.path: what is wrong``, in one
``ConfigError`` (``errors`` holds them one by one). The walk goes document -> events ->
matcher groups -> hooks; each hook's own fields are read by its type's class
(``HookSpec.parse_fields``), the common ones (``type``, ``timeout``, ``on_error``) here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TypeAlias, final

import attrs

from orchestra._errors import did_you_mean
from orchestra.skills._arc_hooks import override_by_name
from orchestra.skills._budget_yaml import read_budget
from orchestra.skills._catalog import EVENTS, EventSpec, OnError, Phase
from orchestra.skills._covered import covered_files
from orchestra.skills._fields import Entry, FileDefaults
from orchestra.skills._graph_hooks import is_graph_file, read_graph
from orchestra.skills._hook import DEFAULT_TIMEOUT, PHASES, HookSpec, check_phase, check_timeout
from orchestra.skills._matchers import compile_matcher
from orchestra.skills._python_hook import without_imports
from orchestra.skills._sources import Source, sources
from orchestra.skills._trust import TrustStore, digest
from orchestra.skills._types import HOOK_CLASSES, HOOK_TYPES
from orchestra.skills._yaml import (
    FRONT_MATTER_LINE,
    Map,
    Problems,
    Seq,
    decode,
    front_matter,
    kind,
    parse_yaml,
    read_bytes,
)

if TYPE_CHECKING:
    from orchestra._budget import Budget
    from orchestra.skills._claude import ClaudeFile

__all__ = ["Loaded", "load_hooks", "read_sources"]

_Claude: TypeAlias = "list[ClaudeFile] | None"  # where Claude Code files' reads go
_Budgets: TypeAlias = "list[Budget] | None"  # where orchestra files' budgets go
_GROUP_FIELDS: Final = ("matcher", "hooks")
_TOP_FIELDS: Final = ("hooks", "env", "pass_env", "budget")
_ON_ERROR: Final[tuple[OnError, ...]] = ("continue", "block", "raise")
# A matcher written as a glob ("env_habitat__*"): as a regex it matches "env_habitat_"
# and underscores only, so on task events it would silently match nothing.
_GLOB_LIKE: Final = re.compile(r"[\w-]_\*$")
_INDEX: Final = re.compile(r"\[(\d+)\](?:\.hooks)?")  # Event[0].hooks[1] -> Event/0/1


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
    return tuple(override_by_name(_dedup(hooks)))


def _with_claude_settings(
    hooks: list[HookSpec], claude: list[ClaudeFile], problems: Problems
) -> list[HookSpec]:
    """``hooks`` after the settings Claude Code applies across its files.

    See ``_claude_settings``: ``disableAllHooks``, ``allowedHttpHookUrls``, ...
    """
    if not claude:
        return hooks
    from orchestra.skills._claude_settings import apply_claude_settings

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
        from orchestra.skills._arc_toml import read_arc

        return list(read_arc(name, text, problems))
    if source.claude:
        from orchestra.skills._claude import read_claude  # it builds on _Checker below

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
    checker = _Checker(file=name, offset=offset, skill_dir=source.skill_dir, problems=problems)
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


@attrs.define
class _Checker:
    """Validates one parsed file into hooks, collecting problems."""

    file: str
    offset: int
    skill_dir: str | None
    problems: Problems
    hooks: list[HookSpec] = attrs.field(factory=list)
    defaults: FileDefaults = attrs.field(factory=FileDefaults)
    budget: Budget | None = None

    def bad(self, line: int | None, field: str, message: str) -> None:
        self.problems.add(self.file, None if line is None else line + self.offset, field, message)

    def document(self, data: Any, *, skill: bool) -> None:
        if data is None:
            return
        if not isinstance(data, Map):
            self.bad(1, "", f"expected a mapping with a 'hooks' key, got {kind(data)}")
            return
        if not skill:  # a SKILL.md's front matter has its own fields (name, description...)
            for key in data:
                if key not in _TOP_FIELDS:
                    hint = did_you_mean(key, _TOP_FIELDS)
                    self.bad(data.lines[key], key, f"unknown top-level field{hint}")
        top = Entry(data, "", self.file, self.offset, self.problems)
        self.defaults = FileDefaults(env=top.variables("env"), pass_env=top.globs("pass_env"))
        if "budget" in data and not skill:
            self.budget = read_budget(data["budget"], data.lines["budget"], self.bad)
        if "hooks" in data:
            self.events(data["hooks"], data.lines["hooks"])

    def events(self, value: Any, line: int) -> None:
        if value is None:
            return
        if not isinstance(value, Map):
            self.bad(line, "hooks", f"expected a mapping of event names, got {kind(value)}")
            return
        for name, groups in value.items():
            where = f"hooks.{name}"
            spec = EVENTS.get(name)
            if spec is None:
                self.bad(value.lines[name], where, "unknown event" + did_you_mean(name, EVENTS))
                continue
            if groups is None:
                continue
            if not isinstance(groups, Seq):
                message = f"expected a list of matchers, got {kind(groups)}"
                self.bad(value.lines[name], where, message)
                continue
            for i, group in enumerate(groups):
                self.group(spec, group, groups.lines[i], f"{where}[{i}]")

    def group(self, spec: EventSpec, group: Any, line: int, where: str) -> None:
        if not isinstance(group, Map):
            message = f"expected a mapping with 'matcher' and 'hooks', got {kind(group)}"
            self.bad(line, where, message)
            return
        hook_fields = {key for cls in HOOK_CLASSES.values() for key in cls.config_fields()}
        for key in group:
            if key not in _GROUP_FIELDS:
                hint = did_you_mean(key, _GROUP_FIELDS)
                if not hint and key in hook_fields:
                    hint = " (hook fields go in a list under 'hooks')"
                self.bad(group.lines[key], f"{where}.{key}", "unknown field" + hint)
        matcher = self.matcher(spec, group, where)
        hooks = group.get("hooks")
        if not isinstance(hooks, Seq) or not hooks:
            hline = group.lines.get("hooks", group.line)
            message = f"expected a non-empty list of hooks, got {kind(hooks)}"
            self.bad(hline, f"{where}.hooks", message)
            return
        for i, hook in enumerate(hooks):
            built = self.hook(spec, matcher, hook, hooks.lines[i], f"{where}.hooks[{i}]")
            if built is not None:
                self.hooks.append(built)

    def matcher(self, spec: EventSpec, group: Map, where: str) -> str | None:
        """The group's matcher, None for every value (or when it is refused)."""
        raw = group.get("matcher")
        if raw is None:
            return None
        if not isinstance(raw, str):
            error: str | None = f"expected a string, got {kind(raw)}"
        else:
            pattern, error = compile_matcher(raw)
            if pattern is None and error is None:
                return None  # "*" or "": every value
            if error is None and spec.matcher_field is None:
                error = f'{spec.name} takes no matcher; remove it or use "*"'
            if error is None and spec.matcher_field == "task_id" and _GLOB_LIKE.search(raw):
                error = (
                    f"{raw!r} is a full-match regular expression on the task id, not a glob "
                    f"(it would match no 'prefix__...' id); write {raw[:-1] + '.*'!r}"
                )
        if error is not None:
            self.bad(group.lines["matcher"], f"{where}.matcher", error)
            return None
        return str(raw)

    def hook(
        self, spec: EventSpec, matcher: str | None, hook: Any, line: int, where: str
    ) -> HookSpec | None:
        if not isinstance(hook, Map):
            self.bad(line, where, f"expected a mapping with a 'type', got {kind(hook)}")
            return None
        entry = Entry(
            hook, where, self.file, self.offset, self.problems, spec, self.skill_dir, self.defaults
        )
        count = entry.count()
        name = hook.get("type")
        cls = HOOK_CLASSES.get(name) if isinstance(name, str) else None
        if cls is None:
            if name is None:
                entry.bad("type", f"missing; one of {', '.join(HOOK_TYPES)}")
            else:
                hint = did_you_mean(str(name), HOOK_TYPES) if isinstance(name, str) else ""
                entry.bad("type", f"unknown hook type {name!r}{hint}")
            return None
        # A skill's hook may run once per session (Claude Code honours `once` only there).
        allowed = (*cls.config_fields(), "once") if self.skill_dir else cls.config_fields()
        for key in hook:
            if key not in allowed:
                owners = [t for t, c in HOOK_CLASSES.items() if key in c.config_fields()]
                hint = (
                    f" ({key!r} is a field of {' and '.join(owners)} hooks)"
                    if owners
                    else did_you_mean(key, allowed)
                )
                entry.bad(key, f"unknown field for a {name} hook{hint}")
        timeout = _timeout(entry)
        phase = entry.choice("phase", PHASES, None)
        on_error = _on_error(entry, phase, cls)
        problem = check_phase(cls, spec, phase, entry.get("on_error"))
        if problem is not None:
            entry.bad(*problem)
        enforce = _enforce(entry)
        hook_id = entry.string("id", required=False)
        fields = cls.parse_fields(entry)
        if entry.count() > count:
            return None
        return cls(
            event=spec.name,
            matcher=matcher,
            timeout=timeout,
            phase=phase,
            on_error=on_error,
            enforce=enforce,
            id=hook_id,
            position=self.file + "#" + _INDEX.sub(r"/\1", where.removeprefix("hooks.")),
            file=self.file,
            line=entry.line(),
            skill_dir=self.skill_dir,
            once=entry.flag("once") if self.skill_dir else False,
            **fields,
        )


def _timeout(entry: Entry) -> float:
    value = entry.get("timeout")
    if value is None:
        return DEFAULT_TIMEOUT
    error = check_timeout(value)
    if error is not None:
        entry.bad("timeout", error)
        return DEFAULT_TIMEOUT
    return float(value)


def _enforce(entry: Entry) -> bool:
    """``enforce`` (true when absent): false keeps the hook's answers in the audit record."""
    value = entry.get("enforce", True)
    if not isinstance(value, bool):
        entry.bad("enforce", f"expected true or false, got {kind(value)}")
        return True
    return value


def _on_error(entry: Entry, phase: Phase | None, cls: type[HookSpec]) -> OnError:
    event = entry.hook_event
    default = event.on_error_for(phase, cls.fails_open)
    value = entry.choice("on_error", _ON_ERROR, default)
    if value == "block" and entry.get("on_error") == "block" and not event.can_block:
        entry.bad("on_error", f"{event.name} cannot block; use on_error: continue")
    return value
