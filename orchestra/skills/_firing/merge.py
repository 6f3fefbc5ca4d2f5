"""Folding the hooks' results of one event into its ``HookOutcome``, in config order.

``Combiner`` folds the hooks' results into the outcome, in config order:

- the first deny or block ends the chain (only on events that can block);
- otherwise ``deny > ask > allow``: the outcome is ``ask`` if any hook asked, ``allow``
  if any allowed, else None (no opinion);
- messages accumulate in config order; a ``continue: false`` becomes a stop request;
- a hook error follows its ``on_error``: ``block`` ends the chain blocked, ``continue``
  counts the hook as no opinion, ``raise`` too, and ``outcome()`` then raises it
  (``CriticalHookError``), once every hook was folded;
- a ``skip`` (on events that can skip: a DAG task's ``AttemptStart``) does not end the
  chain: a later block still wins, as in Arc (block > skip > proceed); the first skip
  gives the reason.

A hook in audit mode (``enforce: false``) counts for nothing: what it answered (an error
included, and whether it would have ended the chain) is kept on ``HookOutcome.audited``.

An answer the event does not allow (a deny on ``PostToolUse``, a ``modified_input`` on
``SessionStart``) changes nothing but a deny's reason, which is added to the messages;
the hook's record says so in its ``note``.

``plain_outcome`` reads a lone hook's record as ``Combiner`` folds it, at a third of the
cost, for the most common answer (a decision at most).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, final

import attrs

from orchestra.skills._firing.outcome import (
    AuditedDecision,
    HookDecision,
    HookOutcome,
    HookRecord,
    critical_error,
)
from orchestra.skills._protocol.catalog import EventSpec
from orchestra.skills._protocol.result import PLAIN_RESULTS, HookResult

__all__ = ["Combiner", "plain_outcome"]


@final
class Combiner:
    """Folds hook results into an outcome, in config order.

    Args:
        spec: the event.
        input: the event's input (e.g. a tool's arguments), as the hooks may modify it.
    """

    __slots__ = (
        "allowed",
        "asked",
        "audited",
        "blocked_by",
        "critical",
        "input",
        "messages",
        "modified",
        "output",
        "output_by",
        "records",
        "retry",
        "skipped",
        "spec",
        "stop",
        "stop_reason",
        "system_messages",
    )

    def __init__(self, spec: EventSpec, input: Mapping[str, Any] | None) -> None:
        self.spec = spec
        self.input = input
        self.modified = False
        self.blocked_by: tuple[str | None, str] | None = None
        self.asked: tuple[str | None, str] | None = None
        self.allowed: tuple[str | None, str] | None = None
        self.messages: list[str] = []
        self.stop = False
        self.stop_reason: str | None = None
        self.records: list[HookRecord] = []
        self.system_messages: list[str] = []
        self.output: Any = None
        self.retry = False
        self.skipped: tuple[str | None, str] | None = None
        self.audited: list[AuditedDecision] = []
        self.critical: list[HookRecord] | None = None  # failed on_error: raise hooks

    def ends(self, record: HookRecord) -> bool:
        """Whether ``record`` ends the chain (a deny, a block, a blocking error)."""
        return record.hook.enforce and self._would_end(record)

    def _would_end(self, record: HookRecord) -> bool:
        result = record.result
        if result is None:
            return record.hook.on_error == "block"
        return result.final or (self.spec.can_block and result.decision in ("deny", "block"))

    def add(self, record: HookRecord) -> bool:
        """Count one hook's record; return True when it ends the chain."""
        if not record.hook.enforce:
            self._audit(record)
            return False
        result = record.result
        if result is None:
            return self._error(record)
        self._collect(result)
        note = self._verdict(record, result)
        if note is True:
            return True
        if result.ignored:
            note = "; ".join((note, *result.ignored) if note else result.ignored)
        if result.output is not None:
            note = self._output(result, record, note)
        if result.modified_input is not None:
            if self.spec.can_modify:
                self.input = dict(result.modified_input)
                self.modified = True
            else:
                note = (note + "; " if note else "") + (
                    f"modified_input ignored: {self.spec.name} cannot modify input"
                )
        self.records.append(attrs.evolve(record, note=note) if note else record)
        return result.final

    def _audit(self, record: HookRecord) -> None:
        """Keep what an unenforced hook decided, and count none of it."""
        result, blocked = record.result, self._would_end(record)
        if result is None:
            audited = AuditedDecision(record.hook, None, record.error, blocked, record.error)
        else:
            reason = result.reason.strip() or None if result.reason else None
            audited = AuditedDecision(
                record.hook, result.decision, reason, blocked, None, result.modified_input
            )
        self.audited.append(audited)
        would = "error" if result is None else audited.verdict
        self.records.append(attrs.evolve(record, note=f"not enforced: would have been {would}"))

    def _error(self, record: HookRecord) -> bool:
        """Count a hook error as its ``on_error`` says; True when it blocks."""
        if record.hook.on_error == "block":
            self.blocked_by = (f"hook error: {record.error}", record.hook.source)
            self.records.append(attrs.evolve(record, note="error blocks (on_error: block)"))
            return True
        if record.hook.on_error == "raise":
            note = "error raised after the other hooks (on_error: raise)"
            if self.critical is None:
                self.critical = []
            self.critical.append(record)
        else:
            note = "error ignored (on_error: continue)"
        self.records.append(attrs.evolve(record, note=note))
        return False

    def _collect(self, result: HookResult) -> None:
        """Keep what every answer may give: messages, retry, a stop."""
        if result.messages:
            self.messages.extend(result.messages)
        if result.system_message:
            self.system_messages.append(result.system_message)
        if result.retry:
            self.retry = True
        if result.stop and not self.stop:
            self.stop, self.stop_reason = True, result.stop_reason

    def _output(self, result: HookResult, record: HookRecord, note: str | None) -> str | None:
        """Keep an answer's tool output; return the record's note.

        On the events before an action (those that can modify their input) an output is
        a mock, and the first one in config order wins; elsewhere it is a rewrite, and
        the last one wins.
        """
        if self.output is None or not self.spec.can_modify:
            self.output, self.output_by = result.output, record
            return note
        ignored = f"output ignored: the mock of {self.output_by.hook.source} came first"
        return f"{note}; {ignored}" if note else ignored

    def _verdict(self, record: HookRecord, result: HookResult) -> str | Literal[True] | None:
        """Count the decision: True when it ends the chain, else a note or None."""
        verdict, spec, source = result.decision, self.spec, record.hook.source
        if verdict is None:
            return None
        reason = result.reason.strip() if result.reason else None
        if verdict in ("deny", "block"):
            if spec.can_block:
                self.blocked_by = (reason or None, source)
                self.records.append(record)
                return True
            if reason:
                self.messages.append(reason)
            return f"{verdict} ignored: {spec.name} cannot block"
        if verdict == "skip":
            if not spec.can_skip:
                return f"skip ignored: {spec.name} cannot skip"
            if self.skipped is None:
                self.skipped = (reason or None, source)
            return None
        if not spec.can_block:
            return f"{verdict} ignored: {spec.name} cannot block" if verdict == "ask" else None
        if verdict == "ask":
            if self.asked is None:
                self.asked = (reason or None, source)
        elif self.allowed is None:
            self.allowed = (reason or None, source)
        return None

    def outcome(self) -> HookOutcome:
        """The combined outcome.

        Raises:
            CriticalHookError: a hook with ``on_error: raise`` failed (the outcome is
                on the error).
        """
        decision: HookDecision | None = None
        reason = source = None
        if self.blocked_by is not None:
            decision, (reason, source) = "deny", self.blocked_by
        elif self.asked is not None:
            decision, (reason, source) = "ask", self.asked
        elif self.skipped is not None:
            reason, source = self.skipped
        elif self.allowed is not None:
            decision, (reason, source) = "allow", self.allowed
        blocked = self.blocked_by is not None
        outcome = HookOutcome(
            decision,
            blocked,
            reason,
            self.input if self.modified and not blocked else None,
            tuple(self.messages) if self.messages else (),
            source,
            self.stop,
            self.stop_reason,
            tuple(self.records),
            "\n".join(self.system_messages) or None if self.system_messages else None,
            None if blocked else self.output,
            self.retry,
            self.skipped is not None and not blocked,
            tuple(self.audited) if self.audited else (),
        )
        if self.critical is not None:
            raise critical_error(self.critical, outcome)
        return outcome


def plain_outcome(spec: EventSpec, record: HookRecord) -> HookOutcome | None:
    """The outcome of a lone hook's record, as a ``Combiner`` folds it, or None.

    Only a result with a decision at most (the most common answer) is read here, at a
    third of a ``Combiner``'s cost; None for any other record, which one folds.

    Args:
        spec: the event.
        record: the only hook's record.
    """
    result = record.result
    if result is None or not record.hook.enforce:
        return None
    if id(result) not in PLAIN_RESULTS and (
        result.messages
        or result.system_message
        or result.output is not None
        or result.retry
        or result.stop
        or result.modified_input is not None
        or result.ignored
    ):
        return None
    verdict = result.decision
    if verdict is None:
        return HookOutcome(None, False, None, None, (), None, False, None, (record,))
    if not spec.can_block or verdict == "skip":  # the decision is ignored, with a note
        return None
    reason = (result.reason.strip() or None) if result.reason else None
    decision: HookDecision = "deny" if verdict == "block" else verdict
    return HookOutcome(
        decision, decision == "deny", reason, None, (), record.hook.source, False, None, (record,)
    )
