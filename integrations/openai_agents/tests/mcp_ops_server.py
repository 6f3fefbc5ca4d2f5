"""A real MCP server over stdio for the bridge's tests: ``python mcp_ops_server.py LOG``.

``run_shell`` appends each command it runs to the file LOG (the side effect a test
counts); ``read_page`` has none.
"""

from __future__ import annotations

import sys
from pathlib import Path

try:  # mcp 2
    from mcp.server.mcpserver import MCPServer as Server
except ImportError:  # mcp 1
    from mcp.server.fastmcp import FastMCP as Server  # type: ignore[no-redef]

LOG = Path(sys.argv[1])
server = Server("ops")


@server.tool()
def run_shell(command: str) -> str:
    """Run a shell command."""
    with LOG.open("a") as log:
        log.write(command + "\n")
    return f"ran: {command}"


@server.tool()
def read_page(page: int) -> str:
    """Read a page."""
    return f"page {page}"


if __name__ == "__main__":
    server.run()
