"""``CriticalHookError``: what ``fire`` raises when a hook with ``on_error: raise`` failed.

A critical hook's error (it could not connect, answered non-2xx, timed out, crashed,
printed something that is not a result) does not end the chain: every other hook of the
event runs to its end, as if the failed hook had answered nothing, and then ``fire``
raises. When several critical hooks failed, the first in config order is raised and the
others are on its ``others`` (and in its notes): one ``except CriticalHookError``
catches them all, without ``except*``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from orchestra._errors import HookError

if TYPE_CHECKING:
    from orchestra.skills._firing.outcome import HookOutcome, HookRecord

__all__ = ["CriticalHookError", "critical_error"]


class CriticalHookError(HookError):
    """A hook with ``on_error: raise`` failed; ``registry.fire`` raised it after the others ran.

    Attributes:
        hook: where the hook was written, ``file:line``.
        moment: the event (as ``event``).
        event: the event, e.g. ``"PostToolUse"``.
        hook_id: the hook's id (``HookSpec.hook_id``).
        error: the hook error, e.g. ``"HTTP 500: ..."``, ``"timed out after 5 s"``.
        record: the failed hook's record (``HookRecord``).
        outcome: what the event's other hooks answered, as if the failed ones had
            answered nothing (their records are in it, noted).
        others: the errors of the other critical hooks of the same event that failed,
            in config order (each with the same ``outcome``).
    """

    def __init__(
        self,
        record: HookRecord,
        outcome: HookOutcome,
        others: tuple[CriticalHookError, ...] = (),
    ) -> None:
        hook = record.hook
        message = f"{hook.source}: {hook.event} {hook.type} hook failed (on_error: raise): "
        super().__init__(message + str(record.error), hook=hook.source, moment=hook.event)
        self.event = hook.event
        self.hook_id = hook.hook_id
        self.error = str(record.error)
        self.record = record
        self.outcome = outcome
        self.others = others
        for other in others:
            self.add_note(f"also failed: {other}")


def critical_error(failed: Sequence[HookRecord], outcome: HookOutcome) -> CriticalHookError:
    """The error to raise for the failed critical hooks' records, in config order."""
    others = tuple(CriticalHookError(record, outcome) for record in failed[1:])
    return CriticalHookError(failed[0], outcome, others)
