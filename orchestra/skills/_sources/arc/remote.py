"""Arc's ``http``, ``prompt`` and ``agent`` hooks (fabro, seed 001), as Arc runs them.

- ``type = "http"``: Arc's event context JSON is the POST body (the same object a
  command hook reads on stdin), ``headers`` expand ``$VAR`` from ``allowed_env_vars``,
  ``tls`` is ``verify`` | ``no_verify`` | ``off``. A 2xx answer's body is an Arc decision
  (``{"decision": "skip", ...}``); an empty body, one that is not a decision, a non-2xx
  answer or a request that fails all proceed, as Arc documents ("HTTP hook returns
  non-2xx: proceeds"), each failure kept as a hook error.
- ``type = "prompt"``: one question to the registry's judge (``load(judge=...)``) with
  Arc's words ("Hook prompt: ...", then the event context); ``model`` defaults to
  ``haiku``, ``timeout_ms`` to 30000.
- ``type = "agent"``: the same, asked of a judge that takes several turns
  (``supports_agent = True``) with ``max_tool_rounds`` (default 50); ``timeout_ms``
  defaults to 60000.

Prompt and agent hooks answer ``{"ok": true}`` or ``{"ok": false, "reason": ...}``; a
``false`` from a ``blocking`` hook blocks (at a gate, ``GateBlocked``). Everything that
goes wrong (no judge, a judge that fails, times out or answers garbage) proceeds, as Arc
fails open, and is kept as a hook error. A hook that is not ``blocking`` is asked all
the same and its answer changes nothing.
"""

from __future__ import annotations

from typing import ClassVar, Final, final

import attrs

from orchestra.skills._hooks.http import HttpHook
from orchestra.skills._hooks.http_post import post_http
from orchestra.skills._hooks.judge import JudgeRequest, ask_judge
from orchestra.skills._hooks.spec import NOT_CONFIG, HookCall
from orchestra.skills._protocol.result import NO_OPINION, HookResult, HookRunError
from orchestra.skills._sources.arc.hooks import ArcHook, arc_decision
from orchestra.tracing import inject_headers

__all__ = ["DEFAULT_MODEL", "DEFAULT_TOOL_ROUNDS", "ArcAgentHook", "ArcHttpHook", "ArcPromptHook"]

DEFAULT_MODEL: Final = "haiku"
"""The model Arc's prompt and agent hooks ask when they name none."""
DEFAULT_TOOL_ROUNDS: Final = 50
"""Arc's ``max_tool_rounds`` when an agent hook sets none."""


@final
@attrs.frozen(kw_only=True, repr=False)
class ArcHttpHook(ArcHook):
    """Arc's ``type = "http"``: the event context POSTed, the answer an Arc decision.

    Attributes:
        http: the request's URL, headers, variables, TLS mode and network door, checked
            as an orchestra http hook's are.
    """

    fails_open: ClassVar[bool] = True

    http: HttpHook = attrs.field(metadata=NOT_CONFIG)

    def describe(self) -> str:
        """Arc's event, ``POST url``, and the name."""
        return self.named(self.http.describe())

    def read(self, body: bytes) -> HookResult:
        """A 2xx body: an Arc decision, or proceed (empty, or not a decision)."""
        try:
            reply = arc_decision(body)
        except HookRunError:
            return NO_OPINION  # Arc: a body it cannot parse proceeds
        return NO_OPINION if reply is None else self.decide(reply)

    async def run(self, call: HookCall) -> HookResult:
        """POST Arc's context; read the answer (failures are hook errors: proceed)."""
        http = self.http
        return await post_http(
            url=http.url,
            headers=inject_headers(http.expand_headers()),
            body=self.context_json(call),
            timeout=self.timeout,
            tls=http.tls,
            allow_private_network=http.allow_private_network,
            read=self.read,
        )


def _arc_prompt(prompt: str, context: bytes) -> str:
    """What Arc asks a model: the hook's prompt, then the event context."""
    return f"Hook prompt: {prompt}\n\nEvent context:\n{context.decode('utf-8', 'replace')}"


@attrs.frozen(kw_only=True, repr=False)
class _ArcJudged(ArcHook):
    """An Arc hook a judge answers with ``{ok, reason}``."""

    fails_open: ClassVar[bool] = True
    agent: ClassVar[bool] = False

    prompt: str
    model: str = DEFAULT_MODEL

    def keeps_timeout(self) -> bool:
        """``ask_judge`` keeps the hook's timeout."""
        return True

    def rounds(self) -> int | None:
        """The agent's ``max_tool_rounds``, or None for a single turn."""
        return None

    async def run(self, call: HookCall) -> HookResult:
        """Ask the judge; ``ok: false`` from a ``blocking`` hook blocks."""
        context = self.context_json(call)
        request = JudgeRequest(
            prompt=_arc_prompt(self.prompt, context),
            event=self.arc_event,
            data=self.context(call.data, call.project_dir),
            model=self.model,
            agent=self.agent,
            timeout=self.timeout,
            max_tool_rounds=self.rounds(),
        )
        verdict = await ask_judge(call.judge, request)
        if verdict.decision != "block":
            return NO_OPINION
        return self.decide(("block", verdict.reason, None))


@final
@attrs.frozen(kw_only=True, repr=False)
class ArcPromptHook(_ArcJudged):
    """Arc's ``type = "prompt"``: one question to the judge (see the module doc).

    Attributes:
        prompt: the instructions.
        model: the model named (default ``haiku``, as Arc's).
    """

    def describe(self) -> str:
        """Arc's event, the model and the prompt."""
        return self.named(f"ask {self.model}: {self.prompt}")


@final
@attrs.frozen(kw_only=True, repr=False)
class ArcAgentHook(_ArcJudged):
    """Arc's ``type = "agent"``: a judge that takes several turns decides.

    Only a judge with ``supports_agent = True`` runs it (``load`` refuses a single-turn
    judge; with none configured each run is a hook error, and proceeds).

    Attributes:
        max_tool_rounds: the most tool-call rounds before the agent gives up (Arc's
            default, 50).
    """

    agent: ClassVar[bool] = True
    multi_turn: ClassVar[bool] = True

    max_tool_rounds: int = DEFAULT_TOOL_ROUNDS

    def rounds(self) -> int | None:
        """``max_tool_rounds``."""
        return self.max_tool_rounds

    def describe(self) -> str:
        """Arc's event, the model, its rounds and the prompt."""
        return self.named(f"agent {self.model} ({self.max_tool_rounds} rounds): {self.prompt}")
