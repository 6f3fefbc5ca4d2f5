"""A persistent hook's lines: the event line it is sent, the answer lines it reads."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orchestra.skills import HookResult
from orchestra.skills._hooks.spec import HookCall, event_json
from orchestra.skills._persistent.lines import decode as _decode
from orchestra.skills._persistent.lines import event_line as _event_line
from orchestra.skills._protocol.result import HookRunError, result_from_json

ANSWERS = [
    b'{"decision": "allow", "id": 1}',
    b'{"a": 1}  \r',
    b'{"a": 1}\t\n',
    b'{"a": 1} x',
    b'{"a": 1}  \t x',
    b'{"a": 1}{"b": 2}',
    b'{"a":1}\x0c',
    b"",
    b"  ",
    b' {"a": 1}',
    b"{",
    b'{"a": "\xff"}',
    b"[1]",
    b'"x"',
    '{"é": 1}'.encode(),
    b'\xef\xbb\xbf{"a": 1}',
    b'{"a": NaN}',
    b"{" * 100_000,
]


def outcome(decode: Any, line: bytes) -> tuple[str, object]:
    try:
        return "ok", decode(line)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        where = (exc.msg, exc.pos) if isinstance(exc, json.JSONDecodeError) else str(exc)
        return type(exc).__name__, where


@pytest.mark.parametrize("line", ANSWERS)
def test_an_answer_line_reads_as_json_loads_reads_it(line: bytes) -> None:
    # _decode skips json.loads's encoding detection for lines that start with "{", and
    # must read (or refuse, with the same message and place) exactly what it reads.
    expected = outcome(lambda raw: json.loads(raw) if raw.strip() else {}, line)
    assert outcome(_decode, line) == expected


# Small objects: what the encoding does to a character does not depend on how many others
# there are, and drawing large nested dictionaries of unique text keys took 30-50 s a test.
_KEYS = st.text(max_size=8)


@given(
    st.dictionaries(_KEYS, st.recursive(st.none() | st.text(), st.lists, max_leaves=8), max_size=6)
)
def test_the_event_line_is_the_event_json_with_its_id_last(data: dict[str, Any]) -> None:
    line = _event_line(HookCall("PreToolUse", data, "/"), 7)
    assert line == event_json({**data, "id": 7}) + b"\n"
    assert json.loads(line) == {**data, "id": 7}  # the payload's own id is replaced


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_KEYS, inner, max_size=4),
    max_leaves=12,
)


@given(st.dictionaries(_KEYS, JSON_VALUES, max_size=6))
def test_the_event_json_is_ascii_and_reads_back_as_the_event(data: dict[str, Any]) -> None:
    body = event_json(data)
    assert body.isascii()
    assert json.loads(body) == data


def test_bytes_and_sets_in_an_event_are_encoded_through_the_default() -> None:
    body = event_json({"b": b"caf\xc3\xa9", "s": {2, 1}, "f": frozenset({"x"})})
    assert json.loads(body) == {"b": "caf\u00e9", "s": [1, 2], "f": ["x"]}


def test_a_circular_event_fails_and_the_next_one_encodes() -> None:
    loop: dict[str, Any] = {"a": [1]}
    loop["self"] = loop
    with pytest.raises(ValueError, match="Circular reference"):
        event_json(loop)
    shared = {"b": 2}
    assert event_json({"x": shared, "y": [shared]}) == b'{"x": {"b": 2}, "y": [{"b": 2}]}'


@pytest.mark.parametrize(
    ("decision", "verdict"),
    [(d, d) for d in ("allow", "deny", "ask", "block")] + [("approve", "allow")],
)
def test_a_decision_alone_reads_as_the_whole_reading_does(decision: str, verdict: str) -> None:
    plain = result_from_json({"decision": decision})
    assert plain == HookResult(decision=verdict)  # type: ignore[arg-type]
    assert result_from_json({"decision": decision}, strict=True) is plain  # kept, shared
    assert result_from_json({"decision": decision, "reason": None}) == plain


@pytest.mark.parametrize("data", [{"decision": "maybe"}, {"decision": 1}, {"decision": ["x"]}])
def test_a_decision_alone_that_is_not_one_is_still_an_error(data: dict[str, Any]) -> None:
    with pytest.raises(HookRunError, match="invalid JSON output: decision must be one of"):
        result_from_json(data)
