"""A person's answer to a run an ``ask`` paused (an SDK interruption), checked once.

``ApprovalPolicy`` keeps the pending request (``orchestra.bridge.Ask.request``) of each
call it paused; ``answer_approval`` checks an answer against it with
``orchestra.bridge.resume`` and approves the SDK's item, so that the resumed run's
invoker carries the checked answer out: the pending input once, a refusal (the same
refusal text and ``PermissionDenied`` as any deny), or an edit judged again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from orchestra.bridge import Approval, resume

if TYPE_CHECKING:
    from agents import RunState
    from agents.items import ToolApprovalItem

    from orchestra_openai_agents._hooks import OrchestraRunHooks

__all__ = ["answer_approval", "pending_request"]


def pending_request(bridge: OrchestraRunHooks, item: ToolApprovalItem) -> dict[str, Any]:
    """The pending request of a paused call (``result.interruptions``' ``item``).

    ``{"tool_name", "tool_input", "reason", "hook_id", "args_sha256"}``, as in every
    engine.

    Raises:
        ValueError: ``bridge`` paused no call with ``item``'s id (another bridge's run,
            or a call the tool's own ``needs_approval`` paused).
    """
    call_id = item.call_id or ""
    pending = bridge.tool_guard.pending.get(call_id)
    if pending is None:
        raise ValueError(
            f"no pending request for tool call {call_id!r} ({item.tool_name!r}): this "
            "bridge's hooks did not pause it"
        )
    return dict(pending)


def answer_approval(
    bridge: OrchestraRunHooks,
    state: RunState[Any, Any],
    item: ToolApprovalItem,
    answer: Mapping[str, Any],
) -> Approval:
    """Answer a paused call; then resume with ``bridge.run(agent, state)``.

    ``answer``: ``{"decision": "approve"}`` (the pending input runs once), ``{"decision":
    "deny", "reason": ...}`` (the model reads ``Tool call denied: {reason}``) or
    ``{"decision": "edit", "tool_input": {...}}`` (judged again by every guard; an edit
    that asks again is refused, the SDK cannot pause a resumed call twice), with the
    ``args_sha256`` it answers if you like (another call's digest: refused).

    Returns:
        The checked answer (``orchestra.bridge.Approval``).

    Raises:
        ValueError: not an answer, or not a call this bridge paused.
    """
    pending = pending_request(bridge, item)
    approval = resume(pending, answer)
    call_id = item.call_id or ""
    bridge.tool_guard.answers[call_id] = approval
    del bridge.tool_guard.pending[call_id]
    state.approve(item)  # the guard decides in the resumed run, with the checked answer
    return approval
