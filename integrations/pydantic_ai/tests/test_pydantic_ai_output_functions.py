"""Output functions (``output_type=[fn]``, ``ToolOutput(fn)``) are tool calls (issue 42).

Before, pydantic-ai ran them without the capability's tool hooks: a deny of ``delete``
did not stop ``delete`` given as an output function. Real agents, pydantic-ai's
FunctionModel.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from orchestra_pydantic_ai import OrchestraCapability
from pydantic_ai import Agent, Tool, ToolOutput
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from test_pydantic_ai_capability import Script, log_to, logged, permission, write_config

from orchestra import Skip, TaskHookContext, TaskHooks

NO_ROOT = "if grep -q '\"path\": \"/\"'; then echo 'never delete /' >&2; exit 2; fi"
"""Blocks a call whose input has the path "/"."""


class OutputScript:
    """Calls the output tool with ``first``; once told why not, with ``then``."""

    def __init__(self, first: dict[str, Any], then: dict[str, Any]) -> None:
        self.first, self.then = first, then
        self.retries: list[str] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        prompts = [
            p
            for m in messages
            if isinstance(m, ModelRequest)
            for p in m.parts
            if isinstance(p, RetryPromptPart | ToolReturnPart)
        ]
        self.retries = [str(p.content) for p in prompts]
        [output_tool] = info.output_tools
        args = self.then if prompts else self.first
        return ModelResponse(parts=[ToolCallPart(output_tool.name, args, tool_call_id="o1")])


def make_outputs(ran: list[str]) -> tuple[Any, Any]:
    def delete(path: str) -> str:
        """Delete a file and report it."""
        ran.append(path)
        return f"deleted {path}"

    def move(source: str, target: str) -> str:
        """Move a file and report it."""
        ran.append(f"{source}->{target}")
        return f"moved {source}"

    return delete, move


@pytest.mark.parametrize("shape", ["list", "ToolOutput"])
def test_a_denied_output_function_is_not_called_and_the_model_reads_why(
    tmp_path: Path, shape: str
) -> None:
    ran: list[str] = []
    delete, _ = make_outputs(ran)
    deny_root = {
        "matcher": "delete",
        "hooks": [
            {
                "type": "command",
                "command": NO_ROOT,
            }
        ],
    }
    log = tmp_path / "log"
    registry = write_config(tmp_path, {"PreToolUse": [log_to(log), deny_root]})
    script = OutputScript({"path": "/"}, {"path": "/tmp/old"})
    output_type: Any = [delete] if shape == "list" else ToolOutput(delete)
    agent: Agent[None, str] = Agent(
        FunctionModel(script),
        output_type=output_type,
        retries=3,
        capabilities=[OrchestraCapability(registry=registry)],
    )
    result = asyncio.run(agent.run("clean up"))

    assert ran == ["/tmp/old"]  # the denied call never ran the function
    assert any("never delete /" in text for text in script.retries)  # what the model read
    assert result.output == "deleted /tmp/old"
    seen = sorted(str((e["tool_name"], e["tool_input"])) for e in logged(log))
    assert seen == [str(("delete", {"path": p})) for p in ("/", "/tmp/old")]


def test_a_multi_argument_output_function_takes_a_rewritten_input(tmp_path: Path) -> None:
    ran: list[str] = []
    _, move = make_outputs(ran)
    rewrite = '{"modified_input": {"source": "a", "target": "/tmp/sandbox"}}'
    registry = write_config(
        tmp_path,
        {
            "PreToolUse": [
                {"matcher": "move", "hooks": [{"type": "command", "command": f"echo '{rewrite}'"}]}
            ]
        },
    )
    script = OutputScript({"source": "a", "target": "/etc"}, {})
    agent: Agent[None, str] = Agent(
        FunctionModel(script),
        output_type=[move],
        capabilities=[OrchestraCapability(registry=registry)],
    )
    result = asyncio.run(agent.run("move it"))
    assert ran == ["a->/tmp/sandbox"]
    assert result.output == "moved a"


def test_an_output_function_left_alone_without_tool_hooks(tmp_path: Path) -> None:
    ran: list[str] = []
    delete, _ = make_outputs(ran)
    registry = write_config(tmp_path, {"PreToolUse": [permission("deny", "no", matcher="other")]})
    agent: Agent[None, str] = Agent(
        FunctionModel(OutputScript({"path": "/a"}, {})),
        output_type=[delete],
        capabilities=[OrchestraCapability(registry=registry)],
    )
    assert asyncio.run(agent.run("go")).output == "deleted /a"
    assert ran == ["/a"]


class SkipDestructive(TaskHooks):
    """The skip-by-tag rule: a task tagged ``destructive`` does not run."""

    def before_execute(self, ctx: TaskHookContext) -> Skip | None:
        if "destructive" in ctx.task.metadata.get("tags", ()):
            return Skip(reason=f"{ctx.task.id} is destructive")
        return None


def test_a_tools_metadata_reaches_the_task_hooks(tmp_path: Path) -> None:
    """``Tool(metadata=...)`` is ``ctx.task.metadata`` (before, it was dropped)."""
    ran: list[str] = []

    def wipe(path: str) -> str:
        """Wipe a folder."""
        ran.append(path)
        return f"wiped {path}"

    script = Script(("wipe", {"path": "/srv"}))
    agent: Agent[None, str] = Agent(
        FunctionModel(script),
        tools=[Tool(wipe, metadata={"tags": ["destructive"]})],
        capabilities=[OrchestraCapability([SkipDestructive()])],
    )
    result = asyncio.run(agent.run("wipe /srv"))
    assert ran == []
    (told,) = script.read  # what the scripted model was sent for the call: the refusal
    assert (told.tool_name, told.tool_call_id) == ("wipe", "c1")
    assert told.content == "Tool call skipped: wipe is destructive"
    assert result.output == "Tool call skipped: wipe is destructive"
