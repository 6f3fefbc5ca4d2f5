"""ComputerTool: each action the model asks goes through PreToolUse with its real input.

Before, a ``ComputerTool`` was not guarded at all (neither a function tool nor a hosted
one): a deny of ``click`` did not stop the click. Scripted model, real SDK runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from agents import Agent, AsyncComputer, Computer, ComputerProvider, ComputerTool, Runner
from agents.testing import ScriptedModel, assistant_message
from bridge_helpers import events, log_hook, write_config
from openai.types.responses import ResponseComputerToolCall
from openai.types.responses.response_computer_tool_call import ActionClick, ActionType
from orchestra_openai_agents import OrchestraRunHooks, is_guarded

pytestmark = pytest.mark.anyio

NO_CLICK_AT_ORIGIN = {
    "matcher": "computer_use_preview|computer",
    "hooks": [
        {
            "type": "command",
            "command": "if grep -Eq '\"x\": ?0[,}]'; then echo 'not the corner' >&2; exit 2; fi",
        }
    ],
}


class Display:
    """What both fake screens are: a Linux desktop of 800x600."""

    @property
    def environment(self) -> Any:
        return "linux"

    @property
    def dimensions(self) -> tuple[int, int]:
        return (800, 600)


class Screen(Display, Computer):
    """A fake screen: records each action it performs."""

    def __init__(self) -> None:
        self.done: list[tuple[Any, ...]] = []
        self.disposed = False

    def screenshot(self) -> str:
        return "c2NyZWVu"  # base64 "screen"

    def click(self, x: int, y: int, button: str) -> None:
        self.done.append(("click", x, y, button))

    def double_click(self, x: int, y: int) -> None:
        self.done.append(("double_click", x, y))

    def scroll(self, x: int, y: int, scroll_x: int, scroll_y: int) -> None:
        self.done.append(("scroll", x, y, scroll_x, scroll_y))

    def type(self, text: str) -> None:
        self.done.append(("type", text))

    def wait(self) -> None:
        self.done.append(("wait",))

    def move(self, x: int, y: int) -> None:
        self.done.append(("move", x, y))

    def keypress(self, keys: list[str]) -> None:
        self.done.append(("keypress", *keys))

    def drag(self, path: list[tuple[int, int]]) -> None:
        self.done.append(("drag", *path))


class AsyncScreen(Display, AsyncComputer):
    def __init__(self) -> None:
        self.done: list[tuple[Any, ...]] = []

    async def screenshot(self) -> str:
        return "c2NyZWVu"

    async def click(self, x: int, y: int, button: str) -> None:
        self.done.append(("click", x, y, button))

    async def double_click(self, x: int, y: int) -> None:
        raise NotImplementedError

    async def scroll(self, x: int, y: int, scroll_x: int, scroll_y: int) -> None:
        raise NotImplementedError

    async def type(self, text: str) -> None:
        self.done.append(("type", text))

    async def wait(self) -> None:
        raise NotImplementedError

    async def move(self, x: int, y: int) -> None:
        raise NotImplementedError

    async def keypress(self, keys: list[str]) -> None:
        raise NotImplementedError

    async def drag(self, path: list[tuple[int, int]]) -> None:
        raise NotImplementedError


def computer_call(call_id: str, action: Any) -> ResponseComputerToolCall:
    return ResponseComputerToolCall(
        id=f"item-{call_id}",
        call_id=call_id,
        type="computer_call",
        status="completed",
        pending_safety_checks=[],
        action=action,
    )


def click(call_id: str, x: int, y: int) -> ResponseComputerToolCall:
    return computer_call(call_id, ActionClick(type="click", x=x, y=y, button="left"))


def typing(call_id: str, text: str) -> ResponseComputerToolCall:
    return computer_call(call_id, ActionType(type="type", text=text))


def script() -> ScriptedModel:
    return ScriptedModel(
        [[click("k1", 0, 0)], [click("k2", 40, 30)], [assistant_message("clicked the button")]]
    )


def said(model: ScriptedModel, turn: int) -> list[str]:
    """The plain messages the model read in turn ``turn`` (0-based)."""
    items = model.calls[turn].input
    listed = items if isinstance(items, list) else []
    return [
        str(item["content"])
        for item in listed
        if isinstance(item, dict) and item.get("role") == "user"
    ][1:]  # after the prompt


@pytest.mark.parametrize("kind", ["instance", "factory", "provider", "async"])
async def test_a_denied_action_is_not_performed_the_model_reads_why_the_run_goes_on(
    tmp_path: Path, kind: str
) -> None:
    log = tmp_path / "events.jsonl"
    registry = write_config(tmp_path, {"PreToolUse": [log_hook(log), NO_CLICK_AT_ORIGIN]})
    screen: Any = AsyncScreen() if kind == "async" else Screen()
    config: Any = screen
    if kind == "factory":
        config = lambda *, run_context: screen  # noqa: E731  # the SDK's ComputerCreate
    if kind == "provider":

        def dispose(*, run_context: Any, computer: Any) -> None:
            computer.disposed = True

        config = ComputerProvider(create=lambda *, run_context: screen, dispose=dispose)
    model = script()
    agent = Agent(name="desk", model=model, tools=[ComputerTool(computer=config)])
    result = await OrchestraRunHooks(registry=registry).run(agent, "press the button")

    assert screen.done == [("click", 40, 30, "left")]  # the denied click never happened
    assert result.final_output == "clicked the button"
    told = said(model, 1)
    assert any("Tool call denied: not the corner" in text for text in told), told
    assert said(model, 2) == told  # every later model call of the run still reads it
    seen = [e["tool_input"] for e in events(log)]
    assert seen == [
        {"type": "click", "x": 0, "y": 0, "button": "left"},
        {"type": "click", "x": 40, "y": 30, "button": "left"},
    ]  # the action as the model sent it
    assert {e["tool_name"] for e in events(log)} == {agent.tools[0].name}
    if kind == "provider":
        assert screen.disposed  # the user's dispose got the user's computer


async def test_an_allowed_action_runs_once_and_nothing_is_added(tmp_path: Path) -> None:
    registry = write_config(tmp_path, {"PreToolUse": [NO_CLICK_AT_ORIGIN]})
    screen = Screen()
    model = ScriptedModel([[typing("t1", "hello")], [assistant_message("typed")]])
    agent = Agent(name="desk", model=model, tools=[ComputerTool(computer=screen)])
    await OrchestraRunHooks(registry=registry).run(agent, "type hello")
    assert screen.done == [("type", "hello")]
    assert said(model, 1) == []


async def test_a_guarded_agent_s_computer_tool_is_guarded(tmp_path: Path) -> None:
    bridge = OrchestraRunHooks(registry=write_config(tmp_path, {"PreToolUse": []}))
    guarded = bridge.guard(Agent(name="desk", tools=[ComputerTool(computer=Screen())]))
    assert is_guarded(guarded)
    [tool] = guarded.tools
    assert isinstance(tool, ComputerTool)
    assert bridge.guard(guarded).tools[0] is tool  # guarding twice changes nothing


async def test_run_by_the_runner_itself_the_action_is_still_refused(tmp_path: Path) -> None:
    """No bridge run, no message: the click is refused all the same (documented)."""
    bridge = OrchestraRunHooks(
        registry=write_config(tmp_path, {"PreToolUse": [NO_CLICK_AT_ORIGIN]})
    )
    screen = Screen()
    agent = bridge.guard(Agent(name="desk", model=script(), tools=[ComputerTool(computer=screen)]))
    result = await Runner.run(agent, "press the button", hooks=bridge)
    assert screen.done == [("click", 40, 30, "left")]
    assert result.final_output == "clicked the button"
