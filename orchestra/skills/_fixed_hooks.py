"""Hooks that answer from their own fields, in-process: ``PromptHook``, ``PermissionHook``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Final, Literal, final

import attrs

from orchestra.skills._hook import HookCall, HookSpec
from orchestra.skills._result import HookResult

if TYPE_CHECKING:
    from orchestra.skills._fields import Entry

__all__ = ["PermissionHook", "PromptHook"]

_PERMISSIONS: Final = ("allow", "deny", "ask")


@final
@attrs.frozen(kw_only=True, repr=False)
class PromptHook(HookSpec):
    """A hook that adds a fixed text to the outcome's messages (no model is called).

    Attributes:
        prompt: the text.
    """

    type: ClassVar[str] = "prompt"

    prompt: str

    def describe(self) -> str:
        """The text."""
        return self.prompt

    @classmethod
    def parse_fields(cls, entry: Entry) -> dict[str, Any]:
        """Read ``prompt``."""
        return {"prompt": entry.string("prompt", required=True)}

    async def run(self, call: HookCall) -> HookResult:
        """Answer the text as a message."""
        return HookResult(messages=(self.prompt,))


@final
@attrs.frozen(kw_only=True, repr=False)
class PermissionHook(HookSpec):
    """A hook that gives a fixed permission decision, on events that can block.

    Attributes:
        decision: ``"allow"``, ``"deny"`` or ``"ask"``.
        reason: the reason given with it.
    """

    type: ClassVar[str] = "permission"

    decision: Literal["allow", "deny", "ask"] = attrs.field(
        validator=attrs.validators.in_(_PERMISSIONS)
    )
    reason: str | None = None

    def describe(self) -> str:
        """The decision and its reason."""
        return self.decision + (f": {self.reason}" if self.reason else "")

    @classmethod
    def parse_fields(cls, entry: Entry) -> dict[str, Any]:
        """Read ``decision`` (the event must be able to block) and ``reason``."""
        decision = entry.choice("decision", _PERMISSIONS, None)
        if decision is None and entry.get("decision") is None:
            entry.bad("decision", "expected allow, deny or ask, got nothing")
        elif decision is not None and not entry.event.can_block:
            name = entry.event.name
            entry.bad(None, f"permission hooks need an event that can block; {name} cannot")
        return {"decision": decision, "reason": entry.string("reason", required=False)}

    async def run(self, call: HookCall) -> HookResult:
        """Answer the fixed decision."""
        return HookResult(decision=self.decision, reason=self.reason)
