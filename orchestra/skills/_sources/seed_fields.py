"""Reading the fields of one hook entry of a seed's file (graph-executor JSON, Arc TOML).

Both formats give a mapping per hook whose keys know their lines (``Map``); every
problem is reported as ``file:line: field: what is wrong`` and the hook is dropped.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, final

import attrs

from orchestra._errors import did_you_mean
from orchestra.skills._config.yaml import Map, Problems, kind

__all__ = ["SeedEntry"]


@final
@attrs.define
class SeedEntry:
    """One hook's mapping in a seed's file, read field by field.

    Attributes:
        data: the mapping, with its keys' lines.
        where: its path in the file, e.g. ``hooks[2]``.
        file: the file.
        problems: where problems go.
        count: how many problems this entry had.
    """

    data: Map
    where: str
    file: str
    problems: Problems
    count: int = 0

    def line(self, key: str | None = None) -> int:
        """The line of ``key`` (or of the entry itself)."""
        if key is not None and key in self.data.lines:
            return self.data.lines[key]
        return self.data.line

    def bad(self, key: str | None, message: str) -> None:
        """Report a problem with ``key`` (None: the entry as a whole)."""
        field = f"{self.where}.{key}" if key else self.where
        self.problems.add(self.file, self.line(key), field, message)
        self.count += 1

    def known(self, fields: Collection[str], what: str) -> None:
        """Report every key that is not one of ``fields``."""
        for key in self.data:
            if key not in fields:
                self.bad(key, f"unknown field for {what}{did_you_mean(key, fields)}")

    def string(self, key: str, *, required: bool = False) -> str | None:
        """A non-empty string field, or None when absent (reported when required)."""
        value = self.data.get(key)
        if value is None:
            if required:
                self.bad(key, "missing")
            return None
        if not isinstance(value, str) or not value.strip():
            self.bad(key, f"expected a non-empty string, got {kind(value)}")
            return None
        return value

    def flag(self, key: str, default: bool) -> bool:
        """A boolean field (``default`` when absent)."""
        value = self.data.get(key, default)
        if not isinstance(value, bool):
            self.bad(key, f"expected true or false, got {kind(value)}")
            return default
        return value

    def milliseconds(self, key: str, default: int, limit: int) -> float:
        """A timeout in milliseconds (at most ``limit``), as seconds."""
        value: Any = self.data.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int):
            self.bad(key, f"expected whole milliseconds, got {kind(value)}")
            return default / 1000
        if not 0 < value <= limit:
            self.bad(key, f"must be from 1 to {limit} milliseconds, got {value}")
            return default / 1000
        return value / 1000

    def choice(self, key: str, allowed: Collection[str]) -> str | None:
        """A required string field that must be one of ``allowed``."""
        value = self.string(key, required=True)
        if value is not None and value not in allowed:
            hint = did_you_mean(value, allowed) or f" (one of {', '.join(allowed)})"
            self.bad(key, f"unknown {key} {value!r}{hint}")
            return None
        return value
