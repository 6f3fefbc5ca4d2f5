"""Claude Code settings that apply across the files of one ``load``, and ``hooks import``.

Claude Code merges its settings files by precedence (user ``~/.claude/settings.json`` <
project ``.claude/settings.json`` < local ``.claude/settings.local.json``):

- ``disableAllHooks``: the value of the most precedent file that sets it decides; when
  true, no hook of any Claude Code file of the load runs (plugins' included); a project's
  ``false`` overrides the user's ``true``. orchestra's own files are not Claude Code's
  settings and keep their hooks.
- ``allowedHttpHookUrls``: once any file sets it, an http hook of a Claude Code file runs
  only if its URL matches an entry of the merged list (``*`` matches any text); an entry
  whose host has no ``*`` names that host, which lets the hook reach it even when it is
  private or link-local (a cloud metadata address included).
- ``httpHookAllowedEnvVars``: once any file sets it, headers interpolate only the
  variables on the merged list.
- Both are grants (see ``_sources.claude.grants``): merged from the user's and managed settings and
  from files whose trust record names them; any other file's lists only narrow (a URL
  must match them too, a variable be on them too) and never reach an internal address.

``to_orchestra_yaml`` writes the hooks as an ``orchestra.yaml`` (``orchestra hooks
import``), keeping a plugin's ``CLAUDE_PLUGIN_ROOT`` and ``CLAUDE_PLUGIN_DATA`` as
``env:`` and turning Claude Code matchers into full-match RE2 patterns of the same
meaning; what has no orchestra field is listed in the notes.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final, TypeAlias
from urllib.parse import urlsplit

import attrs

from orchestra.skills._config.matchers import ClaudeMatcher, compile_matcher
from orchestra.skills._hooks.http import HttpHook
from orchestra.skills._hooks.spec import MAX_TIMEOUT, HookSpec
from orchestra.skills._processes.claude_env import plugin_data
from orchestra.skills._protocol.catalog import EVENTS
from orchestra.skills._sources.claude.grants import grant_lines, trusted_grants
from orchestra.skills._sources.claude.reader import CLAUDE_DEFAULT_TIMEOUTS, ClaudeFile

__all__ = ["apply_claude_settings", "settings_level", "to_orchestra_yaml"]

_LEVELS: Final = ("user", "project", "local")
_GRANTING: Final = ("user", "managed")  # levels whose grants need no trust record


def settings_level(path: Path) -> str:
    """Which settings level a Claude Code file is: user, project, local, plugin or managed."""
    if path.name == "managed-settings.json":
        return "managed"
    if path.name == "settings.local.json":
        return "local"
    if path.name == "hooks.json":
        return "plugin"
    user = Path.home() / ".claude"
    if path.resolve().parent == user.resolve():
        return "user"
    return "project"


def _disabled(files: Sequence[ClaudeFile]) -> ClaudeFile | None:
    """The file whose ``disableAllHooks: true`` decides, or None when hooks run."""
    deciding: ClaudeFile | None = None
    rank = -1
    for read in files:
        level = settings_level(read.path)
        if read.disable_all is not None and level in _LEVELS and _LEVELS.index(level) >= rank:
            deciding, rank = read, _LEVELS.index(level)
    return deciding if deciding is not None and deciding.disable_all else None


def _names_host(pattern: str, url: str) -> bool:
    """Whether an ``allowedHttpHookUrls`` entry names the URL's host (no ``*`` in it)."""
    host = urlsplit(pattern).hostname
    return bool(host) and "*" not in (host or "*") and host == urlsplit(url).hostname


_Lists: TypeAlias = tuple[tuple[str, ...] | None, tuple[str, ...] | None]  # (urls, names)


def _http(hook: HttpHook, granted: _Lists, narrowing: _Lists) -> HttpHook | None:
    """``hook`` under the grants and the narrowing lists; None when it is left out."""
    changes: dict[str, Any] = {}
    for urls, grants in ((granted[0], True), (narrowing[0], False)):
        if urls is None:
            continue
        matching = [p for p in urls if fnmatch.fnmatchcase(hook.url, p)]
        if not matching:
            return None
        if grants and any(_names_host(p, hook.url) for p in matching):
            changes["allow_private_network"] = True
    allowed = hook.allowed_env_vars
    for names in (granted[1], narrowing[1]):
        if names is not None:
            allowed = changes["allowed_env_vars"] = tuple(n for n in allowed if n in names)
    return attrs.evolve(hook, **changes) if changes else hook


def _merged(files: Sequence[ClaudeFile], field: str) -> tuple[str, ...] | None:
    values = [getattr(read, field) for read in files if getattr(read, field) is not None]
    return tuple(v for value in values for v in value) if values else None


def _lists(files: Sequence[ClaudeFile]) -> _Lists:
    return _merged(files, "allowed_urls"), _merged(files, "allowed_env_vars")


def _split_grants(files: Sequence[ClaudeFile], notes: list[str]) -> tuple[_Lists, _Lists]:
    """The lists that grant (user, managed, trusted files) and those that only narrow."""
    granting: list[ClaudeFile] = []
    narrowing: list[ClaudeFile] = []
    for read in files:
        lines = grant_lines(read.allowed_urls, read.allowed_env_vars)
        if not lines:
            continue
        if settings_level(read.path) in _GRANTING or trusted_grants(read.path, lines):
            granting.append(read)
            continue
        narrowing.append(read)
        notes.append(
            f"{read.path}: its network grants ({'; '.join(lines)}) only narrow what http "
            f"hooks may do until you trust them: `orchestra hooks trust {read.path}`"
        )
    return _lists(granting), _lists(narrowing)


def apply_claude_settings(files: Sequence[ClaudeFile], notes: list[str]) -> set[int]:
    """Apply the cross-file settings to each file's hooks, in place.

    Returns:
        The ids of the hooks left out (of every file), for the caller to drop.
    """
    dropped: set[int] = set()
    if not files:
        return dropped
    off = _disabled(files)
    if off is not None:
        for read in files:
            dropped.update(id(hook) for hook in read.hooks)
        notes.append(f"{off.path}: disableAllHooks is true: no hook of a Claude Code file runs")
        return dropped
    if all(read.allowed_urls is None and read.allowed_env_vars is None for read in files):
        return dropped
    granted, narrowing = _split_grants(files, notes)
    for read in files:
        for i, hook in enumerate(read.hooks):
            if not isinstance(hook, HttpHook):
                continue
            kept = _http(hook, granted, narrowing)
            if kept is None:
                dropped.add(id(hook))
                notes.append(f"{hook.source}: {hook.url} is not in allowedHttpHookUrls: left out")
            else:
                read.hooks[i] = kept
    return dropped


def _matcher(hook: HookSpec, notes: list[str]) -> tuple[str | None, bool]:
    """The hook's matcher as an orchestra (full-match RE2) one, and whether it carries."""
    pattern = hook.pattern
    if not isinstance(pattern, ClaudeMatcher):
        return hook.matcher, True
    if pattern.names is not None:
        return "|".join(sorted(pattern.names)), True
    full = f"(?s).*(?:{pattern.pattern}).*"
    if compile_matcher(full)[1] is not None:
        notes.append(f"{hook.source}: matcher {pattern.pattern!r} cannot run on RE2: left out")
        return None, False
    return full, True


def _left_out(hook: HookSpec) -> list[str]:
    fields = [
        ("statusMessage", hook.status_message),
        ("async", hook.background),
        ("if", hook.if_rule),
        ("asyncRewake", getattr(hook, "rewake", False)),
        ("shell", getattr(hook, "shell", None)),
    ]
    return [name for name, value in fields if value]


def _plain(value: Any) -> Any:
    """A hook field's value as orchestra.yaml writes it (what ``load`` reads back).

    attrs values (an mcp_tool's ``server``, a ``sandbox``) and pairs (``env``,
    ``headers``) become mappings, tuples lists, read-only mappings plain ones.
    """
    if attrs.has(type(value)):
        fields = attrs.fields(type(value))
        return {f.name: _plain(v) for f in fields if (v := getattr(value, f.name)) != f.default}
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, tuple) and value and all(_is_pair(item) for item in value):
        return {key: _plain(item) for key, item in value}
    if isinstance(value, tuple | list):
        return [_plain(item) for item in value]
    return value


def _is_pair(item: object) -> bool:
    return isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str)


def _entry(hook: HookSpec, notes: list[str]) -> dict[str, Any]:
    """One hook as an orchestra.yaml entry; what does not carry over goes to ``notes``."""
    entry: dict[str, Any] = {"type": hook.type}
    for field in attrs.fields(type(hook)):
        if not field.metadata.get("config", True) or field.name == "timeout":
            continue
        value = getattr(hook, field.name)
        if value == field.default or value is None or value == ():
            continue
        entry[field.name] = _plain(value)
    if hook.plugin_root is not None and hook.type == "command":
        plugin = {"CLAUDE_PLUGIN_ROOT": hook.plugin_root}
        plugin["CLAUDE_PLUGIN_DATA"] = plugin_data(hook.plugin_root)
        entry["env"] = {**plugin, **dict(entry.get("env") or {})}
    entry["timeout"] = min(hook.timeout, MAX_TIMEOUT)
    if hook.timeout > MAX_TIMEOUT and hook.timeout != _claude_default_timeout(hook):
        notes.append(f"{hook.source}: timeout {hook.timeout:g} s cut to {MAX_TIMEOUT:g} s")
    left_out = _left_out(hook)
    if left_out:
        notes.append(f"{hook.source}: {', '.join(left_out)} left out (no orchestra field)")
    if hook.on_error == "block":
        entry["on_error"] = "block"
    return entry


def _claude_default_timeout(hook: HookSpec) -> float | None:
    """Claude Code's default timeout for ``hook``, or None for an orchestra hook."""
    if not hook.claude_code:
        return None
    return CLAUDE_DEFAULT_TIMEOUTS.get(hook.type, EVENTS[hook.event].claude.timeout)


def _refusal(hook: HookSpec, matcher: str | None) -> str | None:
    """Why ``hook`` cannot be written with the same meaning, or None when it can."""
    spec = EVENTS[hook.event]
    if hook.claude_code and matcher and spec.claude.matcher_field != spec.matcher_field:
        return (
            f"its matcher reads {spec.claude.matcher_field} in Claude Code, but "
            f"{spec.matcher_field} in orchestra.yaml"
        )
    return None


def to_orchestra_yaml(hooks: list[HookSpec], notes: list[str] | None = None) -> str:
    """An ``orchestra.yaml`` with the same hooks (``orchestra hooks import``).

    Every hook keeps its meaning or is left out with a note saying why: a Claude Code
    matcher becomes the full-match RE2 pattern that matches the same names (a pattern
    RE2 cannot run, or one on a field orchestra.yaml does not match, leaves its hook
    out); a Claude Code prompt hook asks the judge (``judge: true``), as Claude Code asks
    its model. Notes are only for what the file says: a timeout it sets above
    orchestra's cap (``MAX_TIMEOUT``) is cut to it; ``statusMessage``, ``async``, ``if``,
    ``asyncRewake`` and ``shell`` have no orchestra.yaml field and are left out. A hook
    that sets no timeout gets Claude Code's default, cut to the cap without a note.
    """
    import yaml

    notes = notes if notes is not None else []
    events: dict[str, list[dict[str, Any]]] = {}
    for hook in hooks:
        matcher, carries = _matcher(hook, notes)
        if not carries:
            continue
        refusal = _refusal(hook, matcher)
        if refusal is not None:
            notes.append(f"{hook.source}: left out: {refusal}")
            continue
        entry = _entry(hook, notes)
        group = {"matcher": matcher, "hooks": [entry]} if matcher else {"hooks": [entry]}
        events.setdefault(hook.event, []).append(group)
    return yaml.safe_dump({"hooks": events}, sort_keys=False, allow_unicode=True)
