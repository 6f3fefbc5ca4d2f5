"""One tool call and the answers the tool-call protocol gives about it.

A bridge describes the call an engine is about to make as a ``ToolCall`` (name, the
input as the model sent it, the call's id, the engine's extra fields), and gets back
one of four frozen answers from ``ToolHooks.pre``; ``ToolHooks.failed`` answers one of
two. Each answer has one meaning in every engine:

==============  ==========================================================================
answer          what the bridge does
==============  ==========================================================================
``Proceed``     run the tool with ``Proceed.tool_input`` (a hook's rewrite, or the model's)
``Mock``        do not run the tool: ``Mock.output`` (a ``PreToolUse`` mock) is its
                result; call ``ToolHooks.post(call, output, mocked=True)`` on it
``Refuse``      do not run the tool: tell the caller ``Refuse.reason`` through the engine's
                own refusal channel (``Refuse.message`` where it is plain text)
``Ask``         pause the call for a person (``Ask.request`` is the pending request);
                only answered to a bridge that said it can pause
``Raise``       (from ``failed``) the tool's error goes on as the engine handles errors
==============  ==========================================================================
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Mapping
from typing import Any, Final, TypeAlias, final

import attrs

__all__ = [
    "DENIED_PREFIX",
    "Ask",
    "FailedAnswer",
    "Mock",
    "PreAnswer",
    "Proceed",
    "Raise",
    "Refuse",
    "ToolCall",
    "args_sha256",
    "qualified_tool_name",
]

DENIED_PREFIX: Final = "Tool call denied: "
"""How a refusal reads where the engine's answer to the model is plain text."""


def args_sha256(tool_input: Any) -> str:
    """The SHA-256 (hex) of the canonical JSON of a tool's input.

    Canonical: keys sorted, no spaces, UTF-8; a value JSON cannot hold is written as its
    ``str``. A person's answer to an ``ask`` names the call it approves by this digest.

    Examples:
        >>> args_sha256({"b": 1, "a": [1, 2]}) == args_sha256({"a": [1, 2], "b": 1})
        True
    """
    text = json.dumps(
        tool_input, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str
    )
    return hashlib.sha256(text.encode()).hexdigest()


def qualified_tool_name(identifier: str, tool_name: str) -> str:
    """A tool's name as lobehub writes it: ``identifier/apiName``.

    ``identifier`` is the toolset's or MCP server's name; a name in Claude Code's MCP
    spelling (``mcp__<server>__<tool>``) of that server gives its bare tool name.

    Examples:
        >>> qualified_tool_name("web-browsing", "search")
        'web-browsing/search'
        >>> qualified_tool_name("github", "mcp__github__create_issue")
        'github/create_issue'
    """
    prefix = f"mcp__{identifier}__"
    api_name = tool_name.removeprefix(prefix) if tool_name.startswith(prefix) else tool_name
    return f"{identifier}/{api_name}"


def _as_dict(given: Mapping[str, Any]) -> dict[str, Any]:
    return dict(given)


def _new_id() -> str:
    return f"toolu_{uuid.uuid4().hex}"


@final
@attrs.frozen
class ToolCall:
    """One tool call as the engine is about to make it.

    Attributes:
        tool_name: the tool's name (what matchers see).
        tool_input: the arguments by name, as the model (or caller) sent them.
        tool_use_id: the call's id (the engine's, else a new ``toolu_...``).
        fields: the engine's extra payload fields (``agent_name``, ``handoff_to``, ...).
        approved: a person already approved this very call (a resumed run): a hook's
            ``ask`` then lets it go on.
        identifier: the name of the toolset or MCP server the tool comes from, where the
            engine has one (lobehub's ``identifier``): the payload's ``tool_identifier``,
            and matchers also match ``identifier/tool_name`` (see ``qualified_tool_name``).
    """

    tool_name: str
    tool_input: Mapping[str, Any] = attrs.field(factory=dict, converter=_as_dict)
    tool_use_id: str = attrs.field(factory=_new_id)
    fields: Mapping[str, Any] = attrs.field(factory=dict, converter=_as_dict)
    approved: bool = False
    identifier: str | None = None

    def payload(self, tool_input: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The event fields of the call: ``tool_name``, ``tool_use_id``, extras, ``tool_input``.

        With an ``identifier``, also ``tool_identifier``.
        """
        given = self.tool_input if tool_input is None else tool_input
        named = {"tool_identifier": self.identifier} if self.identifier is not None else {}
        return {
            "tool_name": self.tool_name,
            "tool_use_id": self.tool_use_id,
            **named,
            **self.fields,
            "tool_input": dict(given),
        }

    def with_input(self, tool_input: Mapping[str, Any]) -> ToolCall:
        """The same call with another input (what the tool got after a rewrite)."""
        if tool_input is self.tool_input:  # no rewrite: the call itself (it is immutable)
            return self
        return attrs.evolve(self, tool_input=tool_input)


@final
@attrs.frozen
class Proceed:
    """Run the tool with ``tool_input``; ``modified``: a hook rewrote it."""

    tool_input: Mapping[str, Any]
    modified: bool = False


@final
@attrs.frozen
class Mock:
    """Do not run the tool: ``output`` (a ``PreToolUse`` mock) is its result."""

    output: Any


@final
@attrs.frozen
class Refuse:
    """Do not run the tool (or its error was a refusal): tell the caller ``reason``.

    Attributes:
        reason: the hook's reason, else ``"denied by a PreToolUse hook at FILE:LINE"``
            (an unanswered ``ask``: its reason, else ``"needs approval (FILE:LINE)"``).
        retry: a ``PermissionDenied`` hook said the caller may try the call again.
    """

    reason: str
    retry: bool = False

    @property
    def message(self) -> str:
        """The refusal as plain text for a model: ``Tool call denied: {reason}``."""
        again = " (you may try the call again)" if self.retry else ""
        return f"{DENIED_PREFIX}{self.reason}{again}"


@final
@attrs.frozen
class Ask:
    """Pause the call until a person decides (see ``request``).

    Attributes:
        reason: why the hook asks (its reason, else ``"needs approval (FILE:LINE)"``).
        hook_id: the id of the hook that asked.
        tool_input: the input the person is asked about (after any rewrite).
        args_sha256: ``args_sha256(tool_input)``: an answer naming another digest is not
            an answer to this call.
    """

    reason: str
    hook_id: str | None
    tool_input: Mapping[str, Any]
    args_sha256: str

    def request(self, call: ToolCall) -> dict[str, Any]:
        """The pending request, one shape everywhere.

        ``{"tool_name", "tool_input", "reason", "hook_id", "args_sha256"}``.
        """
        return {
            "tool_name": call.tool_name,
            "tool_input": dict(self.tool_input),
            "reason": self.reason,
            "hook_id": self.hook_id,
            "args_sha256": self.args_sha256,
        }


@final
@attrs.frozen
class Raise:
    """The tool's error goes on, as the engine handles a tool's errors."""

    error: BaseException


PreAnswer: TypeAlias = Proceed | Mock | Refuse | Ask
"""What ``ToolHooks.pre`` answers."""
FailedAnswer: TypeAlias = Raise | Refuse
"""What ``ToolHooks.failed`` answers."""
