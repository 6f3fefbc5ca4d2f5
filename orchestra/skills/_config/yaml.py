"""Reading config files: YAML that remembers line numbers, and problems found on the way.

The YAML reader is PyYAML's safe loader with more refused:

- anchors and aliases (``&a``, ``*a``), so an alias bomb cannot expand;
- tags other than the core ones (``!!str``, ``!!int``, ``!!float``, ``!!bool``,
  ``!!null``, ``!!seq``, ``!!map``), so ``!!python/object`` never constructs anything;
- duplicate keys and merge keys (``<<``);
- nesting deeper than 64 levels and files over 1 MiB.

Mappings come back as ``Map`` and lists as ``Seq``: a ``dict`` and a ``list`` that know
the line each key or item starts on, so every problem can name ``file:line``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import attrs
import yaml

from orchestra._errors import ConfigError

__all__ = [
    "FRONT_MATTER_LINE",
    "MAX_FILE_BYTES",
    "Map",
    "Problems",
    "Seq",
    "decode",
    "front_matter",
    "kind",
    "parse_yaml",
    "plain",
    "read_bytes",
]

MAX_FILE_BYTES: Final = 1 << 20
"""The largest config file read (1 MiB)."""
FRONT_MATTER_LINE: Final = 1
"""Lines before the YAML of a ``SKILL.md`` front matter: its opening ``---``."""
_MAX_DEPTH: Final = 64
_CORE_TAGS: Final = frozenset(
    f"tag:yaml.org,2002:{name}" for name in ("str", "int", "float", "bool", "null", "seq", "map")
)
_MERGE_TAG: Final = "tag:yaml.org,2002:merge"


@attrs.define
class Problems:
    """The problems found in one load, in the order found."""

    items: list[ConfigError] = attrs.field(factory=list)
    notes: list[str] = attrs.field(factory=list)
    """What was ignored on purpose (a Claude Code file's other settings), not an error."""

    def add(self, file: str, line: int | None, field: str | None, message: str) -> None:
        """Record one problem at ``file:line``, for the field path ``field``."""
        where = f"{file}:{line}" if line is not None else file
        text = f"{where}: {field}: {message}" if field else f"{where}: {message}"
        self.items.append(ConfigError(text, file=file, line=line, field=field))

    def raise_if_any(self) -> None:
        """Raise every problem in one ``ConfigError``, sorted by file and line.

        Raises:
            ConfigError: the one problem, or all of them in ``errors``.
        """
        if not self.items:
            return
        files = {error.file: i for i, error in reversed(list(enumerate(self.items)))}
        self.items.sort(key=lambda error: (files[error.file], error.line or 0))
        if len(self.items) == 1:
            raise self.items[0]
        first = self.items[0]
        lines = "\n".join(f"  {error}" for error in self.items)
        raise ConfigError(
            f"{len(self.items)} problems in hook config:\n{lines}",
            file=first.file,
            line=first.line,
            field=first.field,
            errors=tuple(self.items),
        )


def kind(value: object) -> str:
    """What a config value is, for an error message: ``a string ('x')``, ``a list``..."""
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return f"a string ({value!r})"
    if isinstance(value, int | float):
        return f"a number ({value!r})"
    return type(value).__name__


class _Refused(Exception):
    """Something the YAML reader refuses, at a line."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line = line


class Map(dict[str, Any]):
    """A mapping that remembers its own line and each key's line."""

    line: int = 0
    lines: dict[str, int]


class Seq(list[Any]):
    """A list that remembers its own line and each item's line."""

    line: int = 0
    lines: list[int]


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing anchors, aliases, odd tags, duplicates and depth."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.depth = 0

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        alias = self.check_event(yaml.AliasEvent)  # also reads the next event
        event: yaml.Event = self.current_event
        line = event.start_mark.line + 1 if event.start_mark is not None else 0
        if alias:
            raise _Refused(line, "YAML aliases (*name) are not allowed")
        if getattr(event, "anchor", None) is not None:
            raise _Refused(line, "YAML anchors (&name) are not allowed")
        tag = getattr(event, "tag", None)
        if tag not in (None, "!") and tag not in _CORE_TAGS:
            raise _Refused(
                line, f"YAML tag {tag.replace('tag:yaml.org,2002:', '!!')} is not allowed"
            )
        self.depth += 1
        try:
            if self.depth > _MAX_DEPTH:
                raise _Refused(line, f"nested deeper than {_MAX_DEPTH} levels")
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1


def _construct_map(loader: _Loader, node: yaml.MappingNode) -> Map:
    result = Map()
    result.line = node.start_mark.line + 1
    result.lines = {}
    for key_node, value_node in node.value:
        line = key_node.start_mark.line + 1
        if key_node.tag == _MERGE_TAG:
            raise _Refused(line, "YAML merge keys (<<) are not allowed")
        key = loader.construct_object(key_node, deep=True)
        if not isinstance(key, str):
            raise _Refused(line, f"keys must be strings, got {key!r}")
        if key in result:
            raise _Refused(line, f"duplicate key {key!r} (first on line {result.lines[key]})")
        result[key] = loader.construct_object(value_node, deep=True)
        result.lines[key] = line
    return result


def _construct_seq(loader: _Loader, node: yaml.SequenceNode) -> Seq:
    result = Seq(loader.construct_object(child, deep=True) for child in node.value)
    result.line = node.start_mark.line + 1
    result.lines = [child.start_mark.line + 1 for child in node.value]
    return result


_Loader.add_constructor("tag:yaml.org,2002:map", _construct_map)
_Loader.add_constructor("tag:yaml.org,2002:seq", _construct_seq)


def plain(value: Any) -> Any:
    """The value with ``Map`` and ``Seq`` turned into plain dicts and lists."""
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def read_bytes(path: Path, problems: Problems) -> bytes | None:
    """The bytes of a config file, or None (and a problem) if it cannot be read."""
    name = str(path)
    try:
        with path.open("rb") as stream:
            data = stream.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        problems.add(name, None, None, f"cannot read: {exc.strerror or exc}")
        return None
    if len(data) > MAX_FILE_BYTES:
        problems.add(name, None, None, "file is over 1 MiB; refused")
        return None
    return data


def decode(data: bytes, name: str, problems: Problems) -> str | None:
    """A config file's text, or None (and a problem) if it is not UTF-8."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        problems.add(name, line, None, f"not UTF-8 ({exc.reason})")
        return None


def front_matter(text: str, name: str, problems: Problems) -> str | None:
    """The YAML front matter of a SKILL.md (it starts after ``FRONT_MATTER_LINE``), or None."""
    lines = text.splitlines()
    if not lines or lines[0].rstrip() != "---":
        return None
    for i in range(1, len(lines)):
        if lines[i].rstrip() in ("---", "..."):
            return "\n".join(lines[FRONT_MATTER_LINE:i])
    problems.add(name, 1, None, "front matter opened with '---' is never closed")
    return None


def _unreadable(exc: yaml.reader.ReaderError) -> str:
    """A character YAML does not allow, in words (NUL, C0 controls other than tab/newline)."""
    char = exc.character if isinstance(exc.character, str) else chr(exc.character)
    return (
        f"a control character (U+{ord(char):04X}) YAML does not allow: remove it, or write "
        'it as an escape in a double-quoted string ("\\x01")'
    )


def parse_yaml(text: str, name: str, offset: int, problems: Problems) -> Any:
    """Parse YAML text into ``Map``/``Seq``/scalars; None (and a problem) if refused.

    Args:
        text: the YAML.
        name: the file's name, for problems.
        offset: lines before the text in its file (a front matter's opening line).
        problems: where problems go.
    """
    try:
        loader = _Loader(text)  # the reader refuses control characters here
    except yaml.reader.ReaderError as exc:
        problems.add(name, text.count("\n", 0, exc.position) + 1 + offset, None, _unreadable(exc))
        return None
    try:
        return loader.get_single_data()
    except yaml.reader.ReaderError as exc:
        problems.add(name, text.count("\n", 0, exc.position) + 1 + offset, None, _unreadable(exc))
    except _Refused as exc:
        problems.add(name, exc.line + offset, None, str(exc))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 + offset if mark is not None else None
        message = " ".join(part for part in (exc.context, exc.problem) if part)
        if exc.problem and "alias" in (exc.context or "") + exc.problem:
            message += ' (a bare * starts a YAML alias: quote it, matcher: "*")'
        problems.add(name, line, None, f"YAML syntax error: {message}")
    except yaml.YAMLError as exc:
        problems.add(name, None, None, f"YAML error: {exc}")
    except RecursionError:
        problems.add(name, None, None, "YAML nested too deeply")
    finally:
        loader.dispose()
    return None
