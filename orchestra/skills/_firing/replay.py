"""Replaying recorded events through other hooks: which decisions would change.

``HookRegistry.replay(path)`` reads a file of recorded events (``load(record=...)``,
``orchestra run --record-events``) twice, a line at a time, so memory stays bounded
whatever its size: first to check every line (a corrupt or truncated file is refused
before any hook runs, naming the line), then to fire each event through the registry's
hooks, for real. A line over ``MAX_REPLAY_LINE`` bytes (read no further than that) or
nested deeper than ``MAX_REPLAY_DEPTH`` is refused, naming it. An event whose decision
differs from the recorded one is a change:

=================  ==========================================================
decision           from an outcome
=================  ==========================================================
``deny``           blocked (a deny, a block, a blocking hook error)
``ask``            an ``ask`` decision
``skip``           a ``skip`` decision (a DAG task's ``AttemptStart``)
``allow``          an ``allow`` decision
``none``           no hook gave an opinion
=================  ==========================================================
"""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, final

import attrs

from orchestra._errors import ConfigError
from orchestra.skills._firing.outcome import CriticalHookError, HookOutcome
from orchestra.skills._protocol.catalog import EVENTS

if TYPE_CHECKING:
    from orchestra.skills._firing.registry import HookRegistry

__all__ = [
    "KEPT_CHANGES",
    "MAX_REPLAY_DEPTH",
    "MAX_REPLAY_LINE",
    "ReplayChange",
    "ReplayReport",
    "replay",
    "verdict",
]

KEPT_CHANGES: Final = 1000
"""How many changes a ``ReplayReport`` keeps (its counts cover every one)."""
MAX_REPLAY_LINE: Final = 64 * 1024 * 1024
"""The longest line a record file may have, in bytes (the record's own rotation size)."""
MAX_REPLAY_DEPTH: Final = 200
"""How deeply a recorded payload may nest (objects and lists)."""
_SUBJECT_CHARS: Final = 80
_SUBJECT_FIELDS: Final = ("command", "file_path", "path", "url", "pattern", "prompt")


def verdict(outcome: HookOutcome) -> str:
    """The one-word decision of an outcome (see the module docstring)."""
    if outcome.blocked:
        return "deny"
    if outcome.decision is not None:
        return outcome.decision
    return "skip" if outcome.skip else "none"


def _recorded_verdict(outcome: Mapping[str, Any]) -> str:
    if outcome.get("blocked"):
        return "deny"
    decision = outcome.get("decision")
    if isinstance(decision, str):
        return decision
    return "skip" if outcome.get("skip") else "none"


def subject(event: str, payload: Mapping[str, Any]) -> str:
    """What an event was about, in a few words: a tool and its command, an agent, ..."""
    spec = EVENTS[event]
    field = spec.matcher_field
    name = payload.get(field) if field else None
    words = [str(name)] if name is not None else []
    tool_input = payload.get("tool_input")
    if isinstance(tool_input, Mapping):
        for key in _SUBJECT_FIELDS:
            value = tool_input.get(key)
            if isinstance(value, str):
                words.append(value)
                break
    text = " ".join(words).replace("\n", " ")
    return text if len(text) <= _SUBJECT_CHARS else text[: _SUBJECT_CHARS - 1] + "…"


@final
@attrs.frozen
class ReplayChange:
    """One recorded event whose decision would change under the replayed hooks.

    Attributes:
        line: its line in the events file (1-based).
        event: the event, e.g. ``"PreToolUse"``.
        subject: what it was about (a tool and its command, ...), cut to 80 characters.
        was: the recorded decision (``deny``, ``ask``, ``skip``, ``allow`` or ``none``).
        now: the decision the replayed hooks give.
        decided_by: the hook that decides now, as ``file:line``, or None.
        reason: the reason it gives now, or None.
    """

    line: int
    event: str
    subject: str
    was: str
    now: str
    decided_by: str | None
    reason: str | None


@final
@attrs.frozen
class ReplayReport:
    """What replaying a file of recorded events found.

    Attributes:
        path: the events file.
        events: how many events were replayed.
        changed: how many would be decided otherwise.
        changes: the changes, in file order (the first ``KEPT_CHANGES``).
        by_change: how many changed from each decision to each other one, as
            ``{("allow", "deny"): 3, ...}``.
    """

    path: str
    events: int
    changed: int
    changes: tuple[ReplayChange, ...]
    by_change: Mapping[tuple[str, str], int]

    @property
    def ok(self) -> bool:
        """No recorded decision would change."""
        return self.changed == 0

    def summary(self) -> str:
        """One line: how many events, how many would change, and how."""
        if not self.changed:
            return f"{self.events} events replayed: no decision would change"
        how = ", ".join(f"{n} {was} -> {now}" for (was, now), n in sorted(self.by_change.items()))
        return f"{self.events} events replayed: {self.changed} would change ({how})"


def _refuse(path: Path, line: int, message: str) -> ConfigError:
    return ConfigError(f"{path}:{line}: {message}", file=str(path), line=line)


def _check(path: Path, number: int, text: str) -> tuple[str, dict[str, Any], str]:
    """One line's event, payload and recorded decision; ConfigError if it is not one."""
    try:
        record = json.loads(text)
    except ValueError as exc:
        truncated = " (the file is truncated?)" if not text.endswith("\n") else ""
        raise _refuse(path, number, f"not a JSON line: {exc}{truncated}") from None
    except RecursionError:
        record = None
    if record is None or _too_deep(record):
        raise _refuse(path, number, f"nested deeper than {MAX_REPLAY_DEPTH} levels")
    if not isinstance(record, dict):
        raise _refuse(path, number, f"expected a JSON object, got {type(record).__name__}")
    event = record.get("event")
    if not isinstance(event, str) or event not in EVENTS:
        raise _refuse(path, number, f"'event': not an event of the catalog: {event!r}")
    if "payload" not in record:
        raise _refuse(path, number, "recorded without its payload: it cannot be replayed")
    payload, outcome = record["payload"], record.get("outcome")
    if not isinstance(payload, dict):
        raise _refuse(path, number, f"'payload': expected an object, got {type(payload).__name__}")
    if not isinstance(outcome, dict):
        raise _refuse(path, number, "'outcome': expected an object with the recorded decision")
    return event, payload, _recorded_verdict(outcome)


def _too_deep(value: Any) -> bool:
    """Whether ``value`` nests deeper than ``MAX_REPLAY_DEPTH`` (checked without recursion)."""
    level: list[Any] = [value]
    for _ in range(MAX_REPLAY_DEPTH):
        level = [
            item
            for node in level
            if isinstance(node, dict | list)
            for item in (node.values() if isinstance(node, dict) else node)
        ]
        if not level:
            return False
    return any(isinstance(node, dict | list) and node for node in level)


def _lines(path: Path) -> Iterator[tuple[int, str, dict[str, Any], str]]:
    """Every record of the file, checked, a line at a time (none read past its limit)."""
    with path.open("rb") as file:
        number = 0
        while raw := file.readline(MAX_REPLAY_LINE + 1):
            number += 1
            if len(raw) > MAX_REPLAY_LINE:
                raise _refuse(path, number, f"a line over {MAX_REPLAY_LINE} bytes")
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise _refuse(path, number, f"not UTF-8 text: {exc.reason}") from None
            if text.strip():
                yield (number, *_check(path, number, text))


async def replay(
    registry: HookRegistry,
    path: str | os.PathLike[str],
    on_change: Callable[[ReplayChange], Awaitable[None] | None] | None = None,
) -> ReplayReport:
    """Fire every event of a record file through ``registry``; see ``HookRegistry.replay``."""
    file = Path(path)
    for _ in _lines(file):  # every line checked before any hook runs
        pass
    events = changed = 0
    changes: list[ReplayChange] = []
    by_change: dict[tuple[str, str], int] = {}
    for number, event, payload, was in _lines(file):
        try:
            outcome = await registry.fire(event, payload)
        except CriticalHookError as exc:  # replayed for its decision, as the others
            outcome = exc.outcome
        events += 1
        now = verdict(outcome)
        if now == was:
            continue
        changed += 1
        by_change[(was, now)] = by_change.get((was, now), 0) + 1
        change = ReplayChange(
            number, event, subject(event, payload), was, now, outcome.decided_by, outcome.reason
        )
        if len(changes) < KEPT_CHANGES:
            changes.append(change)
        if on_change is not None:
            done = on_change(change)
            if done is not None:
                await done
    return ReplayReport(str(file), events, changed, tuple(changes), by_change)
