"""A real MCP server over stdio for the mcp_tool runner tests: ``python mcp_server.py``."""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

try:  # mcp 2
    from mcp.server.mcpserver import MCPServer as Server
except ImportError:  # mcp 1
    from mcp.server.fastmcp import FastMCP as Server  # type: ignore[no-redef]

server = Server("orchestra-test-hooks")


@server.tool()
def guard(tool_name: str = "", tool_input: dict[str, Any] | None = None) -> dict[str, Any]:
    """Deny Bash commands that hold ``rm -rf``; rewrite others to add a flag."""
    command = str((tool_input or {}).get("command", ""))
    if tool_name == "Bash" and "rm -rf" in command:
        return {"decision": "deny", "reason": f"refused: {command}"}
    return {"decision": "allow", "modified_input": {**(tool_input or {}), "checked": True}}


@server.tool()
def claude_shape(tool_name: str = "") -> str:
    """Answer Claude Code's result shape as JSON text."""
    return json.dumps(
        {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "ask",
                "permissionDecisionReason": f"check {tool_name}",
            }
        }
    )


@server.tool()
def silent() -> str:
    """No opinion."""
    return ""


@server.tool()
def prose() -> str:
    """A text answer that is not a result."""
    return "looks fine to me"


@server.tool()
def big() -> str:
    """An answer over 1 MiB."""
    return " " * (2 << 20)


@server.tool()
def fail() -> str:
    """A tool error (isError)."""
    raise ValueError("the guard's database is down")


@server.tool()
def crash() -> str:
    """The server dies mid-call."""
    print("about to crash", file=sys.stderr, flush=True)
    os._exit(3)


@server.tool()
def hang() -> str:
    """Never answers in time."""
    time.sleep(60)
    return ""


if __name__ == "__main__":
    server.run("stdio")
