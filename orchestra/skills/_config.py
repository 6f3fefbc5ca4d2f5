r"""Loading and validation of YAML hook configs: ``orchestra.yaml`` files and ``SKILL.md``.

Everything is checked at load time, so a config that loads runs. Every problem found is
reported at once, each as ``file:line: field.path: what is wrong``, in one
``ConfigError`` (``errors`` holds them one by one).

The YAML reader is PyYAML's safe loader with more refused:

- anchors and aliases (``&a``, ``*a``), so an alias bomb cannot expand;
- tags other than the core ones (``!!str``, ``!!int``, ``!!float``, ``!!bool``,
  ``!!null``, ``!!seq``, ``!!map``), so ``!!python/object`` never constructs anything;
- duplicate keys and merge keys (``<<``);
- nesting deeper than 64 levels and files over 1 MiB.

Matchers are regular expressions matched against the whole value (``Bash`` does not
match ``BashOutput``). Patterns that can backtrack catastrophically are refused at load
by a structural rule: a repeated part (``*``, ``+``, ``{m,n}`` with n > 1) may not
contain another repeated part, an alternation of words, or a backreference. ``(a+)+$``,
``(\\w*)*``, ``(Edit|Write)+`` and ``(.*a){20}`` are refused; ``Edit|Write``,
``mcp__.*``, ``Bash(Output)?`` and ``[A-Z][a-z]+`` are fine.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import shlex
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, Literal, TypeAlias, final
from urllib.parse import urlsplit

import attrs
import yaml

from orchestra._errors import ConfigError, did_you_mean
from orchestra.skills._catalog import EVENTS, EventSpec, OnError

__all__ = [
    "DEFAULT_TIMEOUT",
    "HOOK_TYPES",
    "MAX_COMMAND_BYTES",
    "MAX_FILE_BYTES",
    "MAX_TIMEOUT",
    "HookSpec",
    "HookType",
    "McpServerSpec",
    "TlsMode",
    "load_hooks",
]

HookType: TypeAlias = Literal["command", "prompt", "permission", "http", "mcp_tool"]
"""The kinds of hooks."""
TlsMode: TypeAlias = Literal["verify", "no_verify", "off"]
"""How an http hook uses TLS: verify the certificate, do not verify it, or plain http."""

HOOK_TYPES: Final[tuple[HookType, ...]] = ("command", "prompt", "permission", "http", "mcp_tool")
MAX_FILE_BYTES: Final = 1 << 20
"""The largest config file read (1 MiB)."""
MAX_COMMAND_BYTES: Final = 32 * 1024
"""The longest ``command`` (or all ``args`` together), in UTF-8 bytes (32 KB)."""
DEFAULT_TIMEOUT: Final = 10.0
"""A hook's timeout when it sets none, in seconds."""
MAX_TIMEOUT: Final = 300.0
"""The longest timeout a hook may set, in seconds."""
_MAX_DEPTH: Final = 64

_COMMON_FIELDS: Final = ("type", "timeout", "on_error")
_TYPE_FIELDS: Final[Mapping[str, tuple[str, ...]]] = {
    "command": ("command", "args", "strict_output"),
    "prompt": ("prompt",),
    "permission": ("decision", "reason"),
    "http": ("url", "headers", "allowed_env_vars", "tls", "strict_output"),
    "mcp_tool": ("server", "tool", "arguments", "strict_output"),
}
_GROUP_FIELDS: Final = ("matcher", "hooks")
_SERVER_FIELDS: Final = ("command", "args", "env", "cwd")
_TLS_MODES: Final = ("verify", "no_verify", "off")
_PERMISSIONS: Final = ("allow", "deny", "ask")
_ON_ERROR: Final = ("continue", "block")
_ENV_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_HEADER_NAME: Final = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_HEADER_VAR: Final = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")
_SKILL_DIR_REF: Final = re.compile(r"\$(?:\{SKILL_DIR\}|SKILL_DIR\b)")
_SHELL_SAFE_PATH: Final = re.compile(r"[A-Za-z0-9_./+@%:,=-]+")
_CORE_TAGS: Final = frozenset(
    f"tag:yaml.org,2002:{name}" for name in ("str", "int", "float", "bool", "null", "seq", "map")
)
_MERGE_TAG: Final = "tag:yaml.org,2002:merge"
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
class McpServerSpec:
    """How to start the MCP server of an ``mcp_tool`` hook (over stdio).

    Attributes:
        command: the program to start.
        args: its arguments.
        env: variables added to the inherited environment.
        cwd: its working directory (None: the project directory).
    """

    command: str
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    cwd: str | None = None


@final
@attrs.frozen(repr=False)
class HookSpec:
    """One validated hook, as loaded from a config file.

    Attributes:
        event: the event it runs at, e.g. ``"PreToolUse"``.
        matcher: the matcher pattern, or None for every value.
        type: ``"command"``, ``"prompt"``, ``"permission"``, ``"http"`` or ``"mcp_tool"``.
        timeout: seconds the hook may take.
        on_error: what a hook error means: ``"continue"`` or ``"block"``.
        file: the config file it comes from.
        line: the line its entry starts on in that file (1-based).
        skill_dir: the folder of the ``SKILL.md`` it comes from, None for a config file.
        command: command hooks: the shell command, ``${SKILL_DIR}`` expanded.
        args: command hooks: the argv to run without a shell, ``${SKILL_DIR}`` expanded.
        strict_output: command, http and mcp_tool hooks: unknown fields in the result are
            errors.
        prompt: prompt hooks: the text added to the outcome's messages.
        decision: permission hooks: the fixed ``"allow"``, ``"deny"`` or ``"ask"``.
        reason: permission hooks: the reason given with the decision.
        url: http hooks: the URL the event is POSTed to.
        headers: http hooks: the headers, ``$VAR`` not yet expanded.
        allowed_env_vars: http hooks: the variables headers may use.
        tls: http hooks: ``"verify"``, ``"no_verify"`` or ``"off"``.
        server: mcp_tool hooks: the MCP server to start.
        tool: mcp_tool hooks: the tool to call.
        arguments: mcp_tool hooks: fixed arguments, added to the event's fields.
        pattern: the compiled matcher, None for every value.
    """

    event: str
    matcher: str | None
    type: HookType
    timeout: float
    on_error: OnError
    file: str
    line: int
    skill_dir: str | None = None
    command: str | None = None
    args: tuple[str, ...] | None = None
    strict_output: bool = False
    prompt: str | None = None
    decision: Literal["allow", "deny", "ask"] | None = None
    reason: str | None = None
    url: str | None = None
    headers: tuple[tuple[str, str], ...] = ()
    allowed_env_vars: tuple[str, ...] = ()
    tls: TlsMode = "verify"
    server: McpServerSpec | None = None
    tool: str | None = None
    arguments: Mapping[str, Any] = attrs.field(factory=dict, hash=False)
    pattern: re.Pattern[str] | None = attrs.field(default=None, eq=False, repr=False)

    def __repr__(self) -> str:
        matcher = f" {self.matcher!r}" if self.matcher is not None else ""
        return f"<HookSpec {self.event}{matcher} {self.type} at {self.source}>"

    @property
    def source(self) -> str:
        """Where the hook was defined, as ``file:line``."""
        return f"{self.file}:{self.line}"

    def key(self) -> tuple[Any, ...]:
        """What makes two hooks identical (all fields but where they were written)."""
        return (
            self.event,
            self.matcher,
            self.type,
            self.timeout,
            self.on_error,
            self.skill_dir,
            self.command,
            self.args,
            self.strict_output,
            self.prompt,
            self.decision,
            self.reason,
            self.url,
            tuple(sorted(self.headers)),
            tuple(sorted(set(self.allowed_env_vars))),
            self.tls,
            self.server,
            self.tool,
            json.dumps(self.arguments, sort_keys=True, default=repr),
        )


# --- YAML with line numbers ---------------------------------------------------------------


class _Refused(Exception):
    """Something the YAML reader refuses, at a line."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line = line


class _Map(dict[str, Any]):
    """A mapping that remembers its own line and each key's line."""

    line: int = 0
    lines: dict[str, int]


class _Seq(list[Any]):
    """A list that remembers its own line and each item's line."""

    line: int = 0
    lines: list[int]


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing anchors, aliases, odd tags, duplicates and depth."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.depth = 0

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        event = self.peek_event()  # type: ignore[no-untyped-call]
        line = event.start_mark.line + 1
        if isinstance(event, yaml.AliasEvent):
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


def _construct_map(loader: _Loader, node: yaml.MappingNode) -> _Map:
    result = _Map()
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


def _construct_seq(loader: _Loader, node: yaml.SequenceNode) -> _Seq:
    result = _Seq(loader.construct_object(child, deep=True) for child in node.value)
    result.line = node.start_mark.line + 1
    result.lines = [child.start_mark.line + 1 for child in node.value]
    return result


_Loader.add_constructor("tag:yaml.org,2002:map", _construct_map)
_Loader.add_constructor("tag:yaml.org,2002:seq", _construct_seq)


# --- problems -----------------------------------------------------------------------------


@attrs.define
class _Problems:
    """The problems found in one load, in the order found."""

    items: list[ConfigError] = attrs.field(factory=list)

    def add(self, file: str, line: int | None, field: str | None, message: str) -> None:
        where = f"{file}:{line}" if line is not None else file
        text = f"{where}: {field}: {message}" if field else f"{where}: {message}"
        self.items.append(ConfigError(text, file=file, line=line, field=field))

    def raise_if_any(self) -> None:
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


def _kind(value: object) -> str:
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


# --- matchers -----------------------------------------------------------------------------

_sre: Any = importlib.import_module("re._parser")
_sre_const: Any = importlib.import_module("re._constants")
_REPEATS: Final = frozenset(
    getattr(_sre_const, name)
    for name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT")
    if hasattr(_sre_const, name)
)


def _catastrophic(pattern: str) -> str | None:
    """Why a (compilable) pattern could backtrack catastrophically, or None."""
    return _walk(_sre.parse(pattern), inside=False)


def _walk(items: Iterable[tuple[Any, Any]], *, inside: bool) -> str | None:
    const = _sre_const
    for op, av in items:
        found: str | None = None
        if op in _REPEATS:
            low, high, sub = av
            repeats = high is const.MAXREPEAT or high > 1
            if repeats and inside and low != high:
                return "a repeated part inside a repeated part (nested quantifiers)"
            found = _walk(sub, inside=inside or repeats)
        elif op is const.SUBPATTERN:
            found = _walk(av[-1], inside=inside)
        elif op is const.BRANCH:
            if inside and len(av[1]) > 1:
                return "an alternation inside a repeated part"
            for branch in av[1]:
                found = found or _walk(branch, inside=inside)
        elif op in (const.ASSERT, const.ASSERT_NOT):
            found = _walk(av[1], inside=inside)
        elif op is const.GROUPREF or op is const.GROUPREF_EXISTS:
            return "a backreference"
        elif getattr(const, "ATOMIC_GROUP", None) is op:
            found = _walk(av, inside=inside)
        if found:
            return found
    return None


def compile_matcher(pattern: str) -> tuple[re.Pattern[str] | None, str | None]:
    """Compile a matcher; return (pattern or None for "all", error message or None)."""
    if pattern in ("", "*"):
        return None, None
    try:
        compiled = re.compile(pattern)
    except re.error as exc:
        return None, f"not a valid regular expression: {exc}"
    except RecursionError:
        return None, "regular expression nested too deeply"
    reason = _catastrophic(pattern)
    if reason:
        return None, (
            f"{pattern!r} can backtrack catastrophically ({reason}); "
            "write it without nested repetition"
        )
    return compiled, None


# --- reading files ------------------------------------------------------------------------


@attrs.frozen
class _Source:
    """One file to read: a config file or a skill."""

    path: Path
    skill: bool


def _sources(paths: Sequence[str | Path], problems: _Problems) -> list[_Source]:
    configs: list[_Source] = []
    skills: list[_Source] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            config = path / "orchestra.yaml"
            if config.is_file():
                configs.append(_Source(config, skill=False))
            skills.extend(_Source(p, skill=True) for p in _skill_files(path))
        elif path.is_file():
            is_skill = path.suffix.lower() == ".md"
            (skills if is_skill else configs).append(_Source(path, skill=is_skill))
        else:
            problems.add(str(path), None, None, "no such file or folder")
    seen: set[Path] = set()
    ordered: list[_Source] = []
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


def _read_text(path: Path, problems: _Problems) -> str | None:
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
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        problems.add(name, line, None, f"not UTF-8 ({exc.reason})")
        return None


def _front_matter(text: str, name: str, problems: _Problems) -> tuple[str, int] | None:
    """The YAML front matter of a SKILL.md and the line it starts on, or None."""
    lines = text.splitlines()
    if not lines or lines[0].rstrip() != "---":
        return None
    for i in range(1, len(lines)):
        if lines[i].rstrip() in ("---", "..."):
            return "\n".join(lines[1:i]), 1
    problems.add(name, 1, None, "front matter opened with '---' is never closed")
    return None


def _parse_yaml(text: str, name: str, offset: int, problems: _Problems) -> Any:
    loader = _Loader(text)
    try:
        return loader.get_single_data()
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


# --- validation ---------------------------------------------------------------------------


@attrs.define
class _Checker:
    """Validates one parsed file into hook specs, collecting problems."""

    file: str
    offset: int
    skill_dir: str | None
    problems: _Problems
    hooks: list[HookSpec] = attrs.field(factory=list)

    def bad(self, line: int | None, field: str, message: str) -> None:
        self.problems.add(self.file, None if line is None else line + self.offset, field, message)

    def document(self, data: Any, *, skill: bool) -> None:
        if data is None:
            return
        if not isinstance(data, _Map):
            self.bad(1, "", f"expected a mapping with a 'hooks' key, got {_kind(data)}")
            return
        if not skill:
            for key in data:
                if key != "hooks":
                    self.bad(
                        data.lines[key],
                        key,
                        "unknown top-level field" + did_you_mean(key, ["hooks"]),
                    )
        if "hooks" in data:
            self.events(data["hooks"], data.lines["hooks"])

    def events(self, value: Any, line: int) -> None:
        if value is None:
            return
        if not isinstance(value, _Map):
            self.bad(line, "hooks", f"expected a mapping of event names, got {_kind(value)}")
            return
        for name, groups in value.items():
            where = f"hooks.{name}"
            spec = EVENTS.get(name)
            if spec is None:
                self.bad(value.lines[name], where, "unknown event" + did_you_mean(name, EVENTS))
                continue
            if groups is None:
                continue
            if not isinstance(groups, _Seq):
                self.bad(
                    value.lines[name], where, f"expected a list of matchers, got {_kind(groups)}"
                )
                continue
            for i, group in enumerate(groups):
                self.group(spec, group, groups.lines[i], f"{where}[{i}]")

    def group(self, spec: EventSpec, group: Any, line: int, where: str) -> None:
        if not isinstance(group, _Map):
            self.bad(
                line, where, f"expected a mapping with 'matcher' and 'hooks', got {_kind(group)}"
            )
            return
        for key in group:
            if key not in _GROUP_FIELDS:
                hint = did_you_mean(key, _GROUP_FIELDS)
                if not hint and key in _COMMON_FIELDS + tuple(
                    f for fs in _TYPE_FIELDS.values() for f in fs
                ):
                    hint = " (hook fields go in a list under 'hooks')"
                self.bad(group.lines[key], f"{where}.{key}", "unknown field" + hint)
        matcher: str | None = None
        pattern: re.Pattern[str] | None = None
        raw = group.get("matcher")
        if raw is not None:
            field = f"{where}.matcher"
            mline = group.lines["matcher"]
            error: str | None
            if isinstance(raw, str):
                pattern, error = compile_matcher(raw)
            else:
                error = f"expected a string, got {_kind(raw)}"
            if error is None and pattern is not None and spec.matcher_field is None:
                error = f'{spec.name} takes no matcher; remove it or use "*"'
            if error is not None:
                self.bad(mline, field, error)
                pattern = None
            matcher = None if pattern is None else raw
        hooks = group.get("hooks")
        if not isinstance(hooks, _Seq) or not hooks:
            hline = group.lines.get("hooks", group.line)
            self.bad(
                hline, f"{where}.hooks", f"expected a non-empty list of hooks, got {_kind(hooks)}"
            )
            return
        for i, hook in enumerate(hooks):
            built = self.hook(spec, matcher, pattern, hook, hooks.lines[i], f"{where}.hooks[{i}]")
            if built is not None:
                self.hooks.append(built)

    def hook(
        self,
        spec: EventSpec,
        matcher: str | None,
        pattern: re.Pattern[str] | None,
        hook: Any,
        line: int,
        where: str,
    ) -> HookSpec | None:
        if not isinstance(hook, _Map):
            self.bad(line, where, f"expected a mapping with a 'type', got {_kind(hook)}")
            return None
        count = len(self.problems.items)
        kind = hook.get("type")
        if kind not in HOOK_TYPES:
            tline = hook.lines.get("type", hook.line)
            if kind is None:
                self.bad(tline, f"{where}.type", f"missing; one of {', '.join(HOOK_TYPES)}")
            else:
                hint = did_you_mean(str(kind), HOOK_TYPES) if isinstance(kind, str) else ""
                self.bad(tline, f"{where}.type", f"unknown hook type {kind!r}{hint}")
            return None
        allowed = _COMMON_FIELDS + _TYPE_FIELDS[kind]
        for key in hook:
            if key not in allowed:
                owners = [t for t, fields in _TYPE_FIELDS.items() if key in fields]
                hint = (
                    f" ({key!r} is a field of {' and '.join(owners)} hooks)"
                    if owners
                    else did_you_mean(key, allowed)
                )
                self.bad(
                    hook.lines[key], f"{where}.{key}", f"unknown field for a {kind} hook{hint}"
                )
        values: dict[str, Any] = {
            "timeout": self.timeout(hook, where),
            "on_error": self.on_error(spec, hook, where),
        }
        values.update(getattr(self, f"fields_{kind}")(spec, hook, where))
        if len(self.problems.items) > count:
            return None
        return HookSpec(
            event=spec.name,
            matcher=matcher,
            type=kind,
            file=self.file,
            line=hook.line + self.offset,
            skill_dir=self.skill_dir,
            pattern=pattern,
            **values,
        )

    # -- common fields --

    def timeout(self, hook: _Map, where: str) -> float:
        value = hook.get("timeout")
        if value is None:
            return DEFAULT_TIMEOUT
        if isinstance(value, bool) or not isinstance(value, int | float):
            self.bad(
                hook.lines["timeout"], f"{where}.timeout", f"expected seconds, got {_kind(value)}"
            )
        elif not 0 < value <= MAX_TIMEOUT:
            self.bad(
                hook.lines["timeout"],
                f"{where}.timeout",
                f"must be in (0, {MAX_TIMEOUT:g}] seconds, got {value!r}",
            )
        else:
            return float(value)
        return DEFAULT_TIMEOUT

    def on_error(self, spec: EventSpec, hook: _Map, where: str) -> OnError:
        value = hook.get("on_error")
        if value is None:
            return spec.default_on_error
        line = hook.lines["on_error"]
        if value not in _ON_ERROR:
            hint = did_you_mean(value, _ON_ERROR) if isinstance(value, str) else ""
            self.bad(
                line, f"{where}.on_error", f"expected continue or block, got {_kind(value)}{hint}"
            )
            return spec.default_on_error
        if value == "block" and not spec.can_block:
            self.bad(line, f"{where}.on_error", f"{spec.name} cannot block; use on_error: continue")
        return "block" if value == "block" else "continue"

    def string(self, hook: _Map, key: str, where: str, *, required: bool) -> str | None:
        value = hook.get(key)
        if value is None or (value == "" and not required):  # empty = absent when optional
            if required:
                self.bad(hook.line, f"{where}.{key}", "missing")
            return None
        if not isinstance(value, str) or not value:
            self.bad(
                hook.lines[key],
                f"{where}.{key}",
                f"expected a non-empty string, got {_kind(value)}",
            )
            return None
        return value

    def flag(self, hook: _Map, key: str, where: str) -> bool:
        value = hook.get(key, False)
        if not isinstance(value, bool):
            self.bad(
                hook.lines[key], f"{where}.{key}", f"expected true or false, got {_kind(value)}"
            )
            return False
        return value

    def strings(
        self, hook: Mapping[str, Any], key: str, lines: Mapping[str, int], where: str
    ) -> tuple[str, ...]:
        value = hook.get(key)
        if value is None:
            return ()
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            self.bad(
                lines[key], f"{where}.{key}", f"expected a list of strings, got {_kind(value)}"
            )
            return ()
        if any("\0" in v for v in value):
            self.bad(lines[key], f"{where}.{key}", "contains a NUL character")
        return tuple(value)

    def string_map(
        self, hook: Mapping[str, Any], key: str, lines: Mapping[str, int], where: str
    ) -> tuple[tuple[str, str], ...]:
        value = hook.get(key)
        if value is None:
            return ()
        if not isinstance(value, Mapping) or not all(isinstance(v, str) for v in value.values()):
            self.bad(
                lines[key], f"{where}.{key}", f"expected a mapping of strings, got {_kind(value)}"
            )
            return ()
        return tuple(value.items())

    # -- per type --

    def fields_command(self, spec: EventSpec, hook: _Map, where: str) -> dict[str, Any]:
        if ("command" in hook) == ("args" in hook):
            self.bad(hook.line, where, "a command hook needs 'command' or 'args' (exactly one)")
        command = self.string(hook, "command", where, required="command" in hook)
        args = self.strings(hook, "args", hook.lines, where) if "args" in hook else None
        if args is not None and not args and hook.get("args") is not None:
            self.bad(hook.lines["args"], f"{where}.args", "must not be empty")
        size = len(command.encode()) if command else sum(len(a.encode()) + 1 for a in args or ())
        if size > MAX_COMMAND_BYTES:
            key = "command" if command else "args"
            self.bad(hook.lines[key], f"{where}.{key}", f"is {size} bytes; at most 32 KB")
        elif command and "\0" in command:
            self.bad(hook.lines["command"], f"{where}.command", "contains a NUL character")
        texts = [command] if command else list(args or ())
        if self.skill_dir is None and any(_SKILL_DIR_REF.search(t) for t in texts):
            key = "command" if command else "args"
            self.bad(
                hook.lines[key],
                f"{where}.{key}",
                "${SKILL_DIR} is only set for hooks in a SKILL.md; "
                "use $ORCHESTRA_PROJECT_DIR or an absolute path",
            )
        if self.skill_dir is not None:
            if command:
                command = _expand_in_shell(command, self.skill_dir)
            if args:
                args = tuple(_SKILL_DIR_REF.sub(lambda _m: str(self.skill_dir), a) for a in args)
        return {
            "command": command,
            "args": args,
            "strict_output": self.flag(hook, "strict_output", where),
        }

    def fields_prompt(self, spec: EventSpec, hook: _Map, where: str) -> dict[str, Any]:
        return {"prompt": self.string(hook, "prompt", where, required=True)}

    def fields_permission(self, spec: EventSpec, hook: _Map, where: str) -> dict[str, Any]:
        decision = hook.get("decision")
        if decision not in _PERMISSIONS:
            line = hook.lines.get("decision", hook.line)
            self.bad(
                line, f"{where}.decision", f"expected allow, deny or ask, got {_kind(decision)}"
            )
        elif not spec.can_block:
            self.bad(
                hook.line,
                where,
                f"permission hooks need an event that can block; {spec.name} cannot",
            )
        return {"decision": decision, "reason": self.string(hook, "reason", where, required=False)}

    def fields_http(self, spec: EventSpec, hook: _Map, where: str) -> dict[str, Any]:
        tls_raw = hook.get("tls", "verify")
        if tls_raw is False:  # YAML 1.1 reads a bare `off` as false
            tls_raw = "off"
        tls: TlsMode = "verify"
        if tls_raw not in _TLS_MODES:
            self.bad(
                hook.lines["tls"],
                f"{where}.tls",
                f"expected verify, no_verify or off, got {_kind(tls_raw)}",
            )
        else:
            tls = tls_raw
        url = self.string(hook, "url", where, required=True)
        if url is not None:
            line = hook.lines["url"]
            try:
                parts = urlsplit(url)
                host = parts.hostname
            except ValueError as exc:
                self.bad(line, f"{where}.url", f"not a valid URL: {exc}")
            else:
                if parts.scheme not in ("http", "https") or not host:
                    self.bad(line, f"{where}.url", f"expected an https:// URL, got {url!r}")
                elif parts.scheme == "http" and tls != "off":
                    self.bad(
                        line, f"{where}.url", "plain http is refused; use https, or set tls: off"
                    )
                elif parts.scheme == "https" and tls == "off":
                    self.bad(line, f"{where}.url", "tls: off needs an http:// URL")
        allowed = self.strings(hook, "allowed_env_vars", hook.lines, where)
        for name in allowed:
            if not _ENV_NAME.fullmatch(name):
                self.bad(
                    hook.lines["allowed_env_vars"],
                    f"{where}.allowed_env_vars",
                    f"{name!r} is not a variable name",
                )
        headers = self.string_map(hook, "headers", hook.lines, where)
        for name, value in headers:
            field = f"{where}.headers.{name}"
            line = hook["headers"].lines.get(name, hook.lines["headers"])
            if not _HEADER_NAME.fullmatch(name):
                self.bad(line, field, "not a valid header name")
            if "\r" in value or "\n" in value or "\0" in value:
                self.bad(line, field, "header values may not contain line breaks or NUL")
            for match in _HEADER_VAR.finditer(value):
                var = match.group(1) or match.group(2)
                if var not in allowed:
                    self.bad(
                        line,
                        field,
                        f"${var} is not in allowed_env_vars" + did_you_mean(var, allowed),
                    )
        return {
            "url": url,
            "headers": headers,
            "allowed_env_vars": allowed,
            "tls": tls,
            "strict_output": self.flag(hook, "strict_output", where),
        }

    def fields_mcp_tool(self, spec: EventSpec, hook: _Map, where: str) -> dict[str, Any]:
        tool = self.string(hook, "tool", where, required=True)
        raw = hook.get("server")
        server: McpServerSpec | None = None
        field = f"{where}.server"
        if raw is None:
            self.bad(hook.line, field, "missing")
        elif isinstance(raw, str) and raw.strip():
            try:
                argv = shlex.split(raw)
            except ValueError as exc:
                self.bad(hook.lines["server"], field, f"cannot split the command line: {exc}")
            else:
                server = McpServerSpec(command=argv[0], args=tuple(argv[1:]))
        elif isinstance(raw, _Map):
            for key in raw:
                if key not in _SERVER_FIELDS:
                    self.bad(
                        raw.lines[key],
                        f"{field}.{key}",
                        "unknown field" + did_you_mean(key, _SERVER_FIELDS),
                    )
            command = self.string(raw, "command", field, required=True)
            cwd = self.string(raw, "cwd", field, required=False)
            server_args = self.strings(raw, "args", raw.lines, field)
            env = self.string_map(raw, "env", raw.lines, field)
            if command is not None:
                server = McpServerSpec(command=command, args=server_args, env=env, cwd=cwd)
        else:
            self.bad(
                hook.lines["server"],
                field,
                f"expected a command line or a mapping, got {_kind(raw)}",
            )
        arguments = hook.get("arguments")
        if arguments is not None and not isinstance(arguments, Mapping):
            self.bad(
                hook.lines["arguments"],
                f"{where}.arguments",
                f"expected a mapping, got {_kind(arguments)}",
            )
            arguments = None
        return {"tool": tool, "server": server, "arguments": _plain(arguments or {})}


def _plain(value: Any) -> Any:
    """The value with our line-remembering containers turned into plain dicts and lists."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _expand_in_shell(command: str, skill_dir: str) -> str:
    """Expand ``${SKILL_DIR}`` in a shell command.

    A folder whose path is plain (letters, digits, ``_./+@%:,=-``) is written in; any
    other is left for the shell to expand from the exported ``SKILL_DIR``, so a folder
    name never becomes shell syntax.
    """
    if not _SHELL_SAFE_PATH.fullmatch(skill_dir):
        return command
    return command.replace("${SKILL_DIR}", skill_dir)


def load_hooks(paths: Sequence[str | Path]) -> tuple[HookSpec, ...]:
    """Read and validate config files, SKILL.md files and folders into merged hooks.

    Config files come first, in the order given (pass the global one before the
    project's), then skills; identical hooks are kept once, where first seen.

    Raises:
        ConfigError: every problem found, each with file:line and field path.
    """
    problems = _Problems()
    hooks: list[HookSpec] = []
    for source in _sources(paths, problems):
        name = str(source.path)
        text = _read_text(source.path, problems)
        if text is None:
            continue
        offset = 0
        if source.skill:
            found = _front_matter(text, name, problems)
            if found is None:
                continue
            text, offset = found
        data = _parse_yaml(text, name, offset, problems)
        skill_dir = str(source.path.parent.resolve()) if source.skill else None
        checker = _Checker(file=name, offset=offset, skill_dir=skill_dir, problems=problems)
        checker.document(data, skill=source.skill)
        hooks.extend(checker.hooks)
    problems.raise_if_any()
    return tuple(_dedup(hooks))


def _dedup(hooks: Iterable[HookSpec]) -> Iterator[HookSpec]:
    seen: set[tuple[Any, ...]] = set()
    for hook in hooks:
        key = hook.key()
        if key not in seen:
            seen.add(key)
            yield hook
