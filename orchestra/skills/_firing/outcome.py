"""What firing an event answers: ``HookRecord`` per hook, ``HookOutcome`` for the chain.

And ``CriticalHookError``, what ``fire`` raises when a hook with ``on_error: raise``
failed. A critical hook's error (it could not connect, answered non-2xx, timed out,
crashed, printed something that is not a result) does not end the chain: every other hook of the
event runs to its end, as if the failed hook had answered nothing, and then ``fire``
raises. When several critical hooks failed, the first in config order is raised and the
others are on its ``others`` (and in its notes): one ``except CriticalHookError``
catches them all, without ``except*``.

How the hooks' results are folded into the outcome is ``_firing.merge``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal, TypeAlias, final

import attrs

from orchestra._errors import HookError
from orchestra.skills._hooks.spec import HookSpec
from orchestra.skills._protocol.result import HookResult

__all__ = [
    "EMPTY",
    "AuditedDecision",
    "CriticalHookError",
    "HookDecision",
    "HookOutcome",
    "HookRecord",
    "critical_error",
]

HookDecision: TypeAlias = Literal["allow", "deny", "ask"]
"""The decision of a fired event."""


# HookRecord and HookOutcome are made on every fire: frozen without slots, attrs writes
# their fields straight into the instance's __dict__, which costs half of what a slotted
# frozen instance's object.__setattr__ per field does.
@final
@attrs.frozen(slots=False)
class HookRecord:
    """What one hook did during a ``fire``: its result or error, and how long it took.

    Attributes:
        hook: the hook that ran.
        result: its result, or None if it failed.
        error: the hook error's message (``"exited 1"``, ``"timed out after 5 s"``, ...),
            or None if it gave a result.
        exit_code: the exit status of a command hook (for an error too, when known).
        stderr: what a command hook wrote on stderr.
        duration: seconds the hook took.
        note: how the answer counted, when not plainly: e.g. ``"error ignored
            (on_error: continue)"`` or ``"deny ignored: PostToolUse cannot block"``.
        error_summary: the error without anything the hook itself wrote (see
            ``HookRunError.summary``), or None if it gave a result.
    """

    hook: HookSpec
    result: HookResult | None
    error: str | None
    exit_code: int | None
    stderr: str
    duration: float
    note: str | None = None
    error_summary: str | None = None


@final
@attrs.frozen
class AuditedDecision:
    """What a hook in audit mode (``enforce: false``) decided, which changed nothing.

    Attributes:
        hook: the hook (``hook.source`` says where it was written).
        decision: what it answered (``"allow"``, ``"deny"``, ``"ask"``, ``"block"``,
            ``"skip"``), or None for no opinion or an error.
        reason: the reason it gave, or its error's message.
        blocked: had it been enforced, it would have ended the chain: a deny or block on
            an event that can block, or a hook error under ``on_error: block`` (a guard
            fails closed here, in the record only).
        error: the hook error's message, or None if it answered.
        modified_input: the input it would have given the tool, or None.
    """

    hook: HookSpec
    decision: str | None
    reason: str | None
    blocked: bool
    error: str | None = None
    modified_input: Mapping[str, Any] | None = None

    @property
    def verdict(self) -> str:
        """One word for what it would have done: ``deny``, ``ask``, ``allow``, ... or ``none``."""
        if self.blocked:
            return "deny"
        return self.decision or "none"


@final
@attrs.frozen(slots=False)
class HookOutcome:
    """The combined answer of the hooks of one fired event.

    Attributes:
        decision: ``"deny"`` (also for a block), ``"ask"``, ``"allow"``, or None when no
            hook gave an opinion.
        blocked: the chain ended in a deny or block: a ``deny``/``block`` decision, exit
            code 2, or a hook error under ``on_error: block``.
        reason: the reason given with the decision, if any.
        modified_input: the input as the hooks modified it (e.g. a tool's arguments), or
            None if no hook modified it (or the event was blocked).
        messages: the hooks' messages for the agent, in config order (``message``,
            ``additionalContext``, prompt hooks' text, plain context output).
        system_message: the hooks' messages for the user (``systemMessage``), joined
            by newlines in config order; None when there are none.
        output: a tool output a hook gave: on ``PreToolUse`` (and the other events
            that can modify their input, e.g. ``AttemptStart``) a mock, the first one in
            config order (the guarded tool is not called; later mocks are ignored, noted
            on their records); on ``PostToolUse`` a rewrite of what the caller gets, the
            last one in config order; None when no hook gave one.
        retry: a ``PermissionDenied`` hook said the agent may try again.
        decided_by: where the hook that gave the decision was written, as ``file:line``.
        stop: a hook asked the agent to stop (Claude Code's ``continue: false``).
        stop_reason: the reason given with the first stop request.
        records: what each hook that ran did, in config order.
        skip: a hook answered ``decision: skip`` and none blocked (events that can skip:
            a DAG task's ``AttemptStart``); ``reason`` and ``decided_by`` are its.
        audited: what the hooks in audit mode (``enforce: false``) decided, in config
            order; none of it is in the fields above.
    """

    decision: HookDecision | None = None
    blocked: bool = False
    reason: str | None = None
    modified_input: Mapping[str, Any] | None = None
    messages: tuple[str, ...] = ()
    decided_by: str | None = None
    stop: bool = False
    stop_reason: str | None = None
    records: tuple[HookRecord, ...] = ()
    system_message: str | None = None
    output: Any = None
    retry: bool = False
    skip: bool = False
    audited: tuple[AuditedDecision, ...] = ()

    @property
    def errors(self) -> tuple[HookRecord, ...]:
        """The records of the hooks that failed (crashed, timed out, bad output)."""
        records = self.records
        if len(records) == 1:  # the most common case, without a generator
            return records if records[0].error is not None else ()
        return tuple(record for record in records if record.error is not None)


EMPTY: Final = HookOutcome()
"""The outcome of an event that ran no hook (shared: no allocation)."""


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
