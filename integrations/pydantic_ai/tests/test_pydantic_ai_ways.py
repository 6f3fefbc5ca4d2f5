"""The ways around the guard and the ask round trip of the conformance matrix, in pydantic-ai.

The ways: an output function (``output_type=[fn]``, ``ToolOutput(fn)``) and an agent run
from inside a tool (delegation). Real agents on pydantic-ai's ``FunctionModel``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from orchestra_pydantic_ai import OrchestraCapability, answer_deferred
from pydantic_ai import Agent, DeferredToolRequests, ToolOutput
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from test_pydantic_ai_capability import write_config

from orchestra.bridge.testing import (
    ASK_CELLS,
    WAY_CELLS,
    Paused,
    ToolBody,
    ToolRun,
    ask_matrix_row,
    check_ask_cell,
    check_way_cell,
    way_matrix_rows,
)
from orchestra.skills import HookRegistry

DENY_FETCH = {
    "PreToolUse": [
        {"matcher": "fetch", "hooks": [{"type": "permission", "decision": "deny", "reason": "no"}]}
    ]
}
"""Denies the inner agent's tool (the outer tool that runs that agent is let through)."""

PAGE = Path(__file__).resolve().parents[3] / "docs" / "howto" / "one-policy.md"


def told(messages: list[ModelMessage]) -> list[str]:
    """What the model was told back: tool returns and retry prompts (refusals)."""
    return [
        str(p.content)
        for m in messages
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, ToolReturnPart | RetryPromptPart)
    ]


def calling(
    name: str | None, args: dict[str, Any] | None = None
) -> Callable[[list[ModelMessage], AgentInfo], ModelResponse]:
    """Call ``name`` (None: the output tool) with ``/data`` once; then say what it was told."""
    args = {"path": "/data"} if args is None else args

    def script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        back = told(messages)
        if back:
            return ModelResponse(parts=[TextPart(" | ".join(back))])
        tool = name if name is not None else info.output_tools[0].name
        return ModelResponse(parts=[ToolCallPart(tool, args, tool_call_id="c1")])

    return script


def output_function(registry: HookRegistry, body: ToolBody, wrap: bool) -> str:
    def fetch(path: str) -> str:
        """Fetch a path and answer with it."""
        return body(path)

    output: Any = [ToolOutput(fetch), str] if wrap else [fetch, str]
    agent: Agent[None, Any] = Agent(
        FunctionModel(calling(None)),
        capabilities=[OrchestraCapability(registry=registry)],
        output_type=output,
    )
    return str(asyncio.run(agent.run("fetch it")).output)


def delegation(registry: HookRegistry, body: ToolBody, guarded: bool) -> str:
    inner: Agent[None, str] = Agent(
        FunctionModel(calling("fetch")),
        capabilities=[OrchestraCapability()] if guarded else [],  # no registry: the ambient one
    )

    @inner.tool_plain
    def fetch(path: str) -> str:
        """Fetch a path."""
        return body(path)

    outer: Agent[None, str] = Agent(
        FunctionModel(calling("research", {})),
        capabilities=[OrchestraCapability(registry=registry)],
    )

    @outer.tool_plain
    async def research() -> str:
        """Ask the research agent."""
        return (await inner.run("fetch")).output

    return str(asyncio.run(outer.run("research it")).output)


WAYS: dict[str, tuple[str, Callable[[HookRegistry, ToolBody], str]]] = {
    "output_function": (
        "an output function, `output_type=[fn]`",
        lambda r, b: output_function(r, b, wrap=False),
    ),
    "tool_output": (
        "an output function, `ToolOutput(fn)`",
        lambda r, b: output_function(r, b, wrap=True),
    ),
    "delegation": (
        "an agent with `OrchestraCapability()` run inside a tool",
        lambda r, b: delegation(r, b, guarded=True),
    ),
    "delegation_unguarded": (
        "an agent without the capability run inside a tool",
        lambda r, b: delegation(r, b, guarded=False),
    ),
}


class PydanticAIWays:
    name = "pydantic-ai"
    ways: Mapping[str, str] = {way: what for way, (what, _) in WAYS.items()}
    cannot: Mapping[str, str] = {
        "delegation_unguarded": (
            "pydantic-ai runs an agent's tools through that agent's own capabilities only "
            "(`Agent(capabilities=...)`, `agent.run(..., capabilities=...)`, "
            "`agent.override(spec=...)`, each given for that agent), and its one process-wide "
            "default, `Agent.instrument_all()`, takes OpenTelemetry `InstrumentationSettings`, "
            "not a capability; give the inner agent `OrchestraCapability()` (no registry: the "
            "ambient policy's)"
        )
    }

    def call(self, way: str, registry: HookRegistry, body: ToolBody) -> ToolRun:
        return ToolRun(read=WAYS[way][1](registry, body))


class PydanticAIAsks:
    """A tool ``fetch``; an ask is a deferred approval, answered by ``answer_deferred``."""

    name = "pydantic-ai (OrchestraCapability)"
    cannot: Mapping[str, str] = {}

    def pause(self, registry: HookRegistry, body: ToolBody) -> Paused:
        agent: Agent[None, Any] = Agent(
            FunctionModel(calling("fetch")),
            capabilities=[OrchestraCapability(registry=registry)],
            output_type=[str, DeferredToolRequests],
        )

        @agent.tool_plain
        def fetch(path: str) -> str:
            """Fetch a path."""
            return body(path)

        first = asyncio.run(agent.run("fetch it"))
        requests = first.output
        assert isinstance(requests, DeferredToolRequests), first.output

        def answer(given: Mapping[str, Any]) -> ToolRun:
            results = answer_deferred(requests, {"c1": dict(given)})
            again = asyncio.run(
                agent.run(message_history=first.all_messages(), deferred_tool_results=results)
            )
            if isinstance(again.output, DeferredToolRequests):
                (pending,) = again.output.approvals
                return ToolRun(paused=True, request=again.output.metadata[pending.tool_call_id])
            return ToolRun(read=str(again.output))

        return Paused(request=requests.metadata["c1"], answer=answer)


@pytest.mark.parametrize("cell", WAY_CELLS)
@pytest.mark.parametrize("way", list(WAYS))
def test_way_cell(way: str, cell: str) -> None:
    reason = check_way_cell(PydanticAIWays(), way, cell)
    if reason is not None:
        pytest.skip(reason)


@pytest.mark.parametrize("cell", ASK_CELLS)
def test_ask_cell(cell: str) -> None:
    reason = check_ask_cell(PydanticAIAsks(), cell)
    if reason is not None:
        pytest.skip(reason)


def test_an_inner_agent_without_the_capability_is_out_of_reach_as_cannot_says(
    tmp_path: Path,
) -> None:
    """The documented ``cannot`` holds in the installed pydantic-ai: the body runs despite a
    deny, and no process-wide setting takes a capability."""
    import inspect

    body = ToolBody()
    PydanticAIWays().call("delegation_unguarded", write_config(tmp_path, DENY_FETCH), body)
    assert body.paths == ["/data"]  # unguarded: the inner agent's run never heard of it
    assert "capabilities" in inspect.signature(Agent.run).parameters
    # agent.override takes capabilities= too in recent versions: one agent's, as run's are
    (setting,) = inspect.signature(Agent.instrument_all).parameters.values()
    assert "InstrumentationSettings" in str(setting.annotation)


def test_the_page_shows_these_rows() -> None:
    page = PAGE.read_text()
    assert way_matrix_rows(PydanticAIWays()) in page
    assert ask_matrix_row(PydanticAIAsks()) in page
