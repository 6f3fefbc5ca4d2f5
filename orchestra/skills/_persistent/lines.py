"""A persistent hook's lines: the event line it is sent, the answer lines it reads."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any, Final

import attrs

from orchestra.skills._protocol.call import event_json
from orchestra.skills._protocol.result import NO_OPINION, HookResult, HookRunError, result_from_json

if TYPE_CHECKING:
    from orchestra.skills._protocol.call import HookCall

__all__ = ["answer_result", "clip", "decode", "event_line", "parse_answer", "why"]

_DECODER: Final = json.JSONDecoder()
_JSON_SPACE: Final = re.compile(r"[ \t\n\r]*")  # what JSON calls whitespace


def event_line(call: HookCall, key: int) -> bytes:
    """The event JSON with ``"id": key`` last, on one line (the encoded event reused)."""
    data = call.data
    if not data or "id" in data:  # the event's id replaces the payload's own
        return event_json({**data, "id": key}) + b"\n"
    return b'%s, "id": %d}\n' % (call.body()[:-1], key)


def decode(line: bytes) -> object:
    """One answer line, decoded as ``json.loads`` does (an empty line: ``{}``).

    A line that starts with ``{`` (nearly all) is UTF-8: it skips ``json.loads``'s
    encoding detection and leading whitespace (``JSONDecoder.raw_decode``, public API).

    Raises:
        UnicodeDecodeError, json.JSONDecodeError, RecursionError: as ``json.loads``.
    """
    if line[:1] != b"{":
        return json.loads(line) if line.strip() else {}
    text = line.decode()
    data, end = _DECODER.raw_decode(text)
    if end != len(text):
        space = _JSON_SPACE.match(text, end)  # always matches (maybe nothing)
        end = space.end() if space else end
        if end != len(text):
            raise json.JSONDecodeError("Extra data", text, end)
    return data


def why(exc: Exception) -> str:
    """What is wrong with an answer line that does not decode, in a few words."""
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg} at column {exc.colno}"
    if isinstance(exc, UnicodeDecodeError):
        return "not UTF-8"
    return "nested too deeply"


def clip(line: bytes, size: int = 200) -> str:
    """An answer line as text for a message, cut at ``size`` characters."""
    text = line.decode("utf-8", "replace")
    return text if len(text) <= size else text[:size] + "..."


def parse_answer(line: bytes) -> tuple[Any, dict[str, Any]]:
    """One answer line: its ``id`` (None without one) and the rest of the object.

    Raises:
        ValueError: the line is not a JSON object (the message says why, and shows it).
    """
    try:
        data = decode(line)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise ValueError(f"invalid JSON output: {why(exc)}: {clip(line)}") from None
    if not isinstance(data, dict):
        raise ValueError(f"invalid JSON output: expected an object: {clip(line)}")
    return data.pop("id", None), data


def answer_result(
    data: dict[str, Any], *, strict: bool, stderr: str
) -> tuple[HookResult | None, HookRunError | None]:
    """What an answer (without its ``id``) says: (its result, None) or (None, its error).

    ``{"error": ...}`` and a result of the wrong shape fail the event, not the process.
    """
    error = data.pop("error", None)
    if error is not None:
        text = error if isinstance(error, str) else json.dumps(error)
        return None, HookRunError(f"answered an error: {text}", stderr=stderr)
    try:
        result = result_from_json(data, strict=strict) if data else NO_OPINION
    except HookRunError as exc:
        return None, HookRunError(str(exc), stderr=stderr)
    return (attrs.evolve(result, stderr=stderr) if stderr else result), None
