"""Claude Code's own files as hook sources, read as Claude Code reads them.

``.claude/settings.json``, ``.claude/settings.local.json``, ``~/.claude/settings.json``
and a plugin's ``hooks/hooks.json`` hold hooks in the same shape as ``orchestra.yaml``
(``hooks: {Event: [{matcher, hooks: [{type, ...}]}]}``). What differs, field for field,
is what Claude Code documents:

- every other top-level key (``permissions``, ``model``, ``env``, ...) is Claude Code's
  business: a note, not an error; ``disableAllHooks: true`` loads none of the file's
  hooks (a note says so);
- an event or hook type this version does not know is a note and is skipped, since
  Claude Code adds both over time;
- ``timeout`` defaults to Claude Code's (600 s for command hooks, 30 s for prompt hooks,
  60 s for agent hooks) and may go up to ``CLAUDE_MAX_TIMEOUT``;
- ``onFailure: "block"`` is ``on_error: block``; hooks fail open otherwise, as in Claude
  Code (a guard that should fail closed says so);
- ``statusMessage``, ``async`` (the hook runs beside the others; its answer can't block)
  and ``once`` (at most once per registry) are kept;
- every ``prompt`` hook asks the judge (Claude Code asks its model), ``agent`` hooks too;
- ``${CLAUDE_PLUGIN_ROOT}`` is the plugin's folder (the parent of ``hooks/``), exported
  as ``CLAUDE_PLUGIN_ROOT``; ``$CLAUDE_PROJECT_DIR`` is exported for every hook.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import attrs

from orchestra._errors import did_you_mean
from orchestra.skills._catalog import EVENTS, EventSpec, OnError
from orchestra.skills._fields import Entry
from orchestra.skills._hook import CLAUDE_MAX_TIMEOUT, MAX_TIMEOUT, HookSpec
from orchestra.skills._load import _Checker
from orchestra.skills._types import HOOK_CLASSES
from orchestra.skills._yaml import Map, Problems, kind

__all__ = [
    "CLAUDE_DEFAULT_TIMEOUTS",
    "CLAUDE_FILE_NAMES",
    "ClaudeChecker",
    "to_orchestra_yaml",
]

CLAUDE_FILE_NAMES: Final = ("settings.json", "settings.local.json", "hooks.json")
"""File names read as Claude Code sources."""

CLAUDE_DEFAULT_TIMEOUTS: Final[dict[str, float]] = {
    "command": 600.0,
    "http": 600.0,
    "prompt": 30.0,
    "agent": 60.0,
}
"""Claude Code's default timeout of each hook type, in seconds."""


# Claude Code's hook types that orchestra runs, and the fields each may have there.
_COMMON: Final = ("type", "timeout", "statusMessage", "async", "once", "onFailure")
_CLAUDE_FIELDS: Final[dict[str, tuple[str, ...]]] = {
    "command": (*_COMMON, "command"),
    "prompt": (*_COMMON, "prompt", "model"),
    "agent": (*_COMMON, "prompt", "model"),
    "http": (*_COMMON, "url", "headers", "allowedEnvVars"),
}


def is_claude_file(path: Path) -> bool:
    """Whether ``path`` is read as a Claude Code file (by its name)."""
    return path.name in CLAUDE_FILE_NAMES or path.suffix.lower() == ".json"


def plugin_root(path: Path) -> str | None:
    """The plugin folder of a ``hooks/hooks.json``, None for other files."""
    if path.name == "hooks.json" and path.parent.name == "hooks":
        return str(path.parent.parent.resolve())
    return None


@attrs.define
class ClaudeChecker(_Checker):
    """Reads a Claude Code file into hooks (see the module docstring)."""

    plugin_root: str | None = None

    def note(self, line: int | None, field: str, message: str) -> None:
        """Record something ignored on purpose, for ``orchestra hooks validate``."""
        where = f"{self.file}:{line}" if line is not None else self.file
        text = f"{where}: {field}: {message}" if field else f"{where}: {message}"
        self.problems.notes.append(text)

    def document(self, data: Any, *, skill: bool) -> None:
        if data is None:
            return
        if not isinstance(data, Map):
            self.bad(1, "", f"expected a JSON object with a 'hooks' key, got {kind(data)}")
            return
        for key in data:
            if key not in ("hooks", "disableAllHooks"):
                self.note(data.lines[key], key, "a Claude Code setting, not a hook: ignored")
        disabled = data.get("disableAllHooks", False)
        if not isinstance(disabled, bool):
            self.bad(data.lines["disableAllHooks"], "disableAllHooks", "expected true or false")
        elif disabled:
            if "hooks" in data:
                self.note(data.lines["hooks"], "hooks", "disableAllHooks is true: none loaded")
            return
        if "hooks" in data:
            self.events(data["hooks"], data.lines["hooks"])

    def events(self, value: Any, line: int) -> None:
        if isinstance(value, Map):
            for name in [n for n in value if n not in EVENTS]:
                hint = did_you_mean(str(name), EVENTS)
                self.note(value.lines[name], f"hooks.{name}", f"event not known here{hint}")
            known = Map({k: v for k, v in value.items() if k in EVENTS})
            known.line = value.line
            known.lines = {k: value.lines[k] for k in known}
            value = known
        super().events(value, line)

    def hook(
        self, spec: EventSpec, matcher: str | None, hook: Any, line: int, where: str
    ) -> HookSpec | None:
        if not isinstance(hook, Map):
            self.bad(line, where, f"expected an object with a 'type', got {kind(hook)}")
            return None
        name = hook.get("type")
        if not isinstance(name, str) or name not in _CLAUDE_FIELDS:
            if name is None:
                self.bad(hook.lines.get("type", line), f"{where}.type", "missing")
            else:
                self.note(line, f"{where}.type", f"hook type {name!r} not run here: skipped")
            return None
        entry = Entry(hook, where, self.file, self.offset, self.problems, spec, self.skill_dir)
        count = entry.count()
        allowed = _CLAUDE_FIELDS[name]
        for key in hook:
            if key not in allowed:
                entry.bad(key, f"unknown field for a {name} hook" + did_you_mean(key, allowed))
        timeout = self._timeout(entry, name)
        on_error: OnError = "block" if entry.choice("onFailure", ("block",), None) else "continue"
        if on_error == "block" and not spec.can_block:
            entry.bad("onFailure", f"{spec.name} cannot block")
        common: dict[str, Any] = {
            "event": spec.name,
            "matcher": matcher,
            "timeout": timeout,
            "on_error": on_error,
            "file": self.file,
            "line": entry.line(),
            "status_message": entry.string("statusMessage", required=False),
            "background": entry.flag("async"),
            "once": entry.flag("once"),
            "plugin_root": self.plugin_root,
            "claude_code": True,
        }
        fields = self._fields(entry, name)
        if entry.count() > count:
            return None
        return HOOK_CLASSES[name](**common, **fields)

    def _timeout(self, entry: Entry, name: str) -> float:
        value = entry.get("timeout")
        if value is None:
            return CLAUDE_DEFAULT_TIMEOUTS[name]
        if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            entry.bad("timeout", f"expected seconds > 0, got {kind(value)}")
            return CLAUDE_DEFAULT_TIMEOUTS[name]
        if value > CLAUDE_MAX_TIMEOUT:
            self.note(entry.line("timeout"), f"{entry.where}.timeout", "cut to 3600 s")
            return CLAUDE_MAX_TIMEOUT
        return float(value)

    def _fields(self, entry: Entry, name: str) -> dict[str, Any]:
        if name == "command":
            command = entry.string("command", required=True)
            if command is not None and self.plugin_root is not None:
                command = command.replace("${CLAUDE_PLUGIN_ROOT}", self.plugin_root)
            return {"command": command}
        if name in ("prompt", "agent"):
            prompt = entry.string("prompt", required=True)
            model = entry.string("model", required=False)
            return {
                "prompt": prompt,
                "model": model,
                **({"judged": True} if name == "prompt" else {}),  # agent hooks always ask
            }
        headers = entry.string_map("headers")
        return {
            "url": entry.string("url", required=True),
            "headers": headers,
            "allowed_env_vars": entry.strings("allowedEnvVars"),
        }


def read_claude(path: Path, data: Any, problems: Problems) -> list[HookSpec]:
    """The hooks of one Claude Code file (already parsed); its notes go to ``problems``."""
    checker = ClaudeChecker(
        file=str(path),
        offset=0,
        skill_dir=None,
        problems=problems,
        plugin_root=plugin_root(path),
    )
    checker.document(data, skill=False)
    return checker.hooks


def to_orchestra_yaml(hooks: list[HookSpec], notes: list[str] | None = None) -> str:
    """An ``orchestra.yaml`` with the same hooks (``orchestra hooks import``).

    What cannot carry over as is goes to ``notes``: timeouts above orchestra's cap
    (``MAX_TIMEOUT``) are cut to it; ``statusMessage``, ``async`` and ``once`` have no
    orchestra.yaml field and are left out.
    """
    import yaml

    events: dict[str, list[dict[str, Any]]] = {}
    for hook in hooks:
        entry: dict[str, Any] = {"type": hook.type}
        for field in attrs.fields(type(hook)):
            if not field.metadata.get("config", True) or field.name == "timeout":
                continue
            value = getattr(hook, field.name)
            if value == field.default or value is None or value == ():
                continue
            entry[field.name] = list(value) if isinstance(value, tuple) else value
        entry["timeout"] = min(hook.timeout, MAX_TIMEOUT)
        if notes is not None and hook.timeout > MAX_TIMEOUT:
            notes.append(f"{hook.source}: timeout {hook.timeout:g} s cut to {MAX_TIMEOUT:g} s")
        left_out = [
            name
            for name, on in (
                ("statusMessage", hook.status_message),
                ("async", hook.background),
                ("once", hook.once),
            )
            if on
        ]
        if notes is not None and left_out:
            notes.append(f"{hook.source}: {', '.join(left_out)} left out (no orchestra field)")
        if hook.on_error == "block":
            entry["on_error"] = "block"
        group = {"matcher": hook.matcher, "hooks": [entry]} if hook.matcher else {"hooks": [entry]}
        events.setdefault(hook.event, []).append(group)
    return yaml.safe_dump({"hooks": events}, sort_keys=False, allow_unicode=True)
