"""The task matrix (``orchestra.bridge.testing``) on a tool call of the Claude Agent SDK.

The fake CLI makes the call as Claude Code does (``PreToolUse``, the tool, ``PostToolUse``
or ``PostToolUseFailure``); the work's output is what the model would read.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

import anyio
import pytest
from claude_agent_sdk import ClaudeAgentOptions, query
from fake_cli import FakeCLI
from orchestra_claude_agent_sdk import with_hooks

import orchestra
from orchestra.bridge.testing import TASK_CELLS, TaskRun, check_task_cell

_RUNS_THE_TOOL = "the Claude Code CLI runs the tools: a hook cannot run one again or answer for it"


class _End(orchestra.TaskHooks):
    def __init__(self) -> None:
        self.state: orchestra.TaskState | None = None

    def on_end(self, ctx: Any, state: orchestra.TaskState) -> None:
        self.state = state


class ClaudeAgentSDKEngine:
    """One tool call ``work`` made by the fake CLI, on asyncio."""

    name = "Claude Agent SDK"
    cannot: Mapping[str, str] = MappingProxyType(
        {
            "retry": _RUNS_THE_TOOL,
            "give_output": _RUNS_THE_TOOL,
            "on_end_once": f"{_RUNS_THE_TOOL}; a failed call is the CLI's to report (no Skip)",
            "skip_by_tags": "Claude Code's tools carry no tags of their own",
            "fail": "a Fail is a deny the model reads; the SDK raises nothing",
            "one_trace": "each hook callback is a control request of its own: its span is a root",
        }
    )

    def run(self, hooks: Sequence[object], body: Callable[[], Any], tags: Sequence[str]) -> TaskRun:
        end = _End()
        options = with_hooks(ClaudeAgentOptions(), hooks=[*hooks, end])
        call = {"tool_name": "work", "tool_input": {"job": "j"}, "tool_use_id": "toolu_w"}
        cli = FakeCLI([("tool", call)], tools={"work": lambda tool_input: body()})

        async def main() -> None:
            async for _ in query(prompt="go", options=options, transport=cli):
                pass

        anyio.run(main)
        assert end.state is not None, "on_end was not called"
        [read] = cli.read
        return TaskRun(end.state, read if isinstance(read, dict) else None)


@pytest.mark.parametrize("cell", TASK_CELLS)
def test_task_matrix_on_a_claude_agent_sdk_tool_call(cell: str) -> None:
    reason = check_task_cell(ClaudeAgentSDKEngine(), cell)
    if reason is not None:
        pytest.skip(reason)
