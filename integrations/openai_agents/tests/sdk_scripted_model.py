"""A scripted ``Model``: the SDK's model interface answering from a list of turns, offline."""

from __future__ import annotations

import json
from collections import deque
from collections.abc import AsyncIterator, Iterable
from typing import Any

from agents import Agent, Handoff, Model, ModelResponse, Usage
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

Turn = list[Any] | BaseException


def say(text: str) -> ResponseOutputMessage:
    return ResponseOutputMessage(
        id="msg_1",
        content=[ResponseOutputText(text=text, type="output_text", annotations=[])],
        role="assistant",
        status="completed",
        type="message",
    )


def call(name: str, call_id: str, **arguments: Any) -> ResponseFunctionToolCall:
    return ResponseFunctionToolCall(
        id=f"fc_{call_id}",
        call_id=call_id,
        name=name,
        arguments=json.dumps(arguments),
        type="function_call",
        status="completed",
    )


def hand_off(to: Agent[Any], call_id: str) -> ResponseFunctionToolCall:
    return call(Handoff.default_tool_name(to), call_id)


class ScriptedModel(Model):
    """Answers each model call with the next scripted turn (or raises it)."""

    def __init__(self, turns: Iterable[Turn]) -> None:
        self.turns: deque[Turn] = deque(turns)
        self.inputs: list[Any] = []

    async def get_response(
        self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any
    ) -> ModelResponse:
        self.inputs.append(input)
        turn = self.turns.popleft()
        if isinstance(turn, BaseException):
            raise turn
        return ModelResponse(output=turn, usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("the tests do not stream")

    def tool_outputs(self) -> dict[str, str]:
        """The function-call outputs the SDK sent back to the model, by call id."""
        out: dict[str, str] = {}
        for sent in self.inputs:
            for item in sent if isinstance(sent, list) else ():
                if isinstance(item, dict) and item.get("type") == "function_call_output":
                    out[str(item["call_id"])] = str(item["output"])
        return out
