"""parse_result: our result JSON and Claude Code's, and everything that is neither."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orchestra.skills._protocol.result import HookResult, HookRunError, parse_result


def parse(data: Any, *, strict: bool = False) -> HookResult:
    return parse_result(json.dumps(data).encode(), strict=strict)


@pytest.mark.parametrize("stdout", [b"", b"  \n\t", b"\n"])
def test_empty_is_no_opinion(stdout: bytes) -> None:
    assert parse_result(stdout) == HookResult()


def test_our_fields() -> None:
    data = {
        "decision": "ask",
        "reason": "touches prod",
        "modified_input": {"command": "ls"},
        "message": "asked",
    }
    assert parse(data, strict=True) == HookResult(
        decision="ask",
        reason="touches prod",
        modified_input={"command": "ls"},
        messages=("asked",),
    )


@pytest.mark.parametrize("decision", ["allow", "deny", "ask", "block"])
def test_each_decision(decision: str) -> None:
    assert parse({"decision": decision}).decision == decision


def test_nulls_are_absent() -> None:
    data = {"decision": None, "reason": None, "modified_input": None, "message": None}
    assert parse(data, strict=True) == HookResult()


CLAUDE_CODE = [
    (
        {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny"}},
        HookResult(decision="deny"),
    ),
    (
        {
            "hookSpecificOutput": {
                "permissionDecision": "ask",
                "permissionDecisionReason": "confirm",
                "updatedInput": {"path": "/tmp/x"},
            }
        },
        HookResult(decision="ask", reason="confirm", modified_input={"path": "/tmp/x"}),
    ),
    (
        {"hookSpecificOutput": {"permissionDecision": "defer"}},
        HookResult(),
    ),
    (
        {"decision": "approve", "reason": "old shape"},
        HookResult(decision="allow", reason="old shape"),
    ),
    (
        {"decision": "block", "reason": "lint failed"},
        HookResult(decision="block", reason="lint failed"),
    ),
    (
        {
            "hookSpecificOutput": {
                "hookEventName": "SessionStart",
                "additionalContext": "branch: main",
            },
            "systemMessage": "welcome",
        },
        HookResult(messages=("branch: main",), system_message="welcome"),
    ),
    (
        {"continue": False, "stopReason": "done", "suppressOutput": True},
        HookResult(stop=True, stop_reason="done"),
    ),
    (
        {"continue": True},
        HookResult(),
    ),
    (
        {
            "hookSpecificOutput": {
                "hookEventName": "PermissionRequest",
                "decision": {"behavior": "deny", "message": "no network", "interrupt": True},
            }
        },
        # interrupt: "for deny only: if true, stops Claude"
        HookResult(decision="deny", reason="no network", stop=True, stop_reason="no network"),
    ),
    (
        {
            "hookSpecificOutput": {
                "hookEventName": "PermissionRequest",
                "decision": {"behavior": "allow", "updatedInput": {"url": "https://a"}},
            }
        },
        HookResult(decision="allow", modified_input={"url": "https://a"}),
    ),
]


@pytest.mark.parametrize(("data", "expected"), CLAUDE_CODE)
def test_claude_code_shapes(data: dict[str, Any], expected: HookResult) -> None:
    assert parse(data, strict=True) == expected


def test_the_strictest_of_several_decisions_wins() -> None:
    data = {"decision": "allow", "hookSpecificOutput": {"permissionDecision": "deny"}}
    assert parse(data).decision == "deny"
    data = {"decision": "ask", "hookSpecificOutput": {"permissionDecision": "allow"}}
    assert parse(data).decision == "ask"


def test_disagreeing_inputs_are_an_error() -> None:
    data = {"modified_input": {"a": 1}, "hookSpecificOutput": {"updatedInput": {"a": 2}}}
    with pytest.raises(HookRunError, match="modified_input and updatedInput disagree"):
        parse(data)
    same = {"modified_input": {"a": 1}, "hookSpecificOutput": {"updatedInput": {"a": 1}}}
    assert parse(same).modified_input == {"a": 1}


@pytest.mark.parametrize(
    ("stdout", "message"),
    [
        (b"{", "invalid JSON output: Expecting property name enclosed in double quotes"),
        (b"[]", "invalid JSON output: expected an object, got an array"),
        (b"null", "invalid JSON output: expected an object, got null"),
        (b"3", "invalid JSON output: expected an object, got a number"),
        (b'{"a": 1} {"b": 2}', "invalid JSON output: Extra data"),
        (b'{"a": 1}\ngarbage', "invalid JSON output: Extra data"),
        (b'{"reason": "\xff"}', "invalid JSON output: not UTF-8"),
        (b"[" * 100_000 + b"]" * 100_000, "invalid JSON output: nested too deeply"),
        (b'{"decision": "maybe"}', "invalid JSON output: decision must be one of"),
        (b'{"decision": true}', "invalid JSON output: decision must be one of"),
        (b'{"reason": 3}', "invalid JSON output: reason must be a string, got a number"),
        (b'{"message": ["a"]}', "invalid JSON output: message must be a string, got an array"),
        (b'{"modified_input": "x"}', "invalid JSON output: modified_input must be an object"),
        (b'{"continue": "no"}', "invalid JSON output: continue must be true or false"),
        (b'{"hookSpecificOutput": []}', "invalid JSON output: hookSpecificOutput must be"),
        (
            b'{"hookSpecificOutput": {"permissionDecision": "block"}}',
            "invalid JSON output: hookSpecificOutput.permissionDecision must be one of",
        ),
        (
            b'{"hookSpecificOutput": {"updatedInput": [1]}}',
            "invalid JSON output: hookSpecificOutput.updatedInput must be an object",
        ),
    ],
)
def test_what_is_not_a_result(stdout: bytes, message: str) -> None:
    with pytest.raises(HookRunError) as caught:
        parse_result(stdout)
    assert str(caught.value).startswith(message)


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"decison": "deny"}, "decison"),
        (
            {"hookSpecificOutput": {"permisionDecision": "deny"}},
            "hookSpecificOutput.permisionDecision",
        ),
        (
            {"hookSpecificOutput": {"decision": {"behaviour": "deny"}}},
            "hookSpecificOutput.decision.behaviour",
        ),
    ],
)
def test_strict_refuses_unknown_fields(data: dict[str, Any], field: str) -> None:
    assert parse(data) == HookResult()
    with pytest.raises(HookRunError, match=f"unknown field {field} "):
        parse(data, strict=True)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: st.lists(children) | st.dictionaries(st.text(), children),
    max_leaves=20,
)


def outcome(stdout: bytes, *, strict: bool = False) -> HookResult | HookRunError:
    try:
        return parse_result(stdout, strict=strict)
    except HookRunError as exc:
        return exc


@given(st.binary(max_size=200))
def test_any_bytes_give_a_result_or_a_hook_error(stdout: bytes) -> None:
    answer = outcome(stdout)
    assert isinstance(answer, HookResult) or str(answer).startswith("invalid JSON output: ")


@given(json_values.filter(lambda value: not isinstance(value, dict)))
def test_anything_but_an_object_is_a_hook_error(value: Any) -> None:
    with pytest.raises(HookRunError, match="expected an object"):
        parse(value)


@given(st.dictionaries(st.sampled_from(["decision", "reason", "message", "continue"]), json_values))
def test_known_fields_of_any_value_never_crash(data: dict[str, Any]) -> None:
    answer = outcome(json.dumps(data).encode(), strict=True)
    assert isinstance(answer, HookResult) or str(answer).startswith("invalid JSON output: ")
