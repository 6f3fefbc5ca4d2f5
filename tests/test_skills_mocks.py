"""Mocks: a ``PreToolUse`` ``output`` answers the call; the first one in config order wins.

As the lobehub runtime's ``mock()`` on before-tool-call: the first accepted mock wins, and
the after-tool event still fires, with ``mocked: true``. Real command hooks throughout.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from orchestra.skills import HookRegistry, load, post_tool_use_payload

pytestmark = pytest.mark.anyio

# Appends the event JSON, one line each, to events.jsonl in the project folder.
RECORD = 'line=$(cat); printf "%s\\n" "$line" >> events.jsonl'


def registry(tmp_path: Path, hooks: dict[str, Any]) -> HookRegistry:
    """A registry loaded from an ``orchestra.yaml`` of ``hooks`` (YAML's JSON form)."""
    path = tmp_path / "orchestra.yaml"
    path.write_text(json.dumps({"hooks": hooks}, indent=2))
    return load(path, project_dir=tmp_path)


def command(line: str) -> dict[str, str]:
    return {"type": "command", "command": line}


def recorded(tmp_path: Path) -> list[dict[str, Any]]:
    path = tmp_path / "events.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def answer(output: object) -> dict[str, str]:
    """A command hook that answers ``output``."""
    return command(f"echo '{json.dumps({'output': output})}'")


async def test_the_first_mock_in_config_order_wins(tmp_path: Path) -> None:
    reg = registry(
        tmp_path,
        {
            "PreToolUse": [
                {"matcher": "Search", "hooks": [answer("first"), answer("second")]},
                {"hooks": [answer("third")]},
            ]
        },
    )
    outcome = await reg.fire("PreToolUse", {"tool_name": "Search", "tool_input": {}})
    assert outcome.output == "first"
    first, second, third = outcome.records
    assert first.note is None
    ignored = f"output ignored: the mock of {first.hook.source} came first"
    assert second.note == third.note == ignored


async def test_a_mock_after_a_hook_without_one_still_counts(tmp_path: Path) -> None:
    hooks = [command("exit 0"), answer({"rows": 1})]
    reg = registry(tmp_path, {"PreToolUse": [{"hooks": hooks}]})
    outcome = await reg.fire("PreToolUse", {"tool_name": "Search", "tool_input": {}})
    assert outcome.output == {"rows": 1}
    assert [record.note for record in outcome.records] == [None, None]


async def test_a_deny_after_a_mock_still_blocks(tmp_path: Path) -> None:
    deny = {"type": "permission", "decision": "deny", "reason": "not today"}
    reg = registry(tmp_path, {"PreToolUse": [{"hooks": [answer("cached"), deny]}]})
    outcome = await reg.fire("PreToolUse", {"tool_name": "Search", "tool_input": {}})
    assert outcome.blocked
    assert outcome.output is None
    assert outcome.reason == "not today"


async def test_post_tool_use_rewrites_keep_the_last_in_config_order(tmp_path: Path) -> None:
    hooks = [answer("first rewrite"), answer("last rewrite")]
    reg = registry(tmp_path, {"PostToolUse": [{"hooks": hooks}]})
    payload = {"tool_name": "Search", "tool_input": {}, "tool_response": "raw"}
    outcome = await reg.fire("PostToolUse", payload)
    assert outcome.output == "last rewrite"
    assert [record.note for record in outcome.records] == [None, None]


async def test_a_guarded_mock_fires_post_tool_use_with_mocked_true(tmp_path: Path) -> None:
    reg = registry(
        tmp_path,
        {
            "PreToolUse": [
                {"matcher": "Cached", "hooks": [answer("from the cache"), answer("ignored")]}
            ],
            "PostToolUse": [{"hooks": [command(RECORD)]}],
        },
    )
    calls: list[str] = []

    @reg.guard("Cached")
    async def cached(key: str) -> str:
        calls.append(key)
        return "computed"

    @reg.guard("Fresh")
    async def fresh(key: str) -> str:
        calls.append(key)
        return "computed"

    assert await cached("k") == "from the cache"
    assert await fresh("f") == "computed"
    assert calls == ["f"]  # the mock answered: the tool was not called
    mocked, plain = recorded(tmp_path)
    assert mocked["hook_event_name"] == "PostToolUse"
    assert (mocked["tool_name"], mocked["tool_input"]) == ("Cached", {"key": "k"})
    assert mocked["tool_response"] == "from the cache"
    assert mocked["mocked"] is True
    assert plain["tool_response"] == "computed"
    assert "mocked" not in plain  # the field is there only for a mock


async def test_a_post_tool_use_rewrite_applies_to_a_mock(tmp_path: Path) -> None:
    reg = registry(
        tmp_path,
        {
            "PreToolUse": [{"hooks": [answer({"rows": [1, 2]})]}],
            "PostToolUse": [{"hooks": [answer({"rows": "redacted"})]}],
        },
    )

    @reg.guard("Query")
    async def query() -> dict[str, Any]:
        raise AssertionError("a mocked tool is not called")

    assert await query() == {"rows": "redacted"}


def test_a_guarded_sync_mock_fires_post_tool_use_from_sync_code(tmp_path: Path) -> None:
    reg = registry(
        tmp_path,
        {
            "PreToolUse": [{"hooks": [answer("mocked")]}],
            "PostToolUse": [{"hooks": [command(RECORD)]}],
        },
    )

    @reg.guard("Tool")
    def tool() -> str:
        raise AssertionError("a mocked tool is not called")

    assert tool() == "mocked"
    (event,) = recorded(tmp_path)
    assert (event["tool_response"], event["mocked"]) == ("mocked", True)


def test_post_tool_use_payload_says_mocked_only_for_a_mock() -> None:
    fields = {"tool_name": "Search", "tool_input": {"q": "x"}, "tool_use_id": "toolu_1"}
    assert post_tool_use_payload(fields, "raw") == {**fields, "tool_response": "raw"}
    assert post_tool_use_payload(fields, "mock", mocked=True) == {
        **fields,
        "tool_response": "mock",
        "mocked": True,
    }
    assert "tool_response" not in fields  # the caller's fields are left alone
