"""A fake Claude Code CLI behind the SDK's ``Transport``: no process, no network.

It speaks the SDK's control protocol as the CLI does: it answers ``initialize`` (keeping
the hook callback ids the SDK registered), then, once the user's message arrives, sends a
scripted series of ``hook_callback`` and ``can_use_tool`` control requests, each to the
callbacks whose matcher matches, waits for every answer, and ends the turn with a
``result`` message. Everything the SDK wrote is kept.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
from claude_agent_sdk import Transport


class FakeCLI(Transport):
    """A scripted CLI: ``script`` is a list of ``(event, payload)``; ``"can_use_tool"`` too.

    ``("tool", {"tool_name", "tool_input", "tool_use_id"})`` is a whole tool call, as the
    CLI makes it: ``PreToolUse``, then (unless a callback denied it) the tool from
    ``tools`` with the input the callbacks left, then ``PostToolUse`` with its result or
    ``PostToolUseFailure`` with its error; what the model would read is kept in ``read``.
    A ``PreToolUse`` ``ask`` is a ``can_use_tool`` request, as the CLI asks the SDK's
    permission prompt: the tool runs only if it is allowed.
    """

    def __init__(
        self,
        script: list[tuple[str, dict[str, Any]]],
        tools: dict[str, Callable[[dict[str, Any]], Any]] | None = None,
    ) -> None:
        self.script = script
        self.tools = tools or {}
        self.read: list[Any] = []
        self.written: list[dict[str, Any]] = []
        self.initialize: dict[str, Any] | None = None
        self.answers: list[tuple[str, dict[str, Any]]] = []
        """(event, the response data or {"error": ...}) of each request sent, in order."""
        self._send, self._receive = anyio.create_memory_object_stream[dict[str, Any]](100)
        self._pending: dict[str, tuple[anyio.Event, list[dict[str, Any]]]] = {}
        self._counter = 0
        self._ready = False

    # -- Transport -------------------------------------------------------------------------

    async def connect(self) -> None:
        self._ready = True

    async def write(self, data: str) -> None:
        message = json.loads(data)
        self.written.append(message)
        kind = message.get("type")
        if kind == "control_request" and message["request"]["subtype"] == "initialize":
            self.initialize = message["request"]
            response = {"hook_on_failure_supported": True, "commands": []}
            await self._send.send(_success(message["request_id"], response))
        elif kind == "control_response":
            response = message["response"]
            event, box = self._pending.pop(response["request_id"])
            box.append(response)
            event.set()
        elif kind == "user":
            await self._run_script()

    def read_messages(self) -> AsyncIterator[dict[str, Any]]:
        return self._receive.__aiter__()

    async def close(self) -> None:
        self._ready = False
        self._send.close()
        self._receive.close()

    def is_ready(self) -> bool:
        return self._ready

    async def end_input(self) -> None:
        self._send.close()

    # -- the CLI's side ---------------------------------------------------------------------

    def callback_ids(self, event: str, tool_name: str | None = None) -> list[str]:
        """The callback ids ``initialize`` registered for ``event`` that match ``tool_name``."""
        assert self.initialize is not None
        ids: list[str] = []
        for matcher in (self.initialize.get("hooks") or {}).get(event, []):
            if _matches(matcher.get("matcher"), tool_name):
                ids += matcher["hookCallbackIds"]
        return ids

    async def _run_script(self) -> None:
        for event, payload in self.script:
            if event == "tool":
                await self._tool_call(payload)
                continue
            if event == "can_use_tool":
                request = {"subtype": "can_use_tool", **payload}
                self.answers.append((event, await self._request(request)))
                continue
            await self._hooks(event, payload)
        await self._send.send(
            {
                "type": "result",
                "subtype": "success",
                "duration_ms": 1,
                "duration_api_ms": 1,
                "is_error": False,
                "num_turns": 1,
                "session_id": "s-1",
                "result": "done",
            }
        )

    async def _hooks(self, event: str, payload: dict[str, Any]) -> list[dict[str, Any]]:
        """Every callback of ``event`` that matches, in turn; their answers."""
        full = {"session_id": "s-1", "transcript_path": "/tmp/t", "cwd": "/tmp"}
        full |= {"hook_event_name": event, **payload}
        answers = []
        for callback_id in self.callback_ids(event, payload.get("tool_name")):
            request = {
                "subtype": "hook_callback",
                "callback_id": callback_id,
                "input": full,
                "tool_use_id": payload.get("tool_use_id"),
            }
            answer = await self._request(request)
            self.answers.append((event, answer))
            answers.append(answer)
        return answers

    async def _tool_call(self, call: dict[str, Any]) -> None:
        tool_input = call["tool_input"]
        for answer in await self._hooks("PreToolUse", call):
            specific = answer.get("hookSpecificOutput") or {}
            if specific.get("permissionDecision") == "deny":
                self.read.append(specific.get("permissionDecisionReason"))
                return
            if specific.get("permissionDecision") == "ask":
                allowed = await self._ask_the_person({**call, "tool_input": tool_input})
                if allowed is None:
                    return
                tool_input = allowed
                continue
            tool_input = specific.get("updatedInput", tool_input)
        call = {**call, "tool_input": tool_input}
        try:
            response = self.tools[call["tool_name"]](tool_input)
        except Exception as error:
            await self._hooks("PostToolUseFailure", {**call, "error": str(error)})
            self.read.append(f"Error: {error}")
            return
        for answer in await self._hooks("PostToolUse", {**call, "tool_response": response}):
            specific = answer.get("hookSpecificOutput") or {}
            response = specific.get("updatedToolOutput", response)
        self.read.append(response)

    async def _ask_the_person(self, call: dict[str, Any]) -> dict[str, Any] | None:
        """An ``ask``: the CLI asks over ``can_use_tool`` (the SDK's permission prompt).

        The input to run with when allowed; None (the model reads why) when not, or when
        the SDK has no ``can_use_tool`` to answer (the SDK answers an error).
        """
        request = {
            "subtype": "can_use_tool",
            "tool_name": call["tool_name"],
            "input": call["tool_input"],
            "tool_use_id": call.get("tool_use_id"),
            "permission_suggestions": [],
        }
        answer = await self._request(request)
        self.answers.append(("can_use_tool", answer))
        if answer.get("behavior") == "allow":
            return dict(answer.get("updatedInput", call["tool_input"]))
        self.read.append(answer.get("message") or answer.get("error"))
        return None

    async def _request(self, request: dict[str, Any]) -> dict[str, Any]:
        self._counter += 1
        request_id = f"cli_{self._counter}"
        event, box = anyio.Event(), []
        self._pending[request_id] = (event, box)
        await self._send.send(
            {"type": "control_request", "request_id": request_id, "request": request}
        )
        with anyio.fail_after(30):
            await event.wait()
        response = box[0]
        if response["subtype"] == "error":
            return {"error": response["error"]}
        return dict(response["response"])


def _success(request_id: str, response: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "control_response",
        "response": {"subtype": "success", "request_id": request_id, "response": response},
    }


def _matches(matcher: str | None, tool_name: str | None) -> bool:
    """Claude Code's matcher for the simple forms: none or ``*`` (all), names joined by ``|``."""
    if not matcher or matcher == "*":
        return True
    return tool_name is not None and tool_name in matcher.split("|")
