"""``plain_outcome``: a lone hook's record read as a ``Combiner`` folds it, at less cost."""

from __future__ import annotations

from orchestra.skills._firing.outcome import HookDecision, HookOutcome, HookRecord
from orchestra.skills._protocol.catalog import EventSpec
from orchestra.skills._protocol.result import PLAIN_RESULTS

__all__ = ["plain_outcome"]


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
