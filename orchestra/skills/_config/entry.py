"""``Entry``: one mapping of a config being read into a hook, reporting at its lines.

A hook type reads its own fields through an ``Entry`` (``HookSpec.parse_fields``): each
reader checks the value's shape and, when it is wrong, records a problem naming
``file:line`` and the field path (``hooks.PreToolUse[0].hooks[1].timeout``), then
answers a harmless default so that reading goes on and every problem is found at once.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from typing import Any, Final, TypeVar

import attrs

from orchestra._errors import did_you_mean
from orchestra.skills._config.yaml import Map, Problems, kind
from orchestra.skills._protocol.catalog import EventSpec

__all__ = ["Entry", "FileDefaults", "check_glob", "check_name"]

_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_GLOB: Final = re.compile(r"(?:[A-Za-z0-9_*?]|\[!?[A-Za-z0-9_-]+\])+")


def check_name(name: str) -> str | None:
    """What is wrong with a variable name, or None."""
    return None if _NAME.fullmatch(name) else f"{name!r} is not a variable name"


def check_glob(pattern: str) -> str | None:
    """What is wrong with a ``pass_env`` entry (a name or a glob), or None."""
    if _GLOB.fullmatch(pattern):
        return None
    return (
        f"{pattern!r} is not a variable name or glob "
        "(letters, digits, _, and the glob characters * ? [...])"
    )


_C = TypeVar("_C", bound=str)
_D = TypeVar("_D")


@attrs.frozen
class FileDefaults:
    """Settings at a config file's top level that its hooks inherit.

    Attributes:
        env: variables set for its command hooks (``env:``).
        pass_env: the parent's variables passed to its command hooks (``pass_env:``).
    """

    env: tuple[tuple[str, str], ...] = ()
    pass_env: tuple[str, ...] = ()


@attrs.define
class Entry:
    """One mapping of a config (a hook, or a mapping inside one), being read.

    Attributes:
        data: the mapping, with the line of each key.
        where: its field path, e.g. ``hooks.PreToolUse[0].hooks[1]``.
        file: the config file.
        offset: lines before the YAML in the file (a SKILL.md's front matter line).
        problems: where problems go.
        event: the event the hook is for (None: not a hook's mapping).
        skill_dir: the folder of the SKILL.md the hook is in, None for a config file.
        defaults: what the file's top level sets for its hooks.
    """

    data: Map
    where: str
    file: str
    offset: int
    problems: Problems
    event: EventSpec | None = None
    skill_dir: str | None = None
    defaults: FileDefaults = attrs.field(factory=FileDefaults)

    @property
    def hook_event(self) -> EventSpec:
        """The event of the hook being read.

        Raises:
            TypeError: the entry is not a hook's mapping.
        """
        if self.event is None:
            raise TypeError(f"{self.where} is not a hook")
        return self.event

    def __contains__(self, key: str) -> bool:
        return key in self.data

    def get(self, key: str, default: Any = None) -> Any:
        """The raw value of ``key``, or ``default``."""
        return self.data.get(key, default)

    def line(self, key: str | None = None) -> int:
        """The line of ``key`` (of the mapping itself when absent or None), in the file."""
        line = self.data.lines.get(key, self.data.line) if key is not None else self.data.line
        return line + self.offset

    def bad(self, key: str | None, message: str) -> None:
        """Record a problem with ``key`` (with the whole mapping when None)."""
        field = self.where if key is None else f"{self.where}.{key}".lstrip(".")
        self.problems.add(self.file, self.line(key), field, message)

    def count(self) -> int:
        """How many problems were found so far (to tell whether reading added any)."""
        return len(self.problems.items)

    def nested(self, key: str) -> Entry | None:
        """The mapping under ``key`` as an ``Entry``, or None if it is not a mapping."""
        value = self.data.get(key)
        if not isinstance(value, Map):
            return None
        return attrs.evolve(self, data=value, where=f"{self.where}.{key}")

    def options(self, key: str, fields: Collection[str], expected: str) -> Entry | None:
        """The mapping under ``key`` as an ``Entry``, each unknown field in it reported.

        None, with a problem saying what was ``expected``, when it is not a mapping.
        """
        options = self.nested(key)
        if options is None:
            self.bad(key, f"expected {expected}, got {kind(self.data.get(key))}")
            return None
        for name in options.data:
            if name not in fields:
                options.bad(name, "unknown field" + did_you_mean(name, fields))
        return options

    def string(self, key: str, *, required: bool) -> str | None:
        """A non-empty string; an empty optional one counts as absent."""
        value = self.data.get(key)
        if value is None or (value == "" and not required):
            if required:
                self.bad(key, "missing")
            return None
        if not isinstance(value, str) or not value:
            self.bad(key, f"expected a non-empty string, got {kind(value)}")
            return None
        return value

    def choice(self, key: str, choices: tuple[_C, ...], default: _D) -> _C | _D:
        """One of ``choices`` (``default`` when absent or wrong)."""
        value = self.data.get(key)
        if value is None:
            return default
        if value not in choices:
            hint = did_you_mean(value, choices) if isinstance(value, str) else ""
            expected = ", ".join(choices[:-1]) + f" or {choices[-1]}"
            self.bad(key, f"expected {expected}, got {kind(value)}{hint}")
            return default
        return choices[choices.index(value)]

    def flag(self, key: str) -> bool:
        """``true`` or ``false`` (false when absent)."""
        value = self.data.get(key, False)
        if not isinstance(value, bool):
            self.bad(key, f"expected true or false, got {kind(value)}")
            return False
        return value

    def strings(self, key: str) -> tuple[str, ...]:
        """A list of strings without NUL characters (empty when absent)."""
        value = self.data.get(key)
        if value is None:
            return ()
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            self.bad(key, f"expected a list of strings, got {kind(value)}")
            return ()
        if any("\0" in v for v in value):
            self.bad(key, "contains a NUL character")
        return tuple(value)

    def variables(self, key: str) -> tuple[tuple[str, str], ...]:
        """A mapping of variable names to strings (``env:``), as pairs."""
        value = self.data.get(key)
        inner = self.nested(key)
        if value is None:
            return ()
        if inner is None:
            self.bad(key, f"expected a mapping of variable names to strings, got {kind(value)}")
            return ()
        pairs: list[tuple[str, str]] = []
        for name, text in inner.data.items():
            error = check_name(name)
            if error is None and not isinstance(text, str):
                error = f"expected a string, got {kind(text)}"
            elif error is None and "\0" in text:
                error = "contains a NUL character"
            if error is not None:
                inner.bad(name, error)
            else:
                pairs.append((name, text))
        return tuple(pairs)

    def globs(self, key: str) -> tuple[str, ...]:
        """A list of variable names or globs (``pass_env:``)."""
        patterns = self.strings(key)
        for pattern in patterns:
            error = check_glob(pattern)
            if error is not None:
                self.bad(key, error)
        return patterns

    def string_map(self, key: str) -> tuple[tuple[str, str], ...]:
        """A mapping of strings to strings, as pairs (empty when absent)."""
        value = self.data.get(key)
        if value is None:
            return ()
        if not isinstance(value, Mapping) or not all(isinstance(v, str) for v in value.values()):
            self.bad(key, f"expected a mapping of strings, got {kind(value)}")
            return ()
        return tuple(value.items())
