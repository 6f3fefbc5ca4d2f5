"""Reading Arc's TOML files: ``[[hooks]]`` tables, each key with its line.

``tomllib`` gives no positions, so the lines are found by scanning the text, simply:
the n-th ``[[hooks]]`` header starts the n-th table, and a key's line is the first
``key =`` in that table's lines. Fields: ``name``, ``event``, ``type``, ``matcher``,
``blocking``, ``timeout_ms`` (Arc's default by type: 60000, prompt hooks 30000),
``sandbox``, ``enabled``; then each type's own: ``command`` (which implies ``type =
"command"``); ``url``, ``headers``, ``allowed_env_vars``, ``tls`` (http, and orchestra's
``allow_private_network``); ``prompt``, ``model`` (prompt, agent); ``max_tool_rounds``
(agent). See ``_arc_hooks`` and ``_arc_remote`` for how each runs.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from typing import Any, Final

from orchestra._errors import did_you_mean
from orchestra.skills._config.matchers import compile_matcher
from orchestra.skills._config.yaml import Map, Problems, kind
from orchestra.skills._hooks.http import HttpHook, check_url, header_problems
from orchestra.skills._hooks.http_post import TLS_MODES, TlsMode
from orchestra.skills._processes.environment import KEPT_MINIMAL
from orchestra.skills._processes.sandbox import Sandbox
from orchestra.skills._protocol.catalog import EVENTS
from orchestra.skills._sources.arc.hooks import ARC_EVENTS, UNWIRED_EVENTS, ArcCommandHook, ArcHook
from orchestra.skills._sources.arc.remote import (
    DEFAULT_MODEL,
    DEFAULT_TOOL_ROUNDS,
    ArcAgentHook,
    ArcHttpHook,
    ArcPromptHook,
)
from orchestra.skills._sources.seed_fields import SeedEntry

__all__ = ["MINIMAL_ENV_NOTE", "arc_entries", "arc_hook", "read_arc"]

_FIELDS: Final = (
    "name",
    "event",
    "type",
    "matcher",
    "blocking",
    "timeout_ms",
    "sandbox",
    "enabled",
)
_TYPE_FIELDS: Final[Mapping[str, tuple[str, ...]]] = {
    "command": ("command",),
    # allow_private_network is orchestra's: an http hook reaches no internal address
    # unless it says so (Arc has no such door)
    "http": ("url", "headers", "allowed_env_vars", "tls", "allow_private_network"),
    "prompt": ("prompt", "model"),
    "agent": ("prompt", "model", "max_tool_rounds"),
}
# Arc's default timeouts, by hook type
_DEFAULT_TIMEOUT_MS: Final[Mapping[str, int]] = {
    "command": 60_000,
    "http": 60_000,
    "prompt": 30_000,
    "agent": 60_000,
}
_MAX_TIMEOUT_MS: Final = 300_000
_HEADER: Final = re.compile(r"\s*\[\[\s*hooks\s*\]\]")
_TABLE: Final = re.compile(r"\s*\[")
_AT_LINE: Final = re.compile(r"at line (\d+)")
MINIMAL_ENV_NOTE: Final = (
    f"hooks without `sandbox` {KEPT_MINIMAL}; `sandbox = false` runs one on the host "
    "with the host's environment, as Arc does"
)
"""What the loader says once per Arc file whose hooks keep the minimal environment."""


def read_arc(file: str, text: str, problems: Problems) -> list[ArcHook]:
    """The hooks of an Arc TOML file, in order; problems go to ``problems``.

    Said once per file, in its notes: hooks that set no ``sandbox`` get orchestra's
    minimal environment, not the host's (a security default orchestra keeps).
    """
    hooks = [
        hook
        for entry in arc_entries(file, text, problems)
        if (hook := arc_hook(entry, problems)) is not None
    ]
    plain = [
        hook
        for hook in hooks
        if isinstance(hook, ArcCommandHook) and hook.sandbox is None and not hook.pass_env
    ]
    if plain:
        problems.notes.append(f"{file}:{plain[0].line}: {MINIMAL_ENV_NOTE}")
    return hooks


def arc_entries(file: str, text: str, problems: Problems) -> list[SeedEntry]:
    """The ``[[hooks]]`` tables of an Arc file, as entries whose keys know their lines."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        found = _AT_LINE.search(str(exc))
        problems.add(file, int(found.group(1)) if found else None, None, f"TOML: {exc}")
        return []
    lines = text.splitlines()
    hooks = data.get("hooks")
    if hooks is None:
        return []
    if not isinstance(hooks, list):
        line = _key_line(lines, 0, len(lines), "hooks") or 1
        problems.add(file, line, "hooks", f"expected [[hooks]] tables, got {kind(hooks)}")
        return []
    headers = [i for i, line in enumerate(lines) if _HEADER.match(line)]
    entries: list[SeedEntry] = []
    for n, table in enumerate(hooks):
        start = headers[n] if n < len(headers) else 0
        end = _table_end(lines, start)
        where = f"hooks[{n}]"
        if not isinstance(table, dict):
            problems.add(file, start + 1, where, f"expected a table, got {kind(table)}")
            continue
        entry = Map(table)
        entry.line = start + 1
        entry.lines = {key: _key_line(lines, start + 1, end, key) or start + 1 for key in table}
        entries.append(SeedEntry(entry, where, file, problems))
    return entries


def _table_end(lines: list[str], start: int) -> int:
    """Where the table whose header is on line index ``start`` ends (its subtables in)."""
    for i in range(start + 1, len(lines)):
        line = lines[i]
        if _HEADER.match(line) or (_TABLE.match(line) and not line.strip().startswith("[hooks.")):
            return i
    return len(lines)


def _key_line(lines: list[str], start: int, end: int, key: str) -> int | None:
    """The 1-based line of the first ``key =`` in ``lines[start:end]``."""
    name = re.escape(key)
    pattern = re.compile(rf"\s*(?:(?:{name}|\"{name}\"|'{name}')\s*=|\[\s*hooks\.{name}\s*\])")
    for i in range(start, end):
        if pattern.match(lines[i]):
            return i + 1
    return None


def arc_hook(entry: SeedEntry, problems: Problems) -> ArcHook | None:
    """One ``[[hooks]]`` table as an ``ArcHook``, or None (problems reported, or a note)."""
    kind_ = _type(entry)
    entry.known(_FIELDS + _TYPE_FIELDS.get(kind_ or "", ()), f"an Arc {kind_ or ''} hook")
    arc_event = _event(entry, problems)
    if arc_event == "":
        return None  # a moment orchestra does not have: noted
    regex = entry.string("matcher")
    if regex is not None:
        _, error = compile_matcher(regex)
        if error is not None:
            entry.bad("matcher", error)
    default_blocking = ARC_EVENTS[arc_event][2] if arc_event is not None else False
    common: dict[str, Any] = {
        "name": entry.string("name"),
        "blocking": entry.flag("blocking", default_blocking),
        "timeout": entry.milliseconds(
            "timeout_ms", _DEFAULT_TIMEOUT_MS.get(kind_ or "", 60_000), _MAX_TIMEOUT_MS
        ),
    }
    enabled = entry.flag("enabled", True)
    event, state = ARC_EVENTS[arc_event][:2] if arc_event is not None else ("RunStart", None)
    own = _own_fields(kind_, entry, event) if kind_ is not None else None
    if entry.count or arc_event is None or own is None or not enabled:
        return None
    if regex is not None and event in ("RunStart", "RunEnd"):
        problems.notes.append(
            f"{entry.file}:{entry.line('matcher')}: {arc_event} takes no matcher (Arc ignores "
            "it too); the hook runs on every run"
        )
        regex = None
    cls, fields = own
    if cls is ArcCommandHook:  # command hooks do not fail open (Arc: a failure blocks)
        gates = common["blocking"] and EVENTS[event].can_block
        fields["on_error"] = "block" if gates else "continue"
    return cls(
        event=event,
        arc_event=arc_event,
        state=state,
        regex=regex,
        file=entry.file,
        line=entry.line(),
        **common,
        **fields,
    )


def _event(entry: SeedEntry, problems: Problems) -> str | None:
    """Arc's event; None when wrong or missing (reported); ``""`` for one noted unwired."""
    arc_event = entry.string("event", required=True)
    if arc_event is not None and arc_event in UNWIRED_EVENTS:
        problems.notes.append(
            f"{entry.file}:{entry.line('event')}: {arc_event}: orchestra has no such moment; "
            "the hook is not loaded"
        )
        return ""
    if arc_event is not None and arc_event not in ARC_EVENTS:
        entry.bad("event", _unknown_event(arc_event))
        return None
    return arc_event


def _type(entry: SeedEntry) -> str | None:
    """The hook's type: ``type``, or ``command`` when it has a ``command``."""
    kind_ = entry.string("type")
    if kind_ is None:
        return "command"
    if kind_ not in _TYPE_FIELDS:
        entry.bad("type", f"unknown hook type {kind_!r} (command, http, prompt or agent)")
        return None
    if kind_ != "command" and "command" in entry.data:
        entry.bad("command", f"a {kind_} hook has no command (command implies type command)")
    return kind_


def _own_fields(
    kind_: str, entry: SeedEntry, event: str
) -> tuple[type[ArcHook], dict[str, Any]] | None:
    """The class of a hook of type ``kind_`` and its own fields, or None (reported)."""
    if kind_ == "command":
        command = entry.string("command", required=True)
        sandboxed = entry.flag("sandbox", False)
        on_host = "sandbox" in entry.data and not sandboxed  # Arc: the host, its environment
        fields: dict[str, Any] = {
            "command": command,
            "sandbox": Sandbox() if sandboxed else None,
            "pass_env": ("*",) if on_host else (),
        }
        return (ArcCommandHook, fields) if command is not None else None
    entry.flag("sandbox", True)  # Arc ignores it for these types; checked all the same
    if kind_ == "http":
        http = _http(entry, event)
        return (ArcHttpHook, {"http": http}) if http is not None else None
    prompt = entry.string("prompt", required=True)
    model = entry.string("model") or DEFAULT_MODEL
    if kind_ == "prompt":
        return (ArcPromptHook, {"prompt": prompt, "model": model}) if prompt else None
    rounds = entry.data.get("max_tool_rounds", DEFAULT_TOOL_ROUNDS)
    if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1:
        entry.bad("max_tool_rounds", f"expected a whole number of rounds >= 1, got {rounds!r}")
        return None
    agent = {"prompt": prompt, "model": model, "max_tool_rounds": rounds}
    return (ArcAgentHook, agent) if prompt else None


def _http(entry: SeedEntry, event: str) -> HttpHook | None:
    """An http hook's request: ``url`` checked against ``tls``, ``headers``, variables."""
    tls: TlsMode = entry.data.get("tls", "verify")
    if tls not in TLS_MODES:
        entry.bad("tls", f"unknown tls {tls!r} (one of {', '.join(TLS_MODES)})")
        return None
    url = entry.string("url", required=True)
    problem = None if url is None else check_url(url, tls)
    if problem is not None:
        entry.bad("url", problem)
    allowed = entry.data.get("allowed_env_vars", [])
    if not isinstance(allowed, list) or not all(isinstance(n, str) for n in allowed):
        entry.bad("allowed_env_vars", f"expected a list of variable names, got {kind(allowed)}")
        allowed = []
    headers = entry.data.get("headers", {})
    if not isinstance(headers, dict) or not all(isinstance(v, str) for v in headers.values()):
        entry.bad("headers", f"expected a table of strings, got {kind(headers)}")
        headers = {}
    for name, value in headers.items():
        for issue in header_problems(name, value, allowed):
            entry.bad(f"headers.{name}", issue)
    door = entry.flag("allow_private_network", False)
    if entry.count or url is None:
        return None
    return HttpHook(
        event=event,
        url=url,
        headers=tuple(headers.items()),
        allowed_env_vars=tuple(allowed),
        tls=tls,
        allow_private_network=door,
        file=entry.file,
        line=entry.line(),
    )


def _unknown_event(name: str) -> str:
    known = [*ARC_EVENTS, *sorted(UNWIRED_EVENTS)]
    return f"unknown event {name!r}" + (
        did_you_mean(name, known) or f" (one of {', '.join(ARC_EVENTS)})"
    )
