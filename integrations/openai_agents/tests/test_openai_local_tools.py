"""Shell, local shell and apply-patch tools: PreToolUse sees the call's real input (issue 42).

Before, the guard fired from ``on_tool_start`` with an empty ``tool_input``, so a hook
checking the command for ``rm -rf`` let it run. Scripted model, real SDK runs (``Runner.run``:
the scripted model cannot stream these calls without hand-written stream events).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from agents import Agent, ApplyPatchTool, LocalShellTool, ShellTool
from agents.testing import ScriptedModel, assistant_message
from bridge_helpers import events, log_hook, write_config
from openai.types.responses import ResponseApplyPatchToolCall, ResponseFunctionShellToolCall
from openai.types.responses.response_apply_patch_tool_call import OperationDeleteFile
from openai.types.responses.response_function_shell_tool_call import Action
from openai.types.responses.response_output_item import LocalShellCall, LocalShellCallAction
from orchestra_openai_agents import OrchestraRunHooks, is_guarded

pytestmark = pytest.mark.anyio

# A command hook that reads the call's input: it blocks a command containing "rm -rf".
NO_RM_RF = {
    "hooks": [
        {
            "type": "command",
            "command": "if grep -q 'rm -rf'; then echo 'no rm -rf here' >&2; exit 2; fi",
        }
    ]
}


def shell_call(call_id: str, *commands: str) -> ResponseFunctionShellToolCall:
    return ResponseFunctionShellToolCall(
        id=f"item-{call_id}",
        call_id=call_id,
        type="shell_call",
        status="completed",
        action=Action(commands=list(commands)),
    )


def outputs(model: ScriptedModel, kind: str) -> dict[str, Any]:
    """What the SDK sent back to the model for each call of ``kind``, by call id."""
    out: dict[str, Any] = {}
    for call in model.calls:
        for item in call.input if isinstance(call.input, list) else ():
            if isinstance(item, dict) and item.get("type") == kind:
                out[str(item["call_id"])] = item["output"]
    return out


async def test_a_shell_call_is_judged_on_its_commands_and_the_run_goes_on(
    tmp_path: Path,
) -> None:
    ran: list[list[str]] = []

    def executor(request: Any) -> str:
        ran.append(list(request.data.action.commands))
        return "ok"

    log = tmp_path / "events.jsonl"
    registry = write_config(tmp_path, {"PreToolUse": [log_hook(log), NO_RM_RF]})
    model = ScriptedModel(
        [
            [shell_call("s1", "rm -rf /var/data")],
            [shell_call("s2", "ls /var/data")],
            [assistant_message("listed instead")],
        ]
    )
    agent = Agent(name="ops", model=model, tools=[ShellTool(executor=executor)])
    result = await OrchestraRunHooks(registry=registry).run(agent, "clean up")

    assert ran == [["ls /var/data"]]  # the denied call never reached the executor
    read = outputs(model, "shell_call_output")
    assert read["s1"][0]["stdout"] == "Tool call denied: no rm -rf here"
    assert read["s2"][0]["stdout"] == "ok"
    assert result.final_output == "listed instead"
    seen = [e["tool_input"] for e in events(log)]
    assert seen[0]["command"] == "rm -rf /var/data"  # the real input, once per call
    assert [e["tool_use_id"] for e in events(log)] == ["s1", "s2"]


async def test_a_local_shell_call_is_judged_on_its_argv(tmp_path: Path) -> None:
    ran: list[list[str]] = []

    def executor(request: Any) -> str:
        ran.append(list(request.data.action.command))
        return "ok"

    registry = write_config(tmp_path, {"PreToolUse": [NO_RM_RF]})
    model = ScriptedModel(
        [
            [
                LocalShellCall(
                    id="item-l1",
                    call_id="l1",
                    type="local_shell_call",
                    status="completed",
                    action=LocalShellCallAction(command=["rm", "-rf", "/srv"], env={}, type="exec"),
                )
            ],
            [assistant_message("not allowed")],
        ]
    )
    agent = Agent(name="ops", model=model, tools=[LocalShellTool(executor=executor)])
    result = await OrchestraRunHooks(registry=registry).run(agent, "wipe /srv")

    assert ran == []
    assert outputs(model, "local_shell_call_output")["l1"] == "Tool call denied: no rm -rf here"
    assert result.final_output == "not allowed"


class Editor:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def create_file(self, operation: Any) -> str:
        self.calls.append(f"create {operation.path}")
        return "created"

    def update_file(self, operation: Any) -> str:
        self.calls.append(f"update {operation.path}")
        return "updated"

    def delete_file(self, operation: Any) -> str:
        self.calls.append(f"delete {operation.path}")
        return "deleted"


async def test_an_apply_patch_operation_is_judged_on_its_type_and_path(
    tmp_path: Path,
) -> None:
    no_delete = {
        "hooks": [
            {
                "type": "command",
                "command": "if grep -q delete_file; then echo 'keep files' >&2; exit 2; fi",
            }
        ]
    }
    log = tmp_path / "post.jsonl"
    registry = write_config(
        tmp_path, {"PreToolUse": [no_delete], "PermissionDenied": [log_hook(log)]}
    )
    editor = Editor()
    model = ScriptedModel(
        [
            [
                ResponseApplyPatchToolCall(
                    id="item-p1",
                    call_id="p1",
                    type="apply_patch_call",
                    status="completed",
                    operation=OperationDeleteFile(type="delete_file", path="README.md"),
                )
            ],
            [assistant_message("kept")],
        ]
    )
    agent = Agent(name="dev", model=model, tools=[ApplyPatchTool(editor=editor)])
    result = await OrchestraRunHooks(registry=registry).run(agent, "tidy")

    assert editor.calls == []
    assert "keep files" in str(outputs(model, "apply_patch_call_output")["p1"])
    assert result.final_output == "kept"
    [denied] = events(log)
    assert denied["tool_input"]["path"] == "README.md"


async def test_guarded_local_tools_report_guarded(tmp_path: Path) -> None:
    registry = write_config(tmp_path, {"PreToolUse": [NO_RM_RF]})
    bridge = OrchestraRunHooks(registry=registry)
    agent = Agent(
        name="ops",
        tools=[ShellTool(executor=lambda r: "ok"), ApplyPatchTool(editor=Editor())],
    )
    guarded = bridge.guard(agent)
    assert all(is_guarded(t) for t in guarded.tools)
    assert not any(is_guarded(t) for t in agent.tools)  # the user's agent is left as it is
