"""The one pending request shape, checked the same way in every engine's tests."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from orchestra._tool_call import args_sha256

__all__ = ["PENDING_FIELDS", "check_pending_request"]

PENDING_FIELDS: Final = frozenset({"tool_name", "tool_input", "reason", "hook_id", "args_sha256"})
"""The fields of a pending request, in every engine."""


def check_pending_request(
    request: Mapping[str, Any], *, tool_name: str, tool_input: Mapping[str, Any], reason: str
) -> None:
    """Check an engine's pending request: the one shape, this call, its digest.

    Raises:
        AssertionError: naming each field that is missing, extra or not this call's.
    """
    wrong = []
    if set(request) != PENDING_FIELDS:
        wrong.append(f"fields {sorted(request)}, expected {sorted(PENDING_FIELDS)}")
    expected = {
        "tool_name": tool_name,
        "tool_input": dict(tool_input),
        "reason": reason,
        "args_sha256": args_sha256(dict(tool_input)),
    }
    wrong.extend(
        f"{key} is {request.get(key)!r}, expected {value!r}"
        for key, value in expected.items()
        if request.get(key) != value
    )
    if not isinstance(request.get("hook_id"), str) or not request.get("hook_id"):
        wrong.append(f"hook_id is {request.get('hook_id')!r}, expected the asking hook's id")
    if wrong:
        raise AssertionError("not the pending request of this call: " + "; ".join(wrong))
