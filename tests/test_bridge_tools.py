"""``orchestra.bridge``'s tool-call protocol: one meaning per answer, two thin drivers.

The flows are driven here with real registries (``permission`` and ``python`` hooks loaded
from an ``orchestra.yaml``), once through the async driver and once through the sync one,
and must answer alike; the ambient policy follows tasks and never leaks to siblings.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import anyio
import pytest

import orchestra.skills
from orchestra import ToolDenied
from orchestra.bridge import (
    Ask,
    Fire,
    Mock,
    Proceed,
    Raise,
    Refuse,
    ToolCall,
    ToolHooks,
    args_sha256,
    current_policy,
    policy_scope,
    pre_flow,
    resolve_policy,
)

pytestmark = pytest.mark.anyio


def registry(tmp_path: Path, hooks: dict[str, Any]) -> orchestra.skills.HookRegistry:
    path = tmp_path / "orchestra.yaml"
    path.write_text(json.dumps({"hooks": hooks}))
    return orchestra.skills.load(path, project_dir=tmp_path)


def permission(matcher: str, decision: str, reason: str | None = None) -> dict[str, Any]:
    hook: dict[str, Any] = {"type": "permission", "decision": decision}
    if reason is not None:
        hook["reason"] = reason
    return {"matcher": matcher, "hooks": [hook]}


async def both(hooks: ToolHooks, call: ToolCall, **options: Any) -> Any:
    """The async driver's answer, checked equal to the sync driver's."""
    answer = await hooks.pre(call, **options)
    synced = await anyio.to_thread.run_sync(lambda: hooks.pre_sync(call, **options))
    assert synced == answer
    return answer


async def test_a_deny_is_one_refusal_with_the_hooks_reason(tmp_path: Path) -> None:
    hooks = ToolHooks(registry(tmp_path, {"PreToolUse": [permission("rm", "deny", "no rm")]}))
    assert await both(hooks, ToolCall("rm", {"path": "/"})) == Refuse("no rm")
    assert await both(hooks, ToolCall("ls")) == Proceed({})


async def test_a_deny_without_reason_names_the_hook(tmp_path: Path) -> None:
    hooks = ToolHooks(registry(tmp_path, {"PreToolUse": [permission("rm", "deny")]}))
    answer = await both(hooks, ToolCall("rm"))
    assert isinstance(answer, Refuse)
    assert answer.reason.startswith("denied by a PreToolUse hook at ")
    assert "orchestra.yaml" in answer.reason
    assert answer.message == f"Tool call denied: {answer.reason}"


async def test_permission_denied_retry_is_kept(tmp_path: Path) -> None:
    reg = registry(
        tmp_path,
        {
            "PreToolUse": [permission("rm", "deny", "not now")],
            "PermissionDenied": [
                {"hooks": [{"type": "command", "command": "echo '{\"retry\": true}'"}]}
            ],
        },
    )
    answer = await both(ToolHooks(reg), ToolCall("rm"))
    assert answer == Refuse("not now", retry=True)
    assert answer.message == "Tool call denied: not now (you may try the call again)"


async def test_an_ask_pauses_only_where_the_engine_can(tmp_path: Path) -> None:
    reg = registry(tmp_path, {"PreToolUse": [permission("deploy", "ask", "a person decides")]})
    call = ToolCall("deploy", {"env": "prod", "n": 1}, tool_use_id="c1")
    paused = await both(ToolHooks(reg), call, can_pause=True)
    assert isinstance(paused, Ask)
    digest = hashlib.sha256(b'{"env":"prod","n":1}').hexdigest()
    assert paused.request(call) == {
        "tool_name": "deploy",
        "tool_input": {"env": "prod", "n": 1},
        "reason": "a person decides",
        "hook_id": paused.hook_id,
        "args_sha256": digest,
    }
    assert paused.hook_id
    assert await both(ToolHooks(reg), call) == Refuse("a person decides")
    approved = ToolCall("deploy", {"env": "prod"}, approved=True)
    assert await both(ToolHooks(reg), approved, can_pause=True) == Proceed({"env": "prod"})


async def test_the_ask_callback_settles_an_ask(tmp_path: Path) -> None:
    reg = registry(tmp_path, {"PreToolUse": [permission("deploy", "ask")]})
    seen: list[tuple[str, dict[str, Any], str | None]] = []

    async def no(tool: str, tool_input: Any, reason: str | None) -> bool:
        seen.append((tool, dict(tool_input), reason))
        return False

    answer = await ToolHooks(reg, ask=no).pre(ToolCall("deploy", {"x": 1}))
    assert isinstance(answer, Refuse)
    assert answer.reason.startswith("needs approval (")
    assert seen == [("deploy", {"x": 1}, None)]
    yes = ToolHooks(reg, ask=lambda *_: True)
    assert await both(yes, ToolCall("deploy", {"x": 1})) == Proceed({"x": 1})
    undecided = ToolHooks(reg, ask=lambda *_: None)
    assert isinstance(await both(undecided, ToolCall("deploy"), can_pause=True), Ask)


async def test_rewrite_mock_post_and_failure(tmp_path: Path) -> None:
    rewrite = 'echo \'{"modified_input": {"path": "/sandbox/x"}}\''
    reg = registry(
        tmp_path,
        {
            "PreToolUse": [
                {"matcher": "write", "hooks": [{"type": "command", "command": rewrite}]},
                {
                    "matcher": "search",
                    "hooks": [{"type": "command", "command": 'echo \'{"output": "cached"}\''}],
                },
            ],
            "PostToolUse": [{"hooks": [{"type": "command", "command": "cat >> post.jsonl; echo"}]}],
            "PostToolUseFailure": [
                {"hooks": [{"type": "command", "command": "cat >> failed.jsonl; echo"}]}
            ],
        },
    )
    hooks = ToolHooks(reg)
    write = ToolCall("write", {"path": "x"})
    assert await both(hooks, write) == Proceed({"path": "/sandbox/x"}, modified=True)
    assert await both(hooks, ToolCall("search")) == Mock("cached")
    assert await hooks.post(ToolCall("search"), "cached", mocked=True) == "cached"
    error = ValueError("boom")
    assert await hooks.failed(write, error) == Raise(error)
    denied = ToolDenied("inner", "inner said no", retry=True)
    assert await hooks.failed(write, denied) == Refuse("inner said no", retry=True)
    posts = [json.loads(line) for line in (tmp_path / "post.jsonl").read_text().splitlines()]
    assert [p.get("mocked") for p in posts] == [True]
    failures = (tmp_path / "failed.jsonl").read_text().splitlines()
    assert len(failures) == 1  # the nested guard's refusal is no failure
    assert json.loads(failures[0])["error_type"] == "ValueError"


def test_the_flow_has_no_io() -> None:
    """A flow can be driven by hand: it yields what to fire and takes the outcome."""
    flow = pre_flow(ToolCall("x", {"a": 1}), denied_hooks=False, consult=False, can_pause=False)
    effect = next(flow)
    assert isinstance(effect, Fire)
    assert effect.event == "PreToolUse"
    assert effect.payload["tool_input"] == {"a": 1}
    outcome = orchestra.skills.HookOutcome(decision="deny", blocked=True, reason="no")
    with pytest.raises(StopIteration) as stop:
        flow.send(outcome)
    assert stop.value.value == Refuse("no")


def test_args_sha256_is_canonical() -> None:
    assert args_sha256({"b": [1, "é"], "a": None}) == args_sha256({"a": None, "b": [1, "é"]})
    assert args_sha256({"a": 1}) != args_sha256({"a": 2})


def test_no_registry_watches_nothing() -> None:
    hooks = ToolHooks(None)
    assert not hooks.watching
    assert hooks.pre_sync(ToolCall("x", {"a": 1})) == Proceed({"a": 1})


async def test_the_ambient_policy_follows_tasks_and_stays_in_its_scope(tmp_path: Path) -> None:
    reg = registry(tmp_path, {})
    seen: list[object] = []

    async def child() -> None:
        seen.append(resolve_policy().registry)
        seen.append(resolve_policy(hooks=["own"]).hooks)

    assert current_policy().empty
    with policy_scope(reg, ["outer"]) as policy:
        assert current_policy() is policy
        async with anyio.create_task_group() as tg:
            tg.start_soon(child)
        with policy_scope(hooks=["inner"]):
            assert current_policy().registry is reg  # each part resolves on its own
            assert current_policy().hooks == ("inner",)
    assert current_policy().empty
    assert seen == [reg, ("own",)]
