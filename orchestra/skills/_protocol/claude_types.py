"""The types of Claude Code's output fields that orchestra reads but does not act on.

Claude Code checks a hook's JSON output against its schema and drops a field whose value
has the wrong type (a warning in ``--debug``) instead of delivering it; orchestra drops it
too and says so on the hook's record (``HookResult.ignored``). The fields:

==============================================  ======================================
field                                           type
==============================================  ======================================
``terminalSequence``                            a string
``hookSpecificOutput.sessionTitle``,            a string
``initialUserMessage``, ``classifierContext``
``hookSpecificOutput.watchPaths``               an array of strings
``hookSpecificOutput.reloadSkills``,            true or false
``suppressOriginalPrompt``
``hookSpecificOutput.action`` (Elicitation)     ``accept``, ``decline`` or ``cancel``
``hookSpecificOutput.content`` (Elicitation)    an object
``hookSpecificOutput.decision.updatedPermissions``  an array
==============================================  ======================================

An Elicitation hook's ``action`` and ``content`` are its answer: ``elicitation_answer``
gives them as the hook's ``output``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

__all__ = ["elicitation_answer", "wrong_types"]

_ACTIONS: Final = ("accept", "decline", "cancel")


def _strings(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _kind(value: object) -> str:
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}
    return "null" if value is None else names.get(type(value), "a number")


_Check = tuple[Callable[[object], bool], str]
_STRING: Final[_Check] = (lambda v: isinstance(v, str), "a string")
_FLAG: Final[_Check] = (lambda v: isinstance(v, bool), "true or false")
_SPECIFIC: Final[Mapping[str, _Check]] = {
    "sessionTitle": _STRING,
    "initialUserMessage": _STRING,
    "classifierContext": _STRING,
    "watchPaths": (_strings, "an array of strings"),
    "reloadSkills": _FLAG,
    "suppressOriginalPrompt": _FLAG,
    "action": (lambda v: v in _ACTIONS, " | ".join(_ACTIONS)),
    "content": (lambda v: isinstance(v, dict), "an object"),
}


def _checked(obj: Mapping[str, Any], checks: Mapping[str, _Check], where: str) -> list[str]:
    wrong = []
    for key, (ok, expected) in checks.items():
        value = obj.get(key)
        if value is not None and not ok(value):
            wrong.append(f"{where}{key} dropped: expected {expected}, got {_kind(value)}")
    return wrong


def wrong_types(data: Mapping[str, Any]) -> tuple[str, ...]:
    """The fields of the table above of the wrong type in ``data``, a hook's JSON output.

    Each is ``"field dropped: expected ..., got ..."``.
    """
    wrong = _checked(data, {"terminalSequence": _STRING}, "")
    specific = data.get("hookSpecificOutput")
    if isinstance(specific, dict):
        wrong += _checked(specific, _SPECIFIC, "hookSpecificOutput.")
        behavior = specific.get("decision")
        if isinstance(behavior, dict):
            permissions = {"updatedPermissions": (lambda v: isinstance(v, list), "an array")}
            wrong += _checked(behavior, permissions, "hookSpecificOutput.decision.")
    return tuple(wrong)


def elicitation_answer(specific: Mapping[str, Any]) -> dict[str, Any] | None:
    """An Elicitation hook's ``{"action", "content"}``, or None without a valid ``action``.

    A ``content`` of the wrong type is dropped (None).
    """
    action = specific.get("action")
    if action not in _ACTIONS:
        return None
    content = specific.get("content")
    return {"action": action, "content": content if isinstance(content, dict) else None}
