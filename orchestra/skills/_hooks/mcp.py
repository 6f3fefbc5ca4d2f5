"""``McpToolHook``: a tool of an MCP server (over stdio) called with the event."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Final, final

import attrs

from orchestra.skills._config.yaml import kind, plain
from orchestra.skills._hooks.mcp_client import McpServer, call_mcp_tool
from orchestra.skills._hooks.spec import NOT_CONFIG, HookCall, HookSpec
from orchestra.skills._protocol.result import HookRunError

if TYPE_CHECKING:
    from orchestra.skills._config.entry import Entry
    from orchestra.skills._protocol.result import HookResult

__all__ = ["McpServerSpec", "McpToolHook"]

_SERVER_FIELDS: Final = ("command", "args", "env", "cwd")


@final
@attrs.frozen
class McpServerSpec:
    """How to start the MCP server of an ``mcp_tool`` hook (over stdio).

    Attributes:
        command: the program to start.
        args: its arguments.
        env: variables added to the inherited environment.
        cwd: its working directory (None: the project directory).
    """

    command: str
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    cwd: str | None = None


@final
@attrs.frozen(kw_only=True, repr=False)
class McpToolHook(HookSpec):
    """A hook that calls ``tool`` on an MCP server (needs the ``mcp`` extra).

    Attributes:
        server: the MCP server to start.
        tool: the tool to call.
        arguments: fixed arguments, added to the event's fields.
        strict_output: unknown fields in the result are errors.
        server_name: the server's name in a Claude Code source (``server``), found in
            its ``.mcp.json``; None for a YAML hook.
        input_template: Claude Code's ``input``: the tool's only arguments, each
            ``${path}`` in a string replaced by the event's value at that path
            (``${tool_input.file_path}``); None to send the event's fields.
    """

    type: ClassVar[str] = "mcp_tool"

    server: McpServerSpec
    tool: str
    arguments: Mapping[str, Any] = attrs.field(factory=dict, hash=False)
    strict_output: bool = False
    server_name: str | None = attrs.field(default=None, metadata=NOT_CONFIG)
    input_template: Mapping[str, Any] | None = attrs.field(
        default=None, hash=False, metadata=NOT_CONFIG
    )

    def describe(self) -> str:
        """``tool on command args``."""
        return f"{self.tool} on {' '.join([self.server.command, *self.server.args])}"

    @classmethod
    def parse_fields(cls, entry: Entry) -> dict[str, Any]:
        """Read ``tool``, ``server`` (a command line or a mapping) and ``arguments``."""
        tool = entry.string("tool", required=True)
        arguments = entry.get("arguments")
        if arguments is not None and not isinstance(arguments, Mapping):
            entry.bad("arguments", f"expected a mapping, got {kind(arguments)}")
            arguments = None
        return {
            "tool": tool,
            "server": _server(entry),
            "arguments": plain(arguments or {}),
            "strict_output": entry.flag("strict_output"),
        }

    async def run(self, call: HookCall) -> HookResult:
        """Start the server, call the tool with the event's fields (see ``call_mcp_tool``)."""
        server = self.server
        if not server.command:
            raise HookRunError(f"mcp server {self.server_name!r} is not configured (.mcp.json)")
        arguments = (
            {**json.loads(call.body()), **self.arguments}
            if self.input_template is None
            else _filled(self.input_template, call.data)
        )
        env = {"ORCHESTRA_EVENT": call.event, "ORCHESTRA_PROJECT_DIR": call.project_dir}
        if self.skill_dir:
            env["SKILL_DIR"] = self.skill_dir
        return await call_mcp_tool(
            server=McpServer(
                command=server.command,
                args=server.args,
                env={**env, **dict(server.env)},
                cwd=server.cwd or call.project_dir,
            ),
            tool=self.tool,
            arguments=arguments,
            timeout=self.timeout,
            strict_output=self.strict_output,
            read_text=_claude_text(self.event) if self.claude_code else None,
        )


_PATH_REF: Final = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_.]*)\}")


def _claude_text(event: str) -> Callable[[bytes], HookResult]:
    """How a Claude Code source reads a tool's text: as a command hook's stdout (exit 0)."""
    from orchestra.skills._hooks.claude_output import claude_reader

    read = claude_reader(event)
    return lambda text: read(0, text, "")


def _lookup(data: Mapping[str, Any], path: str) -> str:
    value: Any = data
    for part in path.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value)


def _filled(template: Any, data: Mapping[str, Any]) -> Any:
    """``template`` with each ``${path}`` in its strings replaced from ``data``."""
    if isinstance(template, str):
        return _PATH_REF.sub(lambda match: _lookup(data, match.group(1)), template)
    if isinstance(template, Mapping):
        return {key: _filled(value, data) for key, value in template.items()}
    if isinstance(template, list):
        return [_filled(value, data) for value in template]
    return template


def _server(entry: Entry) -> McpServerSpec | None:
    raw = entry.get("server")
    if raw is None:
        entry.bad("server", "missing")
        return None
    if isinstance(raw, str) and raw.strip():
        try:
            argv = shlex.split(raw)
        except ValueError as exc:
            entry.bad("server", f"cannot split the command line: {exc}")
            return None
        return McpServerSpec(command=argv[0], args=tuple(argv[1:]))
    server = entry.options("server", _SERVER_FIELDS, "a command line or a mapping")
    if server is None:
        return None
    command = server.string("command", required=True)
    cwd = server.string("cwd", required=False)
    args = server.strings("args")
    env = server.string_map("env")
    if command is None:
        return None
    return McpServerSpec(command=command, args=args, env=env, cwd=cwd)
