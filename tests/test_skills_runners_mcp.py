"""The mcp_tool runner against a real MCP stdio server (tests/helpers/mcp_server.py)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from helpers.procs import LeakCheck

from orchestra.skills._hooks.mcp_client import McpServer, call_mcp_tool
from orchestra.skills._protocol.result import HookResult, HookRunError

pytestmark = pytest.mark.anyio

pytest.importorskip("mcp")

SERVER_SCRIPT = str(Path(__file__).parent / "helpers" / "mcp_server.py")
EVENT: dict[str, Any] = {
    "hook_event_name": "PreToolUse",
    "session_id": "s1",
    "tool_name": "Bash",
    "tool_input": {"command": "rm -rf /"},
}


@pytest.fixture
async def leaks(anyio_backend: str) -> LeakCheck:
    check = LeakCheck()
    check.snapshot()  # in the event loop: its own descriptors are not new
    return check


def server(leaks: LeakCheck) -> McpServer:
    # The mark goes into the server's environment: a server left running is found.
    return McpServer(sys.executable, (SERVER_SCRIPT,), env={"ORCHESTRA_TEST_MARK": leaks.mark})


async def call(
    leaks: LeakCheck,
    tool: str,
    arguments: dict[str, Any],
    timeout: float = 30,  # noqa: ASYNC109 -- the hook's own timeout, passed through
) -> HookResult:
    return await call_mcp_tool(
        server=server(leaks), tool=tool, arguments=arguments, timeout=timeout
    )


async def fails(leaks: LeakCheck, tool: str, timeout: float = 30) -> HookRunError:  # noqa: ASYNC109
    with pytest.raises(HookRunError) as caught:
        await call(leaks, tool, {}, timeout)
    return caught.value


async def goes_on(leaks: LeakCheck) -> None:
    """The caller goes on: the next call answers, and no server or pipe was left."""
    result = await call(leaks, "guard", {"tool_name": "Read", "tool_input": {}})
    assert result.decision == "allow"
    await leaks.check()


async def test_tool_denies(leaks: LeakCheck) -> None:
    result = await call(leaks, "guard", EVENT)
    assert result == HookResult(decision="deny", reason="refused: rm -rf /")
    await leaks.check()


async def test_tool_modifies_the_input(leaks: LeakCheck) -> None:
    result = await call(leaks, "guard", {**EVENT, "tool_input": {"command": "ls"}})
    assert result == HookResult(decision="allow", modified_input={"command": "ls", "checked": True})
    await leaks.check()


async def test_claude_code_shape_as_text(leaks: LeakCheck) -> None:
    result = await call(leaks, "claude_shape", {"tool_name": "Edit"})
    assert result == HookResult(decision="ask", reason="check Edit")
    await leaks.check()


async def test_empty_answer_is_no_opinion(leaks: LeakCheck) -> None:
    assert await call(leaks, "silent", {}) == HookResult()
    await leaks.check()


async def test_prose_is_not_a_result(leaks: LeakCheck) -> None:
    error = await fails(leaks, "prose")
    assert str(error) == "invalid JSON output: Expecting value at line 1 column 1"
    await goes_on(leaks)


async def test_big_answer(leaks: LeakCheck) -> None:
    error = await fails(leaks, "big")
    assert str(error) == "output over 1 MiB in the mcp tool result"
    await goes_on(leaks)


async def test_tool_error(leaks: LeakCheck) -> None:
    error = await fails(leaks, "fail")
    assert str(error).startswith("mcp tool 'fail' failed: ")
    await goes_on(leaks)


async def test_unknown_tool(leaks: LeakCheck) -> None:
    error = await fails(leaks, "no_such_tool")
    assert str(error).startswith("mcp tool 'no_such_tool' failed: ")
    assert "no_such_tool" in str(error).partition("failed: ")[2]
    await goes_on(leaks)


async def test_server_that_crashes(leaks: LeakCheck) -> None:
    error = await fails(leaks, "crash")
    assert str(error).startswith("mcp server failed: ")
    assert "about to crash" in error.stderr
    await goes_on(leaks)


async def test_server_that_cannot_start(leaks: LeakCheck, tmp_path: Path) -> None:
    missing = McpServer(str(tmp_path / "no-such-server"))
    with pytest.raises(HookRunError, match=r"^could not start: \[Errno 2\]"):
        await call_mcp_tool(server=missing, tool="guard", arguments=EVENT, timeout=30)
    await goes_on(leaks)


async def test_server_that_exits_at_once(leaks: LeakCheck) -> None:
    quitter = McpServer(sys.executable, ("-c", "import sys; print('bye', file=sys.stderr)"))
    with pytest.raises(HookRunError, match=r"^mcp server failed: ") as caught:
        await call_mcp_tool(server=quitter, tool="guard", arguments=EVENT, timeout=30)
    assert "bye" in caught.value.stderr
    await goes_on(leaks)


async def test_tool_that_never_answers(leaks: LeakCheck) -> None:
    error = await fails(leaks, "hang", timeout=1)
    assert str(error) == "timed out after 1 s"
    await goes_on(leaks)


async def test_cancellation_stops_the_server(leaks: LeakCheck) -> None:
    with anyio.move_on_after(1) as scope:
        await call(leaks, "hang", {})
    assert scope.cancelled_caught
    await goes_on(leaks)


def test_server_config_is_a_value() -> None:
    a = McpServer("srv", ["--x"], env={"A": "1"})  # type: ignore[arg-type]
    assert a == McpServer("srv", ("--x",), env={"A": "1"})
    assert a != McpServer("srv", ("--x",), env={"A": "2"})
    assert hash(a) == hash(McpServer("srv", ("--x",), env={"A": "2"}))
