"""A person's answers to the calls an ``ask`` deferred, as pydantic-ai's ``DeferredToolResults``.

The pending request of each deferred call is ``DeferredToolRequests.metadata[call_id]``
(``orchestra.bridge.Ask.request``); ``answer_deferred`` checks each answer against it with
``orchestra.bridge.resume`` and carries the checked answer to the resumed run in
``DeferredToolResults.metadata[call_id]``, where the capability reads it back.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from pydantic_ai import DeferredToolRequests, DeferredToolResults, ToolApproved, ToolDenied

from orchestra.bridge import Approval, resume

__all__ = ["APPROVAL_KEY", "answer_deferred", "approval_of"]

APPROVAL_KEY: Final = "orchestra_approval"
"""Where a checked answer travels in ``DeferredToolResults.metadata[call_id]``."""


def answer_deferred(
    requests: DeferredToolRequests, answers: Mapping[str, Mapping[str, Any]]
) -> DeferredToolResults:
    """The ``DeferredToolResults`` of a person's ``answers`` to the paused calls.

    ``answers`` maps a deferred call's ``tool_call_id`` to ``{"decision": "approve"}``,
    ``{"decision": "deny", "reason": ...}`` or ``{"decision": "edit", "tool_input":
    {...}}`` (optionally with the ``args_sha256`` it answers). An approval runs the
    pending input once; a deny (and an answer naming another call's digest) is
    ``ToolDenied`` whose message the model reads; an edit is judged again by every guard.

    Raises:
        ValueError: an answer names a call that is not pending, or is not an answer.
    """
    results = DeferredToolResults()
    for call_id, answer in answers.items():
        pending = requests.metadata.get(call_id)
        if pending is None:
            raise ValueError(
                f"no pending request for tool call {call_id!r} "
                f"(pending: {sorted(requests.metadata)})"
            )
        approval = resume(pending, answer)
        if approval.decision == "deny":
            results.approvals[call_id] = ToolDenied(approval.reason or "denied by a person")
            continue
        results.approvals[call_id] = ToolApproved()
        results.metadata[call_id] = {
            APPROVAL_KEY: {"decision": approval.decision, "tool_input": approval.tool_input}
        }
    return results


def approval_of(metadata: Any) -> Approval | None:
    """The checked answer ``answer_deferred`` carried to this call, else None."""
    if not isinstance(metadata, Mapping):
        return None
    given = metadata.get(APPROVAL_KEY)
    if not isinstance(given, Mapping) or given.get("decision") not in ("approve", "edit"):
        return None
    return Approval(given["decision"], tool_input=dict(given["tool_input"]))
