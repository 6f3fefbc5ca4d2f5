"""The tool matrix (``orchestra.bridge.testing``) on a tool call of the Claude Agent SDK.

The fake CLI behind the SDK's ``Transport`` makes the call as Claude Code does
(``PreToolUse``, the tool, ``PostToolUse``); what the caller reads is what the model would
read: the tool's result (or the ``updatedToolOutput`` of a ``PostToolUse`` rewrite), the
``permissionDecisionReason`` of a deny (a mock is a deny whose reason carries the mock's
output: Claude Code takes no tool answer from a ``PreToolUse`` hook), or the answer of the
SDK's ``can_use_tool`` when the hooks ``ask`` (the CLI asks that permission prompt and waits
for it: the pause, here a person who says no).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import anyio
import pytest
from claude_agent_sdk import ClaudeAgentOptions, PermissionResultDeny, query
from fake_cli import FakeCLI
from orchestra_claude_agent_sdk import with_hooks

from orchestra.bridge.testing import TOOL_CELLS, ToolBody, ToolRun, check_tool_cell, tool_matrix_row
from orchestra.skills import HookRegistry

PAGE = Path(__file__).resolve().parents[3] / "docs" / "howto" / "one-policy.md"
_NOBODY = "the person said no"


class ClaudeAgentSDKEngine:
    """One call of ``fetch`` made by the fake CLI, on asyncio; an ask is ``can_use_tool``."""

    name = "Claude Agent SDK (with_hooks)"
    cannot: Mapping[str, str] = MappingProxyType({})

    def call(self, registry: HookRegistry, body: ToolBody) -> ToolRun:
        asked: list[tuple[str, dict[str, Any]]] = []

        async def person(name: str, tool_input: dict[str, Any], ctx: Any) -> Any:
            asked.append((name, tool_input))  # the CLI waits for this answer: the pause
            return PermissionResultDeny(message=_NOBODY)

        options = with_hooks(ClaudeAgentOptions(can_use_tool=person), registry=registry)
        call = {"tool_name": "fetch", "tool_input": {"path": "/data"}, "tool_use_id": "toolu_f"}
        cli = FakeCLI(
            [("tool", call)], tools={"fetch": lambda tool_input: body(tool_input["path"])}
        )

        async def prompt() -> AsyncIterator[dict[str, Any]]:  # can_use_tool needs a stream
            yield {"type": "user", "message": {"role": "user", "content": "fetch it"}}

        async def main() -> None:
            async for _ in query(prompt=prompt(), options=options, transport=cli):
                pass

        anyio.run(main)
        [read] = cli.read
        if asked:
            assert asked == [("fetch", {"path": "/data"})], asked
            assert read == _NOBODY, read  # the model reads the person's answer
        return ToolRun(read=str(read), paused=bool(asked))


@pytest.mark.parametrize("cell", TOOL_CELLS)
def test_tool_matrix_on_the_claude_agent_sdk(cell: str) -> None:
    reason = check_tool_cell(ClaudeAgentSDKEngine(), cell)
    if reason is not None:
        pytest.skip(reason)


def test_the_one_policy_page_has_the_claude_agent_sdks_row() -> None:
    assert tool_matrix_row(ClaudeAgentSDKEngine()) in PAGE.read_text()
