"""The SDK's local tools that are not function tools, guarded with their real input (internal).

``ShellTool`` (local environment), ``LocalShellTool`` and ``ApplyPatchTool`` run on this
machine through an object the user hands the SDK (an executor, an editor); ``guard_agent``
gives each a copy whose executor or editor first asks the policy, with the call's real
input as the model sent it:

==================  ======================================================================
``ShellTool``       ``{"commands": [...], "command": "the commands, one a line",
                    "timeout_ms", "max_output_length"}``
``LocalShellTool``  ``{"command": "argv as a shell line", "argv": [...], "env",
                    "working_directory", "timeout_ms", "user"}``
``ApplyPatchTool``  ``{"type": "create_file" | "update_file" | "delete_file", "path",
                    "diff", "move_to"}``
==================  ======================================================================

A refusal (a deny, a block, an unsettled ``ask``) is what the model reads as that call's
output (``Tool call denied: {reason}``; ``ToolDenied`` with ``on_deny="raise"``) and the run
goes on; a mock output answers without the tool; ``PostToolUse`` sees the output and its
rewrite is what the model reads; ``PostToolUseFailure`` fires when the tool raised (a
``Refuse`` then answers the model, else the error goes on). A ``modified_input`` cannot be
mapped back onto these requests safely, so the call is refused with a reason saying so.
"""

from __future__ import annotations

import dataclasses
import inspect
import shlex
from collections.abc import Callable, Mapping
from typing import Any, Final, final

from agents import ApplyPatchTool, LocalShellTool, ShellTool

from orchestra.bridge import Mock, Proceed, Refuse
from orchestra_openai_agents._guard import ToolGuard, tool_call
from orchestra_openai_agents._state import state_for

__all__ = ["Gate", "Gated", "guard_local_tool", "is_guarded_local"]

_NO_REWRITE: Final = (
    "a PreToolUse hook rewrote the input of {kind}, whose request the bridge cannot "
    "rebuild; only function tools take rewritten input"
)


@final
class Gate:
    """One local tool's calls through the guard: ``PreToolUse``, the tool, ``PostToolUse``."""

    __slots__ = ("guard", "kind", "name")

    def __init__(self, guard: ToolGuard, name: str, kind: str) -> None:
        self.guard = guard
        self.name = name
        self.kind = kind

    async def call(
        self, context: Any, call_id: object, given: dict[str, Any], run: Callable[[], Any]
    ) -> Any:
        """Judge one call, run it (``run()``, maybe awaitable) if allowed; what the model reads."""
        state = state_for(context) if context is not None else None
        agent = state.agent.name if state is not None and state.agent is not None else None
        call = tool_call(self.name, given, call_id, agent_name=agent)
        tools = self.guard.tools
        answer = await tools.pre(call)
        if isinstance(answer, Proceed) and answer.modified:
            answer = await tools.refuse(call, _NO_REWRITE.format(kind=self.kind))
        if isinstance(answer, Refuse):
            return self.guard.deny(self.name, answer)
        if isinstance(answer, Mock):
            return await tools.post(call, answer.output, mocked=True)
        try:
            output = run()
            if inspect.isawaitable(output):
                output = await output
        except Exception as exc:
            failure = await tools.failed(call, exc)
            if isinstance(failure, Refuse):
                return self.guard.deny(self.name, failure)
            raise failure.error from None
        payload = _payload(output)
        judged = await tools.post(call, payload)
        return output if judged is payload else judged


def _payload(output: Any) -> Any:
    """What ``PostToolUse`` sees of an output (a dataclass result as its fields)."""
    if dataclasses.is_dataclass(output) and not isinstance(output, type):
        return dataclasses.asdict(output)
    return output


class Gated:
    """The user's object (an executor, an editor, a computer's maker) and the gate of its calls."""

    __slots__ = ("gate", "inner")

    def __init__(self, inner: Any, gate: Gate) -> None:
        self.inner = inner
        self.gate = gate


@final
class _Executor(Gated):
    """A ``ShellTool`` or ``LocalShellTool`` executor asking the guard first.

    ``describe`` reads the call's id and real input from the request's ``data``.
    """

    __slots__ = ("describe",)

    def __init__(
        self, inner: Any, gate: Gate, describe: Callable[[Any], tuple[object, dict[str, Any]]]
    ) -> None:
        super().__init__(inner, gate)
        self.describe = describe

    async def __call__(self, request: Any) -> Any:
        call_id, given = self.describe(request.data)
        return await self.gate.call(
            request.ctx_wrapper, call_id, given, lambda: self.inner(request)
        )


def _shell_input(data: Any) -> tuple[object, dict[str, Any]]:
    """A ``ShellTool`` call's id and input (``data.action.commands``)."""
    action = data.action
    commands = [str(c) for c in action.commands]
    return data.call_id, {
        "commands": commands,
        "command": "\n".join(commands),
        "timeout_ms": action.timeout_ms,
        "max_output_length": action.max_output_length,
    }


def _local_shell_input(data: Any) -> tuple[object, dict[str, Any]]:
    """A ``LocalShellTool`` call's id and input (``data.action``: argv, env, ...)."""
    action = data.action
    argv = [str(a) for a in action.command]
    return getattr(data, "call_id", None) or getattr(data, "id", None), {
        "command": shlex.join(argv),
        "argv": argv,
        "env": dict(action.env or {}),
        "working_directory": action.working_directory,
        "timeout_ms": action.timeout_ms,
        "user": action.user,
    }


@final
class _Editor(Gated):
    """An ``ApplyPatchTool`` editor asking the guard before each operation."""

    __slots__ = ()

    async def _edit(self, kind: str, operation: Any) -> Any:
        given = {
            "type": kind,
            "path": operation.path,
            "diff": operation.diff,
            "move_to": getattr(operation, "move_to", None),
        }
        method = getattr(self.inner, kind)
        return await self.gate.call(operation.ctx_wrapper, None, given, lambda: method(operation))

    async def create_file(self, operation: Any) -> Any:
        """Create a file, if the guard allows it."""
        return await self._edit("create_file", operation)

    async def update_file(self, operation: Any) -> Any:
        """Update a file, if the guard allows it."""
        return await self._edit("update_file", operation)

    async def delete_file(self, operation: Any) -> Any:
        """Delete a file, if the guard allows it."""
        return await self._edit("delete_file", operation)


def guard_local_tool(tool: Any, guard: ToolGuard) -> Any | None:
    """A copy of a local non-function tool whose calls go through ``guard``; None: not one."""
    if is_guarded_local(tool):
        return tool
    name = str(getattr(tool, "name", type(tool).__name__))
    if isinstance(tool, ShellTool):
        environment: Mapping[str, Any] = tool.environment or {}
        if environment.get("type", "local") != "local" or tool.executor is None:
            return None  # hosted: check_hosted decides
        gate = Gate(guard, name, "ShellTool")
        return dataclasses.replace(tool, executor=_Executor(tool.executor, gate, _shell_input))
    if isinstance(tool, LocalShellTool):
        gate = Gate(guard, name, "LocalShellTool")
        executor = _Executor(tool.executor, gate, _local_shell_input)
        return dataclasses.replace(tool, executor=executor)
    if isinstance(tool, ApplyPatchTool):
        gate = Gate(guard, name, "ApplyPatchTool")
        return dataclasses.replace(tool, editor=_Editor(tool.editor, gate))
    return None


def is_guarded_local(tool: object) -> bool:
    """Whether a local tool's executor or editor is this bridge's guarded one."""
    inner = getattr(tool, "executor", None) or getattr(tool, "editor", None)
    return isinstance(inner, _Executor | _Editor)
