"""A person's answer to a paused tool call (an ``ask``), checked once for every engine.

The pending request (``Ask.request``) is ``{"tool_name", "tool_input", "reason",
"hook_id", "args_sha256"}``. The answer is a mapping:

- ``{"decision": "approve"}``: run the pending input, exactly once;
- ``{"decision": "deny", "reason": ...}``: refuse the call; the model reads the reason;
- ``{"decision": "edit", "tool_input": {...}}``: the new input is judged again by every
  guard (``PreToolUse``) before it runs.

An answer may name the call it answers by ``args_sha256``; a digest that is not the
pending call's is no answer to it: the call is refused with a reason that says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal, final

import attrs

from orchestra._tool_call import args_sha256

__all__ = ["DECISIONS", "Approval", "resume"]

DECISIONS: Final = ("approve", "deny", "edit")
"""The decisions a person may answer."""


@final
@attrs.frozen
class Approval:
    """What a person's answer means for the paused call (``resume`` builds it).

    Attributes:
        decision: ``"approve"`` (run ``tool_input`` once, no guard asks again),
            ``"deny"`` (refuse with ``reason``) or ``"edit"`` (``tool_input`` is judged
            again by every guard before it runs).
        tool_input: the input to run (approve: the pending one; edit: the person's);
            None for a deny.
        reason: why the call is refused (deny), else None.
    """

    decision: Literal["approve", "deny", "edit"]
    tool_input: Mapping[str, Any] | None = None
    reason: str | None = None


def _pending_digest(pending: Mapping[str, Any]) -> str:
    try:
        tool_input = pending["tool_input"]
    except (KeyError, TypeError):
        raise ValueError(
            f"not a pending request (no 'tool_input'): {pending!r}; pass Ask.request(call)"
        ) from None
    given = pending.get("args_sha256")
    digest = args_sha256(tool_input)
    if given is not None and given != digest:
        raise ValueError(
            f"the pending request's args_sha256 {given!r} is not the digest of its "
            f"tool_input ({digest!r}): it was changed after the call paused"
        )
    return digest


def resume(pending: Mapping[str, Any], answer: Mapping[str, Any]) -> Approval:
    """Check a person's ``answer`` to the ``pending`` request; what the bridge does next.

    Examples:
        >>> pending = {"tool_name": "Bash", "tool_input": {"command": "ls"},
        ...            "reason": "r", "hook_id": "h", "args_sha256": args_sha256({"command": "ls"})}
        >>> resume(pending, {"decision": "approve"}).tool_input
        {'command': 'ls'}
        >>> resume(pending, {"decision": "approve", "args_sha256": "0" * 64}).decision
        'deny'

    Args:
        pending: the pending request (``Ask.request``), as the engine kept it.
        answer: the person's answer (see the module docstring).

    Returns:
        An ``Approval``. A digest mismatch is a deny whose reason names both digests.

    Raises:
        ValueError: ``answer`` is not an answer (no known ``decision``, an edit without
            a ``tool_input`` mapping), or ``pending`` is not a pending request.
    """
    digest = _pending_digest(pending)
    if not isinstance(answer, Mapping):
        raise ValueError(f"an answer is a mapping with a 'decision', not {answer!r}")
    decision = answer.get("decision")
    if decision not in DECISIONS:
        raise ValueError(
            f"unknown decision {decision!r} in {dict(answer)!r}: expected one of {DECISIONS}"
        )
    named = answer.get("args_sha256")
    if named is not None and named != digest:
        return Approval(
            "deny",
            reason=(
                f"the answer's args_sha256 {named!r} is not the pending call's {digest!r}: "
                "it answers another call"
            ),
        )
    if decision == "approve":
        return Approval("approve", tool_input=dict(pending["tool_input"]))
    if decision == "deny":
        reason = answer.get("reason")
        return Approval("deny", reason=str(reason) if reason else "denied by a person")
    edited = answer.get("tool_input")
    if not isinstance(edited, Mapping):
        raise ValueError(f"an edit needs a 'tool_input' mapping, got {edited!r}")
    return Approval("edit", tool_input=dict(edited))
