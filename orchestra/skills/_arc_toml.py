"""Reading Arc's TOML files: ``[[hooks]]`` tables, each key with its line.

``tomllib`` gives no positions, so the lines are found by scanning the text, simply:
the n-th ``[[hooks]]`` header starts the n-th table, and a key's line is the first
``key =`` in that table's lines. Fields: ``name``, ``event``, ``command`` (or ``type =
"command"`` with ``command``), ``matcher``, ``blocking``, ``timeout_ms`` (default
60000), ``sandbox``, ``enabled``. Arc's other hook types (``http``, ``prompt``,
``agent``) are refused with where to write them instead: orchestra.yaml has them.
"""

from __future__ import annotations

import re
import tomllib
from typing import Final

from orchestra._errors import did_you_mean
from orchestra.skills._arc_hooks import ARC_EVENTS, UNWIRED_EVENTS, ArcHook
from orchestra.skills._catalog import EVENTS
from orchestra.skills._env import KEPT_MINIMAL
from orchestra.skills._matchers import compile_matcher
from orchestra.skills._sandbox import Sandbox
from orchestra.skills._seed_fields import SeedEntry
from orchestra.skills._yaml import Map, Problems, kind

__all__ = ["MINIMAL_ENV_NOTE", "arc_entries", "arc_hook", "read_arc"]

_FIELDS: Final = (
    "name",
    "event",
    "command",
    "type",
    "matcher",
    "blocking",
    "timeout_ms",
    "sandbox",
    "enabled",
)
_OTHER_TYPES: Final = ("http", "prompt", "agent")
_DEFAULT_TIMEOUT_MS: Final = 60_000
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
    plain = [hook for hook in hooks if hook.sandbox is None and not hook.pass_env]
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
    entry.known(_FIELDS, "an Arc hook")
    arc_event = entry.string("event", required=True)
    if arc_event is not None and arc_event in UNWIRED_EVENTS:
        problems.notes.append(
            f"{entry.file}:{entry.line('event')}: {arc_event}: orchestra has no such moment; "
            "the hook is not loaded"
        )
        return None
    if arc_event is not None and arc_event not in ARC_EVENTS:
        entry.bad("event", _unknown_event(arc_event))
        arc_event = None
    command = _command(entry)
    name = entry.string("name")
    regex = entry.string("matcher")
    if regex is not None:
        _, error = compile_matcher(regex)
        if error is not None:
            entry.bad("matcher", error)
    default_blocking = ARC_EVENTS[arc_event][2] if arc_event is not None else False
    blocking = entry.flag("blocking", default_blocking)
    timeout = entry.milliseconds("timeout_ms", _DEFAULT_TIMEOUT_MS, _MAX_TIMEOUT_MS)
    sandboxed = entry.flag("sandbox", False)
    sandbox = Sandbox() if sandboxed else None
    on_host = "sandbox" in entry.data and not sandboxed  # Arc: the host, its environment
    enabled = entry.flag("enabled", True)
    if entry.count or arc_event is None or command is None or not enabled:
        return None
    event, state, _ = ARC_EVENTS[arc_event]
    if regex is not None and event in ("RunStart", "RunEnd"):
        problems.notes.append(
            f"{entry.file}:{entry.line('matcher')}: {arc_event} takes no matcher (Arc ignores "
            "it too); the hook runs on every run"
        )
        regex = None
    return ArcHook(
        event=event,
        command=command,
        arc_event=arc_event,
        state=state,
        name=name,
        regex=regex,
        blocking=blocking,
        sandbox=sandbox,
        pass_env=("*",) if on_host else (),
        timeout=timeout,
        on_error="block" if blocking and EVENTS[event].can_block else "continue",
        file=entry.file,
        line=entry.line(),
    )


def _command(entry: SeedEntry) -> str | None:
    kind_ = entry.string("type")
    if kind_ is not None and kind_ != "command":
        if kind_ in _OTHER_TYPES:
            entry.bad(
                "type",
                f"orchestra runs Arc's command hooks; write this {kind_} hook in "
                "orchestra.yaml (its http and prompt hooks take the same fields)",
            )
        else:
            entry.bad("type", f"unknown hook type {kind_!r} (command, http, prompt or agent)")
        return None
    return entry.string("command", required=True)


def _unknown_event(name: str) -> str:
    known = [*ARC_EVENTS, *sorted(UNWIRED_EVENTS)]

    known = [*ARC_EVENTS, *sorted(UNWIRED_EVENTS)]
    return f"unknown event {name!r}" + (
        did_you_mean(name, known) or f" (one of {', '.join(ARC_EVENTS)})"
    )
