"""Orchestra's own format: ``orchestra.yaml`` files and SKILL.md front matter, into hooks.

The walk goes document -> events -> matcher groups -> hooks; each hook's own fields are
read by its type's class (``HookSpec.parse_fields``), the common ones (``type``,
``timeout``, ``on_error``, ``enforce``) here. Claude Code's files are read by a subclass
(``_sources.claude.reader``).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Final

import attrs

from orchestra._errors import did_you_mean
from orchestra.skills._config.entry import Entry, FileDefaults
from orchestra.skills._config.matchers import compile_matcher
from orchestra.skills._config.yaml import Map, Problems, Seq, kind
from orchestra.skills._hooks.spec import (
    DEFAULT_TIMEOUT,
    PHASES,
    HookSpec,
    check_phase,
    check_timeout,
)
from orchestra.skills._hooks.table import HOOK_CLASSES, HOOK_TYPES
from orchestra.skills._protocol.catalog import EVENTS, EventSpec, OnError, Phase
from orchestra.skills._sources.budget import read_budget

if TYPE_CHECKING:
    from orchestra._budget import Budget

__all__ = ["OrchestraChecker"]

_GROUP_FIELDS: Final = ("matcher", "hooks")
_TOP_FIELDS: Final = ("hooks", "env", "pass_env", "budget")
_ON_ERROR: Final[tuple[OnError, ...]] = ("continue", "block", "raise")
# A matcher written as a glob ("env_habitat__*"): as a regex it matches "env_habitat_"
# and underscores only, so on task events it would silently match nothing.
_GLOB_LIKE: Final = re.compile(r"[\w-]_\*$")
_INDEX: Final = re.compile(r"\[(\d+)\](?:\.hooks)?")  # Event[0].hooks[1] -> Event/0/1


@attrs.define
class OrchestraChecker:
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
