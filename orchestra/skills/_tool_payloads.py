"""The payloads of the tool events that every tool-call site builds alike."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["post_tool_use_payload"]


def post_tool_use_payload(
    fields: Mapping[str, Any], tool_response: Any, *, mocked: bool = False
) -> dict[str, Any]:
    """The ``PostToolUse`` payload of a tool call that answered.

    ``@registry.guard`` and the agent bridges build it alike. After a ``PreToolUse``
    mock (``HookOutcome.output``: the tool was not called), ``PostToolUse`` still fires,
    with the mock as ``tool_response`` and ``mocked: true``; the field is there only
    then. A ``PostToolUse`` rewrite (its ``output``) is what the caller gets, mocked or
    not.

    Examples:
        >>> fields = {"tool_name": "Search", "tool_input": {"q": "x"}}
        >>> post_tool_use_payload(fields, "cached", mocked=True)["mocked"]
        True

    Args:
        fields: the call's fields: ``tool_name``, ``tool_input``, ``tool_use_id``, and
            any others the site adds (``agent_name``, ...); left unchanged.
        tool_response: what the tool returned, or the mock.
        mocked: the response is a ``PreToolUse`` mock.

    Returns:
        A new dict: ``fields`` with ``tool_response`` (and ``mocked: True``).
    """
    payload = {**fields, "tool_response": tool_response}
    if mocked:
        payload["mocked"] = True
    return payload
