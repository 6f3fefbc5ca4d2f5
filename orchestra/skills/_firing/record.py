"""Recorded events: one JSON line per fired event, for ``orchestra hooks replay``.

A line is one object::

    {"v": 1, "time": "2026-12-01T10:00:00.123456+00:00", "event": "PreToolUse",
     "payload": {"tool_name": "Bash", "tool_input": {"command": "ls"}},
     "outcome": {"decision": "allow", "blocked": false, "skip": false, "reason": null,
                 "decided_by": "orchestra.yaml:4", "audited": [
                   {"hook": "new-guard.yaml:3", "decision": "deny", "blocked": true,
                    "reason": "no rm"}]}}

Every fired event is recorded, also one that no hook matched (so a new file's hooks
can be tried on it). The file is bounded: when the next line would take it past
``max_bytes`` it is renamed ``PATH.1`` (replacing an older one) and a new ``PATH``
begins, so at most twice ``max_bytes`` stay on disk (a single line longer than
``max_bytes`` gets a file of its own). With ``payload=False`` the payload is left out (only the
event, the outcome and the time): such a record tells what was decided but cannot be
replayed.
"""

from __future__ import annotations

import datetime
import json
import logging
import os
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, final

from orchestra.skills._firing.outcome import AuditedDecision, CriticalHookError, HookOutcome

if TYPE_CHECKING:
    from orchestra.skills._firing.background import BackgroundHooks
    from orchestra.skills._firing.registry import HookRegistry

__all__ = [
    "DEFAULT_RECORD_BYTES",
    "RECORD_VERSION",
    "EventRecorder",
    "fire_held",
    "keep",
    "outcome_json",
    "recorded",
]

_log = logging.getLogger("orchestra.skills")

DEFAULT_RECORD_BYTES: Final = 64 * 1024 * 1024
"""How large a record file grows before it is rotated (``PATH.1``), in bytes."""
RECORD_VERSION: Final = 1
"""The ``v`` of a record line."""


def _audited_json(audited: AuditedDecision) -> dict[str, Any]:
    return {
        "hook": audited.hook.source,
        "decision": audited.decision,
        "blocked": audited.blocked,
        "reason": audited.reason,
    }


def outcome_json(outcome: HookOutcome) -> dict[str, Any]:
    """What a record keeps of an outcome: the decision, who took it and why."""
    return {
        "decision": outcome.decision,
        "blocked": outcome.blocked,
        "skip": outcome.skip,
        "reason": outcome.reason,
        "decided_by": outcome.decided_by,
        "audited": [_audited_json(a) for a in outcome.audited],
    }


@final
class EventRecorder:
    """Appends each fired event to a JSON-lines file, rotated at ``max_bytes``.

    Args:
        path: the file (created with its folder; appended to when it exists).
        max_bytes: the size at which it is rotated to ``PATH.1``.
        payload: keep the payloads (needed to replay them).
    """

    __slots__ = ("failures", "max_bytes", "path", "payload")

    def __init__(
        self,
        path: str | os.PathLike[str],
        max_bytes: int = DEFAULT_RECORD_BYTES,
        payload: bool = True,
    ) -> None:
        if max_bytes < 1:
            raise ValueError(f"record_max_bytes must be at least 1, got {max_bytes}")
        self.path = Path(path)
        self.max_bytes = max_bytes
        self.payload = payload
        self.failures = 0
        """How many events could not be written (full disk, no permission...)."""

    def keep(self, event: str, payload: Mapping[str, Any], outcome: HookOutcome) -> None:
        """``write``, and a line that cannot be written is logged and counted, never raised.

        A record is for review: it never changes what was decided.
        """
        try:
            self.write(event, payload, outcome)
        except (OSError, ValueError) as exc:
            self.failures += 1
            _log.warning(
                "the %s event could not be recorded in %s (%s: %s); %d lost so far",
                event,
                self.path,
                type(exc).__name__,
                exc,
                self.failures,
            )

    def write(self, event: str, payload: Mapping[str, Any], outcome: HookOutcome) -> None:
        """Append one event and its outcome."""
        line: dict[str, Any] = {
            "v": RECORD_VERSION,
            "time": datetime.datetime.now(datetime.UTC).isoformat(),
            "event": event,
        }
        if self.payload:
            line["payload"] = payload
        line["outcome"] = outcome_json(outcome)
        text = json.dumps(line, default=repr, ensure_ascii=False) + "\n"
        data = text.encode()
        # Opened for each event (a few µs): nothing stays open, a crash loses nothing, and
        # several processes may append to one file (each line is one write).
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            size = 0
        if size and size + len(data) > self.max_bytes:
            os.replace(self.path, self.path.with_name(self.path.name + ".1"))
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "ab") as file:
            file.write(data)


async def recorded(
    fire: Callable[[str, Mapping[str, Any] | None], Awaitable[HookOutcome]],
    event: str,
    payload: Mapping[str, Any] | None,
    background: BackgroundHooks | None,
    recorder: EventRecorder | None,
    session: str = "",
) -> HookOutcome:
    """``fire(event, payload)``, with background hooks' words delivered, and recorded.

    An event whose critical hook failed is recorded with the outcome on the error.

    Args:
        fire: fires the event (the registry's own firing).
        event: the event.
        payload: its fields.
        background: the background hooks whose words come along, or None.
        recorder: where the event goes, or None (a line it cannot write is logged and
            counted: the outcome stands).
        session: the registry's session, unless the payload names its own (``session_id``):
            the background hooks' words of that session come along.
    """
    session = str((payload or {}).get("session_id", session))
    taken = background.take(session) if background is not None else ()
    try:
        outcome = await fire(event, payload)
    except BaseException as exc:
        if background is not None:
            background.give_back(session, taken)
        if recorder is not None and isinstance(exc, CriticalHookError):
            recorder.keep(event, payload or {}, exc.outcome)
        raise
    if background is not None and taken:
        outcome = background.deliver(outcome, taken)
    if recorder is not None:
        recorder.keep(event, payload or {}, outcome)
    return outcome


async def fire_held(
    registry: HookRegistry, event: str, payload: Mapping[str, Any] | None
) -> HookOutcome:
    """``registry.fire`` without its record line, which the caller writes with ``keep``.

    For a tool call charged to a budget once its hooks answered: a budget in audit mode
    adds to the call's outcome before it is recorded.
    """
    background = registry._background if registry._background.waiting else None
    return await recorded(registry._fire, event, payload, background, None, registry.session_id)


def keep(
    registry: HookRegistry, event: str, payload: Mapping[str, Any] | None, outcome: HookOutcome
) -> None:
    """Record an event ``fire_held`` fired (or one no hook was fired for) with ``record=``."""
    if registry._recorder is not None:
        registry._recorder.keep(event, payload or {}, outcome)
