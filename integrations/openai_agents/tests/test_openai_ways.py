"""The ways around the guard and the ask round trip of the conformance matrix, in the SDK.

Each way is a tool type the SDK runs other than a function tool, or an agent run started
from inside a tool: the scripted model asks for it with ``/data`` in its input, and the
hooks read that input. Real SDK runs on its ``ScriptedModel``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from typing import Any

import pytest
from agents import (
    Agent,
    ApplyPatchTool,
    Computer,
    ComputerTool,
    LocalShellTool,
    Runner,
    ShellTool,
    function_tool,
)
from agents.testing import ScriptedModel, assistant_message, function_call
from bridge_helpers import tool_outputs
from openai.types.responses import ResponseApplyPatchToolCall, ResponseFunctionShellToolCall
from openai.types.responses.response_apply_patch_tool_call import OperationCreateFile
from openai.types.responses.response_computer_tool_call import ActionType
from openai.types.responses.response_function_shell_tool_call import Action
from openai.types.responses.response_output_item import LocalShellCall, LocalShellCallAction
from orchestra_openai_agents import OrchestraRunHooks, answer_approval, pending_request
from test_openai_computer import Display, computer_call
from test_openai_tool_matrix import PAGE

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


class Screen(Display, Computer):
    """A fake screen whose typing is the tool body: its screenshot shows what it did."""

    def __init__(self, body: ToolBody) -> None:
        self.body = body
        self.shown = "nothing yet"

    def screenshot(self) -> str:
        return self.shown

    def type(self, text: str) -> None:
        self.shown = self.body(text)

    def click(self, x: int, y: int, button: str) -> None: ...
    def double_click(self, x: int, y: int) -> None: ...
    def scroll(self, x: int, y: int, scroll_x: int, scroll_y: int) -> None: ...
    def wait(self) -> None: ...
    def move(self, x: int, y: int) -> None: ...
    def keypress(self, keys: list[str]) -> None: ...
    def drag(self, path: list[tuple[int, int]]) -> None: ...


class Editor:
    def __init__(self, body: ToolBody) -> None:
        self.body = body

    def create_file(self, operation: Any) -> str:
        return self.body(operation.path)

    def update_file(self, operation: Any) -> str:
        raise NotImplementedError

    def delete_file(self, operation: Any) -> str:
        raise NotImplementedError


def shell(body: ToolBody) -> tuple[Any, Any]:
    call = ResponseFunctionShellToolCall(
        id="item-s1", call_id="s1", type="shell_call", status="completed",
        action=Action(commands=["fetch /data"]),
    )  # fmt: skip
    return ShellTool(executor=lambda r: body(r.data.action.commands[0].split()[1])), call


def local_shell(body: ToolBody) -> tuple[Any, Any]:
    call = LocalShellCall(
        id="item-l1", call_id="l1", type="local_shell_call", status="completed",
        action=LocalShellCallAction(command=["fetch", "/data"], env={}, type="exec"),
    )  # fmt: skip
    return LocalShellTool(executor=lambda r: body(r.data.action.command[1])), call


def apply_patch(body: ToolBody) -> tuple[Any, Any]:
    call = ResponseApplyPatchToolCall(
        id="item-p1", call_id="p1", type="apply_patch_call", status="completed",
        operation=OperationCreateFile(type="create_file", path="/data", diff="+hello"),
    )  # fmt: skip
    return ApplyPatchTool(editor=Editor(body)), call


def computer(body: ToolBody) -> tuple[Any, Any]:
    return ComputerTool(computer=Screen(body)), computer_call(
        "k1", ActionType(type="type", text="/data")
    )


def nested(body: ToolBody, how: str) -> tuple[Any, Any]:
    """A function tool that runs another agent itself: by a bridge of its own, or plainly
    (``Runner.run``, ``Runner.run_streamed``; ``Runner.run_sync`` from a sync tool)."""

    @function_tool
    def fetch(path: str) -> str:
        """Fetch a path."""
        return body(path)

    inner = ScriptedModel(
        [[function_call("fetch", {"path": "/data"}, call_id="n1")], [assistant_message("ok")]]
    )
    agent = Agent(name="inner", model=inner, tools=[fetch])

    @function_tool(name_override="research")
    async def research() -> str:
        """Ask the research agent."""
        if how == "bridge":  # no registry of its own: the ambient policy of the tool it runs in
            await OrchestraRunHooks().run(agent, "fetch")
        elif how == "run":
            await Runner.run(agent, "fetch")
        else:
            async for _ in Runner.run_streamed(agent, "fetch").stream_events():
                pass
        return tool_outputs(inner).get("n1", "")

    @function_tool(name_override="research")
    def research_sync() -> str:
        """Ask the research agent, from synchronous code (the SDK runs it in a thread)."""
        Runner.run_sync(agent, "fetch")
        # run_sync leaves this thread's event loop open for later runs (as the SDK's does):
        # the thread is the executor's, gone after this run, so its loop is closed here
        asyncio.get_event_loop_policy().get_event_loop().close()
        return tool_outputs(inner).get("n1", "")

    tool = research_sync if how == "run_sync" else research
    return tool, function_call("research", {}, call_id="r1")


WAYS: dict[str, tuple[str, Callable[[ToolBody], tuple[Any, Any]]]] = {
    "shell_tool": ("a local `ShellTool` (its commands)", shell),
    "local_shell_tool": ("a `LocalShellTool` (its argv)", local_shell),
    "apply_patch_tool": ("an `ApplyPatchTool` operation", apply_patch),
    "computer_tool": ("a `ComputerTool` action", computer),
    "nested_run": (
        "an agent run by `OrchestraRunHooks()` inside a function tool",
        lambda body: nested(body, "bridge"),
    ),
    "nested_plain_runner": (
        "an agent run by the plain `Runner.run` inside a function tool",
        lambda body: nested(body, "run"),
    ),
    "nested_plain_run_sync": (
        "an agent run by the plain `Runner.run_sync` inside a sync function tool",
        lambda body: nested(body, "run_sync"),
    ),
    "nested_plain_run_streamed": (
        "an agent run by the plain `Runner.run_streamed` inside a function tool",
        lambda body: nested(body, "run_streamed"),
    ),
}


def everything_read(model: ScriptedModel) -> str:
    """All the model read after its first call: outputs, refusals, notes."""
    return "\n".join(json.dumps(call.input, default=str) for call in model.calls[1:])


class OpenAIWays:
    name = "OpenAI Agents"
    ways: Mapping[str, str] = {way: what for way, (what, _) in WAYS.items()}
    cannot: Mapping[str, str] = {}

    def call(self, way: str, registry: HookRegistry, body: ToolBody) -> ToolRun:
        tool, call = WAYS[way][1](body)
        model = ScriptedModel([[call], [assistant_message("done")]])
        agent = Agent(name="ops", model=model, tools=[tool])
        asyncio.run(OrchestraRunHooks(registry=registry).run(agent, "go"))
        return ToolRun(read=everything_read(model))


class OpenAIAsks:
    """A function tool ``fetch``; an ask is the SDK's interruption, answered by answer_approval."""

    name = "OpenAI Agents (OrchestraRunHooks)"
    cannot: Mapping[str, str] = {}

    def pause(self, registry: HookRegistry, body: ToolBody) -> Paused:
        @function_tool
        def fetch(path: str) -> str:
            """Fetch a path."""
            return body(path)

        model = ScriptedModel(
            [[function_call("fetch", {"path": "/data"}, call_id="c1")], [assistant_message("done")]]
        )
        agent = Agent(name="fetcher", model=model, tools=[fetch])
        bridge = OrchestraRunHooks(registry=registry)
        paused = asyncio.run(bridge.run(agent, "fetch it"))
        (item,) = paused.interruptions
        state = paused.to_state()

        def answer(given: Mapping[str, Any]) -> ToolRun:
            answer_approval(bridge, state, item, dict(given))
            resumed = asyncio.run(bridge.run(agent, state))
            return ToolRun(
                read=tool_outputs(model).get("c1", ""), paused=bool(resumed.interruptions)
            )

        return Paused(request=pending_request(bridge, item), answer=answer)


@pytest.mark.parametrize("cell", WAY_CELLS)
@pytest.mark.parametrize("way", list(WAYS))
def test_way_cell(way: str, cell: str) -> None:
    reason = check_way_cell(OpenAIWays(), way, cell)
    if reason is not None:
        pytest.skip(reason)


@pytest.mark.parametrize("cell", ASK_CELLS)
def test_ask_cell(cell: str) -> None:
    reason = check_ask_cell(OpenAIAsks(), cell)
    if reason is not None:
        pytest.skip(reason)


def test_the_page_shows_these_rows() -> None:
    page = PAGE.read_text()
    assert way_matrix_rows(OpenAIWays()) in page
    assert ask_matrix_row(OpenAIAsks()) in page
