"""Judges: the model that prompt hooks (and Claude Code's ``type: agent``) ask.

A ``type: prompt`` hook with a ``model:``, and every prompt hook from a Claude Code
source, does not just add its text: it asks a judge, as Claude Code asks a model. The
judge gets the hook's prompt (``$ARGUMENTS`` replaced by the event JSON, or the event
JSON appended when the prompt has no ``$ARGUMENTS``) and answers ``{"ok": bool,
"reason": str}``. ``ok: false`` blocks the event with the reason; ``ok: true`` is no
objection.

A judge is any async callable ``judge(request) -> Mapping`` (``load(judge=...)``);
``OpenAICompatibleJudge`` speaks the chat completions API of OpenAI and of the many
servers that copy it (vLLM, llama.cpp, Ollama, LiteLLM...). Whatever goes wrong (no judge
configured, the judge raises, times out, answers something that is not
``{ok, reason}``) is a hook error, which follows the hook's ``on_error``: never an
implicit allow.
"""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final, Protocol, final, runtime_checkable

import anyio
import attrs

from orchestra.skills._protocol.result import OUTPUT_LIMIT, HookResult, HookRunError

__all__ = [
    "Judge",
    "JudgeRequest",
    "OpenAICompatibleJudge",
    "ask_judge",
    "judge_prompt",
]

_ARGUMENTS: Final = "$ARGUMENTS"
_REASON_LIMIT: Final = 2000
_SYSTEM: Final = (
    "You are a hook that checks one step of an AI agent. Read the instructions and the "
    "event, then answer with one JSON object and nothing else: "
    '{"ok": true} to let the step go on, or {"ok": false, "reason": "why"} to stop it.'
)


@final
@attrs.frozen(kw_only=True)
class JudgeRequest:
    """What a judge is asked.

    Attributes:
        prompt: the hook's prompt, with the event JSON in place of ``$ARGUMENTS``.
        event: the event's name, e.g. ``"Stop"``.
        data: the event JSON's fields.
        model: the model the hook names, or None for the judge's default.
        agent: the hook is Claude Code's ``type: agent``: the judge may take several
            turns (only judges with ``supports_agent = True`` are given such hooks).
        timeout: seconds the judge has (the hook's timeout).
        max_tool_rounds: for an agent, the most tool-call rounds before it gives up
            (Arc's ``max_tool_rounds``, default 50); None when the hook sets no limit.
    """

    prompt: str
    event: str
    data: Mapping[str, Any]
    model: str | None = None
    agent: bool = False
    timeout: float = 30.0
    max_tool_rounds: int | None = None


@runtime_checkable
class Judge(Protocol):
    """An async callable that judges a ``JudgeRequest`` and answers ``{ok, reason}``.

    Set ``supports_agent = True`` on a judge that can take several turns, to have it
    run Claude Code's ``type: agent`` hooks too.
    """

    def __call__(self, request: JudgeRequest, /) -> Awaitable[Mapping[str, Any]]:
        """Judge the request; answer ``{"ok": bool, "reason": str}``."""
        ...


def supports_agent(judge: Callable[..., Any] | None) -> bool:
    """Whether ``judge`` says it can run ``type: agent`` hooks."""
    return bool(getattr(judge, "supports_agent", False))


def judge_prompt(prompt: str, body: bytes) -> str:
    """The prompt a judge gets: ``$ARGUMENTS`` replaced by the event JSON, else appended."""
    event = body.decode("utf-8", "replace")
    if _ARGUMENTS in prompt:
        return prompt.replace(_ARGUMENTS, event)
    return f"{prompt}\n\nThe event (JSON):\n{event}"


async def ask_judge(
    judge: Judge | None, request: JudgeRequest, *, impossible_ends: bool = False
) -> HookResult:
    """Ask ``judge`` and read its ``{ok, reason}`` answer as a hook result.

    With ``impossible_ends`` (a Claude Code prompt hook on Stop or SubagentStop), an
    ``ok: false`` answer that also says ``impossible: true`` lets the event end.

    Raises:
        HookRunError: no judge, or it raised, timed out or answered garbage.
    """
    if judge is None:
        raise HookRunError(
            "could not start: this prompt hook asks a model, and no judge is configured: "
            "pass load(..., judge=orchestra.skills.OpenAICompatibleJudge(...))"
        )
    try:
        with anyio.fail_after(request.timeout):
            answer = await judge(request)
    except TimeoutError:
        raise HookRunError(f"judge timed out after {request.timeout:g} s") from None
    except HookRunError:
        raise
    except Exception as exc:
        raise HookRunError(f"judge failed: {type(exc).__name__}: {exc}") from exc
    return verdict(answer, impossible_ends=impossible_ends)


def verdict(answer: object, *, impossible_ends: bool = False) -> HookResult:
    """Read a judge's answer: ``ok: false`` blocks with the reason; ``ok: true`` allows.

    Raises:
        HookRunError: the answer is not a mapping with a boolean ``ok``.
    """
    if not isinstance(answer, Mapping) or not isinstance(answer.get("ok"), bool):
        shown = repr(answer)[:200]
        raise HookRunError(f'judge answered {shown}; expected {{"ok": bool, "reason": str}}')
    reason = answer.get("reason")
    if reason is not None and not isinstance(reason, str):
        raise HookRunError(f"judge's reason must be a string, got {type(reason).__name__}")
    reason = reason[:_REASON_LIMIT] if reason else None
    if answer["ok"] or (impossible_ends and answer.get("impossible") is True):
        return HookResult(reason=reason)
    return HookResult(decision="block", reason=reason or "the judge said no")


@final
class OpenAICompatibleJudge:
    """A judge that asks a chat completions endpoint (``POST {base_url}/chat/completions``).

    Needs ``httpx`` (the ``http`` extra). The model is told to answer one JSON object
    ``{"ok": bool, "reason": str}``; its reply is read as that object (a JSON code fence
    around it is tolerated), and anything else is a hook error.

    Args:
        base_url: the API's base URL, e.g. ``https://api.openai.com/v1`` or
            ``http://127.0.0.1:8000/v1`` for a local server.
        model: the model to ask when the hook names none.
        api_key_env: the environment variable holding the API key (read at each call;
            never stored); None for servers that need no key.
        timeout: the longest a call may take, in seconds (the hook's own timeout, when
            shorter, wins).
        max_output: the most bytes of response read (default 1 MiB).
        headers: more request headers (e.g. an organisation id).
    """

    supports_agent: bool = False
    """Single-turn only: Claude Code's ``type: agent`` hooks are refused with it."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key_env: str | None = "OPENAI_API_KEY",
        timeout: float = 30.0,
        max_output: int = OUTPUT_LIMIT,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must be an http(s) URL, got {base_url!r}")
        if not timeout > 0:
            raise ValueError(f"timeout must be > 0, got {timeout!r}")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key_env = api_key_env
        self.timeout = timeout
        self.max_output = max_output
        self.headers = dict(headers or {})

    def __repr__(self) -> str:
        return f"OpenAICompatibleJudge({self.base_url!r}, {self.model!r})"

    async def __call__(self, request: JudgeRequest) -> Mapping[str, Any]:
        """Ask the model; answer the decoded ``{ok, reason}`` object."""
        try:
            import httpx
        except ImportError as exc:  # pragma: no cover - depends on the installed extras
            raise HookRunError(
                "could not start: the judge needs httpx: pip install 'orchestra-hooks[http]'"
            ) from exc
        headers = {"Content-Type": "application/json", **self.headers}
        if self.api_key_env is not None:
            key = os.environ.get(self.api_key_env)
            if not key:
                raise HookRunError(f"could not start: ${self.api_key_env} is not set")
            headers["Authorization"] = f"Bearer {key}"
        body = {
            "model": request.model or self.model,
            "messages": [
                {"role": "system", "content": _SYSTEM},
                {"role": "user", "content": request.prompt},
            ],
            "temperature": 0,
            "response_format": {"type": "json_object"},
        }
        timeout = min(self.timeout, request.timeout)
        async with (
            httpx.AsyncClient(timeout=httpx.Timeout(timeout), trust_env=False) as client,
            client.stream(
                "POST", f"{self.base_url}/chat/completions", json=body, headers=headers
            ) as response,
        ):
            data = bytearray()
            async for chunk in response.aiter_bytes():
                data += chunk
                if len(data) > self.max_output:
                    raise HookRunError(f"judge's answer over {self.max_output} bytes")
            if response.status_code != 200:
                excerpt = bytes(data[:200]).decode("utf-8", "replace")
                raise HookRunError(f"judge http {response.status_code}: {excerpt}")
        return _read_completion(bytes(data))


def _read_completion(data: bytes) -> Mapping[str, Any]:
    try:
        content = json.loads(data)["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError):
        raise HookRunError("judge answered no chat completion") from None
    if not isinstance(content, str):
        raise HookRunError("judge answered no text")
    text = content.strip()
    if text.startswith("```"):
        text = text.strip("`").removeprefix("json").strip()
    try:
        answer = json.loads(text)
    except ValueError:
        raise HookRunError(f"judge answered prose, not JSON: {text[:200]!r}") from None
    if not isinstance(answer, dict):
        raise HookRunError(f"judge answered {text[:200]!r}, not an object")
    return answer
