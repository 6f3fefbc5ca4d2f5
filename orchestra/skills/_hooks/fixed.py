"""Hooks that answer in-process: ``PromptHook``, ``AgentHook``, ``PermissionHook``.

A prompt hook adds its text to the outcome's messages, or, with a ``model`` (and always
when it comes from a Claude Code source), asks the registry's judge, as Claude Code asks
a model (see ``_hooks.judge``). An agent hook (Claude Code's ``type: agent``) always asks, and
lets the judge take several turns.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, ClassVar, Final, Literal, final

import attrs

from orchestra._errors import ConfigError
from orchestra.skills._hooks.judge import (
    Judge,
    JudgeRequest,
    ask_judge,
    judge_prompt,
    supports_agent,
)
from orchestra.skills._hooks.spec import HookCall, HookSpec
from orchestra.skills._protocol.result import HookResult

if TYPE_CHECKING:
    from orchestra.skills._config.entry import Entry

__all__ = ["AgentHook", "PermissionHook", "PromptHook", "refuse_agent_hooks"]

_PERMISSIONS: Final = ("allow", "deny", "ask")


# Claude Code: a prompt hook's ``impossible: true`` lets these events end; on these a
# judge's ``ok: false`` has no effect (the output of PermissionDenied is discarded).
_IMPOSSIBLE_ENDS: Final = frozenset({"Stop", "SubagentStop"})
_NO_EFFECT: Final = frozenset({"PermissionRequest", "PermissionDenied"})


async def _judged(hook: PromptHook | AgentHook, call: HookCall, *, agent: bool) -> HookResult:
    request = JudgeRequest(
        prompt=judge_prompt(hook.prompt, call.body()),
        event=call.event,
        data=call.data,
        model=hook.model,
        agent=agent,
        timeout=hook.timeout,
    )
    impossible = hook.claude_code and not agent and call.event in _IMPOSSIBLE_ENDS
    result = await ask_judge(call.judge, request, impossible_ends=impossible)
    if hook.claude_code and call.event in _NO_EFFECT:
        return HookResult()
    return result


def _prompt_fields(entry: Entry) -> dict[str, Any]:
    """``prompt`` and ``model``, as prompt and agent hooks read them."""
    return {
        "prompt": entry.string("prompt", required=True),
        "model": entry.string("model", required=False),
    }


@final
@attrs.frozen(kw_only=True, repr=False)
class PromptHook(HookSpec):
    """A hook that adds its text to the outcome's messages, or asks a judge about it.

    Attributes:
        prompt: the text (for a judge: the instructions; ``$ARGUMENTS`` is the event
            JSON).
        model: ask the registry's judge, with this model; None adds the text instead
            (unless ``judge`` is set).
        judge: ask the registry's judge, with the judge's default model, even without a
            ``model`` (``judge: true``; every prompt hook of a Claude Code source does,
            as Claude Code asks its model).
    """

    type: ClassVar[str] = "prompt"
    can_transform: ClassVar[bool] = False
    in_process: ClassVar[bool] = True

    prompt: str
    model: str | None = None
    judge: bool = False

    @property
    def asks_judge(self) -> bool:
        """Whether the hook asks a judge rather than adding its text."""
        return self.judge or self.model is not None

    @property
    def external(self) -> bool:
        """A judged prompt hook makes a request; a plain one runs in-process."""
        return self.asks_judge

    def describe(self) -> str:
        """The text, and the model it asks if any."""
        if self.asks_judge:
            return f"ask {self.model or 'the judge'}: {self.prompt}"
        return self.prompt

    @classmethod
    def parse_fields(cls, entry: Entry) -> dict[str, Any]:
        """Read ``prompt``, ``model`` and ``judge``."""
        return {**_prompt_fields(entry), "judge": entry.flag("judge")}

    async def run(self, call: HookCall) -> HookResult:
        """Answer the text as a message, or the judge's ``{ok, reason}`` as a decision."""
        if self.asks_judge:
            return await _judged(self, call, agent=False)
        return HookResult(messages=(self.prompt,))


@final
@attrs.frozen(kw_only=True, repr=False)
class AgentHook(HookSpec):
    """Claude Code's ``type: agent``: a judge that may take several turns decides.

    Only a judge with ``supports_agent = True`` runs it; with another judge the load is
    refused, with none configured each run is a hook error.

    Attributes:
        prompt: the instructions (``$ARGUMENTS`` is the event JSON).
        model: the model to ask, or None for the judge's default.
    """

    type: ClassVar[str] = "agent"
    can_transform: ClassVar[bool] = False
    multi_turn: ClassVar[bool] = True
    """It needs a judge with ``supports_agent = True`` (``refuse_agent_hooks``)."""

    prompt: str
    model: str | None = None

    def describe(self) -> str:
        """The instructions and the model."""
        return f"agent {self.model or '(judge default)'}: {self.prompt}"

    @classmethod
    def parse_fields(cls, entry: Entry) -> dict[str, Any]:
        """Read ``prompt`` and ``model``."""
        return _prompt_fields(entry)

    async def run(self, call: HookCall) -> HookResult:
        """Ask the judge, in agent mode."""
        return await _judged(self, call, agent=True)


@final
@attrs.frozen(kw_only=True, repr=False)
class PermissionHook(HookSpec):
    """A hook that gives a fixed permission decision, on events that can block.

    Attributes:
        decision: ``"allow"``, ``"deny"`` or ``"ask"``.
        reason: the reason given with it.
    """

    type: ClassVar[str] = "permission"
    can_transform: ClassVar[bool] = False
    in_process: ClassVar[bool] = True

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
        elif decision is not None and not entry.hook_event.can_block:
            name = entry.hook_event.name
            entry.bad(None, f"permission hooks need an event that can block; {name} cannot")
        return {"decision": decision, "reason": entry.string("reason", required=False)}

    async def run(self, call: HookCall) -> HookResult:
        """Answer the fixed decision."""
        return HookResult(decision=self.decision, reason=self.reason)


def refuse_agent_hooks(hooks: Iterable[HookSpec], judge: Judge | None) -> None:
    """Refuse agent hooks when the judge takes one turn only.

    Raises:
        ConfigError: an agent hook, and a judge without ``supports_agent = True``.
    """
    if judge is None or supports_agent(judge):
        return
    for hook in hooks:
        if getattr(hook, "multi_turn", False):
            raise ConfigError(
                f"{hook.source}: agent hook: the judge {judge!r} takes one turn; "
                "agent hooks need one with supports_agent = True",
                file=hook.file,
                line=hook.line,
                field="type",
            )
