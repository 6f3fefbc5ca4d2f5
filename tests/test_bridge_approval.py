"""``orchestra.bridge.resume`` and ``ToolHooks.resume``: a person's answer, checked once.

Real registries (an ``ask`` permission hook, a command hook that denies any input naming
``prod``), both drivers (async and sync) answering alike.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

import orchestra.skills
from orchestra.bridge import (
    Approval,
    Ask,
    Proceed,
    Refuse,
    ToolCall,
    ToolHooks,
    args_sha256,
    resume,
)
from orchestra.bridge.testing import check_pending_request

pytestmark = pytest.mark.anyio

DENY_PROD = {"type": "command", "command": "grep -q prod && { echo 'not prod' >&2; exit 2; }; true"}


def guarded(tmp_path: Path) -> ToolHooks:
    hooks = {
        "PreToolUse": [
            {"matcher": "deploy", "hooks": [DENY_PROD]},
            {"matcher": "deploy", "hooks": [{"type": "permission", "decision": "ask"}]},
        ]
    }
    path = tmp_path / "orchestra.yaml"
    path.write_text(json.dumps({"hooks": hooks}))
    return ToolHooks(orchestra.skills.load(path, project_dir=tmp_path))


async def paused(hooks: ToolHooks, call: ToolCall) -> dict[str, Any]:
    answer = await hooks.pre(call, can_pause=True)
    assert isinstance(answer, Ask)
    return answer.request(call)


async def both(hooks: ToolHooks, call: ToolCall, approval: Approval) -> Any:
    answer = await hooks.resume(call, approval, can_pause=True)
    synced = await anyio.to_thread.run_sync(
        lambda: hooks.resume_sync(call, approval, can_pause=True)
    )
    assert type(synced) is type(answer)
    if not isinstance(answer, Ask):
        assert synced == answer
    return answer


async def test_approve_runs_the_pending_input(tmp_path: Path) -> None:
    hooks = guarded(tmp_path)
    call = ToolCall("deploy", {"env": "staging"}, tool_use_id="c1")
    pending = await paused(hooks, call)
    assert pending["args_sha256"] == args_sha256({"env": "staging"})
    approval = resume(pending, {"decision": "approve", "args_sha256": pending["args_sha256"]})
    assert approval == Approval("approve", tool_input={"env": "staging"})
    assert await both(hooks, call, approval) == Proceed({"env": "staging"})


async def test_deny_is_a_refusal_with_the_persons_reason(tmp_path: Path) -> None:
    hooks = guarded(tmp_path)
    call = ToolCall("deploy", {"env": "staging"})
    pending = await paused(hooks, call)
    answer = await both(hooks, call, resume(pending, {"decision": "deny", "reason": "not today"}))
    assert answer == Refuse("not today")
    assert answer.message == "Tool call denied: not today"
    plain = await both(hooks, call, resume(pending, {"decision": "deny"}))
    assert plain == Refuse("denied by a person")


async def test_an_edit_is_judged_again_by_every_guard(tmp_path: Path) -> None:
    hooks = guarded(tmp_path)
    call = ToolCall("deploy", {"env": "staging"})
    pending = await paused(hooks, call)
    to_prod = resume(pending, {"decision": "edit", "tool_input": {"env": "prod"}})
    assert to_prod == Approval("edit", tool_input={"env": "prod"})
    refused = await both(hooks, call, to_prod)
    assert isinstance(refused, Refuse)
    assert "not prod" in refused.reason
    # an edit that goes through is the tool's new input: modified, whatever the hooks did
    qa = ToolCall("deploy", {"env": "qa"}, approved=True)
    assert await both(hooks, qa, resume(pending, {"decision": "approve"})) == Proceed(
        {"env": "staging"}, modified=True
    )
    # an edit the deny guard lets through still meets the ask guard: it asks again
    again = await both(
        hooks, call, resume(pending, {"decision": "edit", "tool_input": {"env": "qa"}})
    )
    assert isinstance(again, Ask)
    assert again.request(call)["args_sha256"] == args_sha256({"env": "qa"})


async def test_an_answer_for_another_call_is_refused(tmp_path: Path) -> None:
    hooks = guarded(tmp_path)
    call = ToolCall("deploy", {"env": "staging"})
    pending = await paused(hooks, call)
    other = args_sha256({"env": "prod"})
    approval = resume(pending, {"decision": "approve", "args_sha256": other})
    assert approval.decision == "deny"
    assert approval.reason is not None
    assert other in approval.reason
    assert pending["args_sha256"] in approval.reason
    answer = await both(hooks, call, approval)
    assert isinstance(answer, Refuse)
    assert "is not the pending call's" in answer.message


@pytest.mark.parametrize(
    ("answer", "says"),
    [
        ({"decision": "yes"}, "unknown decision 'yes'"),
        ({}, "unknown decision None"),
        ({"decision": "edit"}, "an edit needs a 'tool_input' mapping"),
        ({"decision": "edit", "tool_input": "rm"}, "an edit needs a 'tool_input' mapping"),
        ("approve", "an answer is a mapping"),
    ],
)
def test_a_bad_answer_is_a_clear_error(answer: Any, says: str) -> None:
    pending = {"tool_name": "t", "tool_input": {}, "args_sha256": args_sha256({})}
    with pytest.raises(ValueError, match=says):
        resume(pending, answer)


def test_a_changed_pending_request_is_a_clear_error() -> None:
    pending = {"tool_name": "t", "tool_input": {"a": 2}, "args_sha256": args_sha256({"a": 1})}
    with pytest.raises(ValueError, match="changed after the call paused"):
        resume(pending, {"decision": "approve"})
    with pytest.raises(ValueError, match="not a pending request"):
        resume({"tool_name": "t"}, {"decision": "approve"})


def test_check_pending_request_names_what_differs() -> None:
    good = {
        "tool_name": "t",
        "tool_input": {"a": 1},
        "reason": "r",
        "hook_id": "h",
        "args_sha256": args_sha256({"a": 1}),
    }
    check_pending_request(good, tool_name="t", tool_input={"a": 1}, reason="r")
    with pytest.raises(AssertionError, match=r"args_sha256 is .*; hook_id is None"):
        check_pending_request(
            {**good, "args_sha256": "x", "hook_id": None},
            tool_name="t",
            tool_input={"a": 1},
            reason="r",
        )
    with pytest.raises(AssertionError, match="fields"):
        check_pending_request({**good, "extra": 1}, tool_name="t", tool_input={"a": 1}, reason="r")
