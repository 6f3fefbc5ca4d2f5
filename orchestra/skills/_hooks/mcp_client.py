"""The mcp_tool runner: call a tool of an MCP server started over stdio.

Needs the ``mcp`` SDK (the ``mcp`` extra), imported on first use. Each call starts the
server (in a process group of its own), initializes a session, calls the tool with the
event as its arguments and stops the server again: the SDK closes its stdin, then
terminates and kills its process group, also when the call is cancelled or times out.

The tool's answer is read as a hook result: its structured content when it is a JSON
object (a ``{"result": ...}`` wrapper, as FastMCP makes of a function that returns a
string or a dict, is unwrapped), else its text content, which must be a result JSON
object (empty: no opinion), of at most 1 MiB. A tool error (``isError``), a server that
cannot start, crashes or answers garbage, and a timeout are ``HookRunError``.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterable, Mapping
from typing import IO, Any, Final, final

import anyio
import attrs

from orchestra.skills._processes.environment import shield_environment
from orchestra.skills._protocol.result import (
    OUTPUT_LIMIT,
    HookResult,
    HookRunError,
    parse_result,
    result_from_json,
)

__all__ = ["McpServer", "call_mcp_tool"]

# How much of the server's stderr an error keeps, and of a failed tool's message.
_STDERR_TAIL: Final = 1 << 16
_EXCERPT: Final = 2000


def _strings(args: Iterable[str]) -> tuple[str, ...]:
    return tuple(args)


@final
@attrs.frozen
class McpServer:
    """How to start an MCP server over stdio.

    Attributes:
        command: the program to run.
        args: its arguments.
        env: variables added to the SDK's safe default environment (``HOME``, ``PATH``,
            ``SHELL``, ``TERM``, ``USER``, ``LOGNAME``).
        cwd: the working directory, None for the current one.
    """

    command: str
    args: tuple[str, ...] = attrs.field(default=(), converter=_strings)
    env: Mapping[str, str] = attrs.field(factory=dict, hash=False)
    cwd: str | None = None


def _tail(errlog: IO[str]) -> str:
    errlog.flush()
    errlog.seek(0)
    return errlog.read()[-_STDERR_TAIL:]


def _flatten(exc: BaseException) -> BaseException:
    # Task groups wrap errors; a lone error is the real one.
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


def _text_of(content: list[Any]) -> str:
    return "".join(block.text for block in content if getattr(block, "type", None) == "text")


def _read_tool_result(
    tool: str, result: Any, strict: bool, read_text: Callable[[bytes], HookResult] | None = None
) -> HookResult:
    # mcp 2 names the fields in snake case, mcp 1 as on the wire.
    is_error = getattr(result, "is_error", None) or getattr(result, "isError", False)
    structured = getattr(result, "structured_content", None)
    if structured is None:
        structured = getattr(result, "structuredContent", None)
    text = _text_of(list(result.content or ()))
    if is_error:
        raise HookRunError(
            f"mcp tool {tool!r} failed: {text[:_EXCERPT] or 'no message'}",
            summary=f"mcp tool {tool!r} failed",
        )
    if len(text) > OUTPUT_LIMIT:
        raise HookRunError("output over 1 MiB in the mcp tool result")
    if isinstance(structured, dict):
        if set(structured) == {"result"}:
            inner = structured["result"]
            if isinstance(inner, str):
                return parse_result(inner.encode("utf-8"), strict=strict)
            return result_from_json(inner, strict=strict)
        return result_from_json(structured, strict=strict)
    if read_text is not None:
        return read_text(text.encode("utf-8"))
    return parse_result(text.encode("utf-8"), strict=strict)


async def call_mcp_tool(
    *,
    server: McpServer,
    tool: str,
    arguments: Mapping[str, Any],
    timeout: float,  # noqa: ASYNC109 -- one deadline for start, call and stop together
    strict_output: bool = False,
    read_text: Callable[[bytes], HookResult] | None = None,
) -> HookResult:
    """Start an MCP server, call one of its tools and read the answer as a hook result.

    Args:
        server: how to start the server.
        tool: the tool's name.
        arguments: the tool's arguments (the event).
        timeout: seconds for starting the server, initializing and calling the tool.
        strict_output: refuse result fields that are not known (see ``parse_result``).
        read_text: how to read the tool's text content instead of ``parse_result``
            (a Claude Code source reads it as a command hook's stdout).

    Returns:
        The tool's answer as a hook result.

    Raises:
        HookRunError: the SDK is missing, the server cannot start or crashes, the tool
            fails or times out, or its answer is not a result.
    """
    try:
        from mcp import ClientSession, StdioServerParameters
        from mcp.client.stdio import stdio_client
    except ImportError as exc:  # pragma: no cover - depends on the installed extras
        raise HookRunError(
            "could not start: mcp_tool hooks need the mcp SDK: pip install 'orchestra-hooks[mcp]'"
        ) from exc

    shield_environment()  # the server cannot read this process's environment either
    params = StdioServerParameters(
        command=server.command,
        args=list(server.args),
        env=dict(server.env) or None,
        cwd=server.cwd,
    )
    # The server's stderr, for the error message; a real file, since the SDK hands it
    # to the child process.
    with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as errlog:
        try:
            with anyio.fail_after(timeout):
                async with (
                    stdio_client(params, errlog=errlog) as (read, write),
                    ClientSession(read, write) as session,
                ):
                    await session.initialize()
                    result = await session.call_tool(tool, dict(arguments))
        except TimeoutError:
            raise HookRunError(f"timed out after {timeout:g} s", stderr=_tail(errlog)) from None
        except OSError as exc:
            raise HookRunError(f"could not start: {exc}", stderr=_tail(errlog)) from exc
        except Exception as error:
            cause = _flatten(error)
            if isinstance(cause, HookRunError):
                raise cause from None
            kind = f"mcp server failed: {type(cause).__name__}"
            raise HookRunError(f"{kind}: {cause}", stderr=_tail(errlog), summary=kind) from cause
    return _read_tool_result(tool, result, strict_output, read_text)
