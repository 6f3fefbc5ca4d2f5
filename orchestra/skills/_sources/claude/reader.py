"""Claude Code's own files as hook sources, read as Claude Code reads them.

``.claude/settings.json``, ``.claude/settings.local.json``, ``~/.claude/settings.json``
and a plugin's ``hooks/hooks.json`` hold hooks in the same shape as ``orchestra.yaml``
(``hooks: {Event: [{matcher, hooks: [{type, ...}]}]}``). They are read tolerantly and
field for field as Claude Code's current hooks reference documents them:

- every other top-level key (``permissions``, ``model``, ``env``, ``description``, ...)
  is Claude Code's business: a note, never an error; ``disableAllHooks``,
  ``allowedHttpHookUrls`` and ``httpHookAllowedEnvVars`` apply across the files of a load,
  after Claude Code's precedence (see ``_sources.claude.settings``);
- an event, hook type or field this version does not know is a note (the hook or group
  is skipped, or the field ignored), since Claude Code adds them over time; a hook type
  Claude Code does not run on an event (``http`` on ``SessionStart``) is skipped too;
- a matcher follows Claude Code's rules (``ClaudeMatcher``), and on an event without
  matchers it is ignored;
- ``if`` (one permission rule, e.g. ``Bash(rm *)``) filters tool events; on other events
  a hook with ``if`` never runs (skipped, with a note);
- ``args`` is the exec form (no shell); ``shell`` picks ``bash`` or ``powershell``;
- ``async: true`` runs the hook in the background, not waited for; ``asyncRewake`` too,
  and its exit 2 reaches the agent (``rewakeMessage`` before it, ``rewakeSummary`` for the
  user); their output is delivered with the next ``fire``;
- ``once`` is ignored (Claude Code honours it only in skill front matter);
- ``timeout`` defaults to Claude Code's: 600 s for command, http and mcp_tool hooks (30 s
  on UserPromptSubmit, 10 s on MessageDisplay, 1.5 s on SessionEnd, where a longer one is
  cut to 60 s), 30 s for prompt hooks, 60 s for agent hooks; at most
  ``CLAUDE_MAX_TIMEOUT``;
- ``onFailure: "block"`` is ``on_error: block``; hooks fail open otherwise, as in Claude
  Code;
- ``prompt`` and ``agent`` hooks ask the judge; ``mcp_tool`` hooks call a server named in
  the project's (or plugin's) ``.mcp.json``, with ``input`` (``${tool_input.file_path}``
  filled in from the event);
- ``http`` hooks follow Claude Code's URL rules: ``http://`` without TLS is allowed, a
  URL naming a loopback host (``localhost``, ``127.0.0.1``, ``::1``) may reach loopback
  addresses (the name resolved and every address checked, as any name), and any other
  internal address only when a granted ``allowedHttpHookUrls`` entry names the URL's host.
"""

from __future__ import annotations

import ipaddress
import json
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

import attrs

from orchestra.skills._config.entry import Entry
from orchestra.skills._config.yaml import Map, Problems, Seq, kind
from orchestra.skills._hooks.mcp import McpServerSpec
from orchestra.skills._hooks.spec import CLAUDE_MAX_TIMEOUT, HookSpec
from orchestra.skills._hooks.table import HOOK_CLASSES
from orchestra.skills._protocol.catalog import EVENTS, EventSpec, OnError
from orchestra.skills._sources.orchestra import OrchestraChecker

__all__ = [
    "CLAUDE_DEFAULT_TIMEOUTS",
    "CLAUDE_FILE_NAMES",
    "ClaudeChecker",
    "ClaudeFile",
    "read_claude",
]

CLAUDE_FILE_NAMES: Final = ("settings.json", "settings.local.json", "hooks.json")
"""File names read as Claude Code sources."""

CLAUDE_DEFAULT_TIMEOUTS: Final[dict[str, float]] = {"prompt": 30.0, "agent": 60.0}
"""Claude Code's default timeout of prompt and agent hooks, in seconds (the other types'
is the event's, ``ClaudeEvent.timeout``)."""
SESSION_END_CAP: Final = 60.0
"""The longest a SessionEnd hook may take in Claude Code, in seconds."""

_SETTINGS: Final = ("disableAllHooks", "allowedHttpHookUrls", "httpHookAllowedEnvVars")
_COMMON: Final = ("type", "if", "timeout", "statusMessage", "once", "onFailure")
_CLAUDE_FIELDS: Final[dict[str, tuple[str, ...]]] = {
    "command": (
        *_COMMON,
        *("command", "args", "async", "asyncRewake", "shell", "rewakeMessage", "rewakeSummary"),
    ),
    "http": (*_COMMON, "url", "headers", "allowedEnvVars"),
    "mcp_tool": (*_COMMON, "server", "tool", "input"),
    "prompt": (*_COMMON, "prompt", "model", "continueOnBlock"),
    "agent": (*_COMMON, "prompt", "model"),
}
_LOOPBACK_NAMES: Final = frozenset({"localhost", "localhost.", "ip6-localhost"})


@attrs.define
class ClaudeFile:
    """One Claude Code file read: its hooks and the settings that apply across files.

    Attributes:
        path: the file.
        hooks: its hooks, in order.
        disable_all: its ``disableAllHooks``, None when it sets none.
        allowed_urls: its ``allowedHttpHookUrls``, None when it sets none.
        allowed_env_vars: its ``httpHookAllowedEnvVars``, None when it sets none.
    """

    path: Path
    hooks: list[HookSpec] = attrs.field(factory=list)
    disable_all: bool | None = None
    allowed_urls: tuple[str, ...] | None = None
    allowed_env_vars: tuple[str, ...] | None = None


def is_claude_file(path: Path) -> bool:
    """Whether ``path`` is read as a Claude Code file (by its name)."""
    return path.name in CLAUDE_FILE_NAMES or path.suffix.lower() == ".json"


def plugin_root(path: Path) -> str | None:
    """The plugin folder of a ``hooks/hooks.json``, None for other files."""
    if path.name == "hooks.json" and path.parent.name == "hooks":
        return str(path.parent.parent.resolve())
    return None


def _mcp_servers(path: Path, root: str | None) -> dict[str, Any]:
    """The ``mcpServers`` of the ``.mcp.json`` beside the file's ``.claude`` (or plugin)."""
    folder = Path(root) if root else path.parent
    if folder.name == ".claude":
        folder = folder.parent
    try:
        data = json.loads((folder / ".mcp.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    return servers if isinstance(servers, dict) else {}


@attrs.define
class ClaudeChecker(OrchestraChecker):
    """Reads a Claude Code file into hooks (see the module docstring)."""

    plugin_root: str | None = None
    read: ClaudeFile = attrs.field(factory=lambda: ClaudeFile(Path()))

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
            if key not in ("hooks", "description", *_SETTINGS):  # a plugin's description
                self.note(data.lines[key], key, "a Claude Code setting, not a hook: ignored")
        top = Entry(data, "", self.file, self.offset, self.problems)
        if "disableAllHooks" in data and isinstance(data["disableAllHooks"], bool):
            self.read.disable_all = data["disableAllHooks"]
        elif "disableAllHooks" in data:
            self.bad(data.lines["disableAllHooks"], "disableAllHooks", "expected true or false")
        if "allowedHttpHookUrls" in data:
            self.read.allowed_urls = top.strings("allowedHttpHookUrls")
        if "httpHookAllowedEnvVars" in data:
            self.read.allowed_env_vars = top.strings("httpHookAllowedEnvVars")
        if "hooks" in data:
            self.events(data["hooks"], data.lines["hooks"])

    def events(self, value: Any, line: int) -> None:
        if isinstance(value, Map):
            for name in [n for n in value if n not in EVENTS]:
                self.note(value.lines[name], f"hooks.{name}", "event not known here: skipped")
            known = Map({k: v for k, v in value.items() if k in EVENTS})
            known.line = value.line
            known.lines = {k: value.lines[k] for k in known}
            value = known
        super().events(value, line)

    def group(self, spec: EventSpec, group: Any, line: int, where: str) -> None:
        if not isinstance(group, Map):
            self.bad(
                line, where, f"expected an object with 'matcher' and 'hooks', got {kind(group)}"
            )
            return
        for key in group:
            if key not in ("matcher", "hooks"):
                self.note(group.lines[key], f"{where}.{key}", "unknown field: ignored")
        matcher = group.get("matcher")
        if matcher is not None and not isinstance(matcher, str):
            self.bad(
                group.lines["matcher"],
                f"{where}.matcher",
                f"expected a string, got {kind(matcher)}",
            )
            return
        if matcher in ("", "*"):
            matcher = None
        if matcher is not None and spec.claude.matcher_field is None:
            message = f"{spec.name} has no matchers in Claude Code: ignored"
            self.note(group.lines["matcher"], f"{where}.matcher", message)
            matcher = None
        hooks = group.get("hooks")
        if not isinstance(hooks, Seq) or not hooks:
            hline = group.lines.get("hooks", group.line)
            self.bad(
                hline, f"{where}.hooks", f"expected a non-empty list of hooks, got {kind(hooks)}"
            )
            return
        for i, hook in enumerate(hooks):
            built = self.hook(spec, matcher, hook, hooks.lines[i], f"{where}.hooks[{i}]")
            if built is not None:
                self.hooks.append(built)
                engine = getattr(built.pattern, "problem", None)
                if engine:
                    self.note(group.lines.get("matcher"), f"{where}.matcher", engine)

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
        if name not in spec.claude.types:
            self.note(
                line, f"{where}.type", f"Claude Code runs no {name} hooks on {spec.name}: skipped"
            )
            return None
        entry = Entry(hook, where, self.file, self.offset, self.problems, spec, self.skill_dir)
        count = entry.count()
        common = self._common(entry, spec, name, matcher)
        if common is None:
            return None
        fields = getattr(self, f"_{name}_fields")(entry, spec)
        if entry.count() > count:
            return None
        return HOOK_CLASSES[name](**common, **fields)

    def _common(
        self, entry: Entry, spec: EventSpec, name: str, matcher: str | None
    ) -> dict[str, Any] | None:
        """The fields every type has, or None when the hook never runs."""
        for key in entry.data:
            if key not in _CLAUDE_FIELDS[name]:
                self.note(
                    entry.line(key), f"{entry.where}.{key}", f"not a field of {name} hooks: ignored"
                )
        if "once" in entry:
            self.note(
                entry.line("once"),
                f"{entry.where}.once",
                "ignored in settings files, as in Claude Code",
            )
        condition = entry.string("if", required=False)
        if condition is not None and spec.claude.matcher_field != "tool_name":
            message = f"'if' is evaluated on tool events only: on {spec.name} the hook never runs"
            self.note(entry.line("if"), f"{entry.where}.if", message)
            return None
        on_error: OnError = "block" if entry.choice("onFailure", ("block",), None) else "continue"
        if on_error == "block" and not spec.can_block:
            entry.bad("onFailure", f"{spec.name} cannot block")
        return {
            "event": spec.name,
            "matcher": matcher,
            "timeout": self._timeout(entry, spec, name),
            "on_error": on_error,
            "file": self.file,
            "line": entry.line(),
            "status_message": entry.string("statusMessage", required=False),
            "plugin_root": self.plugin_root,
            "claude_code": True,
            "if_rule": condition,
        }

    def _timeout(self, entry: Entry, spec: EventSpec, name: str) -> float:
        default = CLAUDE_DEFAULT_TIMEOUTS.get(name, spec.claude.timeout)
        value = entry.get("timeout")
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            entry.bad("timeout", f"expected seconds > 0, got {kind(value)}")
            return default
        cap = SESSION_END_CAP if spec.name == "SessionEnd" else CLAUDE_MAX_TIMEOUT
        if value > cap:
            self.note(entry.line("timeout"), f"{entry.where}.timeout", f"cut to {cap:g} s")
            return cap
        return float(value)

    def _command_fields(self, entry: Entry, _spec: EventSpec) -> dict[str, Any]:
        command = entry.string("command", required=True)
        args: tuple[str, ...] | None = None
        if "args" in entry:  # exec form: the program, then its arguments, no shell
            args = (command or "", *entry.strings("args"))
            command = None
        elif command is not None and self.plugin_root is not None:
            command = command.replace("${CLAUDE_PLUGIN_ROOT}", self.plugin_root)
        shell = entry.choice("shell", ("bash", "powershell"), None)
        rewake = entry.flag("asyncRewake")
        return {
            "command": command,
            "args": args,
            "shell": None if args is not None else shell,
            "background": entry.flag("async") or rewake,
            "rewake": rewake,
            "rewake_message": entry.string("rewakeMessage", required=False),
            "rewake_summary": entry.string("rewakeSummary", required=False),
        }

    def _prompt_fields(self, entry: Entry, _spec: EventSpec) -> dict[str, Any]:
        return {
            "prompt": entry.string("prompt", required=True),
            "model": entry.string("model", required=False),
            "judge": True,  # Claude Code asks its model
        }

    def _agent_fields(self, entry: Entry, _spec: EventSpec) -> dict[str, Any]:
        return {
            "prompt": entry.string("prompt", required=True),
            "model": entry.string("model", required=False),
        }

    def _http_fields(self, entry: Entry, _spec: EventSpec) -> dict[str, Any]:
        url = entry.string("url", required=True)
        return {
            "url": url,
            "headers": entry.string_map("headers"),
            "allowed_env_vars": entry.strings("allowedEnvVars"),
            "tls": "off" if url is not None and url.lower().startswith("http://") else "verify",
            "allow_loopback": url is not None and names_loopback(url),
        }

    def _mcp_tool_fields(self, entry: Entry, _spec: EventSpec) -> dict[str, Any]:
        name = entry.string("server", required=True) or ""
        found = _mcp_servers(Path(self.file), self.plugin_root).get(name)
        server = McpServerSpec(command="")  # not configured: each call is a hook error
        if isinstance(found, dict) and isinstance(found.get("command"), str):
            args = found.get("args") or []
            env = found.get("env") or {}
            server = McpServerSpec(
                command=found["command"],
                args=tuple(str(a) for a in args) if isinstance(args, list) else (),
                env=tuple((str(k), str(v)) for k, v in env.items())
                if isinstance(env, dict)
                else (),
            )
        else:
            message = f"MCP server {name!r} is not in .mcp.json: each call is a hook error"
            self.note(entry.line("server"), f"{entry.where}.server", message)
        template = entry.get("input")
        if template is not None and not isinstance(template, dict):
            entry.bad("input", f"expected an object, got {kind(template)}")
            template = None
        return {
            "server": server,
            "tool": entry.string("tool", required=True),
            "server_name": name,
            "input_template": json.loads(json.dumps(template or {})),
        }


def names_loopback(url: str) -> bool:
    """Whether the URL's host is a loopback name or address (``localhost``, ``127.0.0.1``)."""
    host = (urlsplit(url).hostname or "").lower()
    if host in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def read_claude(path: Path, data: Any, problems: Problems) -> ClaudeFile:
    """One Claude Code file (already parsed); its notes go to ``problems``."""
    checker = ClaudeChecker(
        file=str(path),
        offset=0,
        skill_dir=None,
        problems=problems,
        plugin_root=plugin_root(path),
        read=ClaudeFile(path),
    )
    checker.document(data, skill=False)
    checker.read.hooks = checker.hooks
    return checker.read
