"""What a hook answers: ``HookResult``, ``HookRunError`` and ``parse_result``.

A command hook that exits 0 prints a JSON object on stdout (an http hook answers one in
its body, an MCP tool returns one). ``parse_result`` reads two shapes, so that hook
scripts written for Claude Code run unchanged:

=================================  ===========================================
ours                               Claude Code
=================================  ===========================================
``decision``: allow|deny|ask|block ``hookSpecificOutput.permissionDecision``
                                   (allow|deny|ask|defer), ``decision``:
                                   block|approve,
                                   ``hookSpecificOutput.decision.behavior``
``reason``                         ``permissionDecisionReason``, ``reason``,
                                   ``hookSpecificOutput.decision.message``
``modified_input``                 ``hookSpecificOutput.updatedInput``,
                                   ``hookSpecificOutput.decision.updatedInput``
``message``                        ``hookSpecificOutput.additionalContext``
``system_message``                 ``systemMessage`` (for the user, not the agent)
``output``                         ``hookSpecificOutput.updatedToolOutput``,
                                   ``updatedMCPToolOutput`` (a tool's output: a
                                   mock before the call, a rewrite after it),
                                   ``displayContent`` (MessageDisplay),
                                   ``worktreePath`` (WorktreeCreate)
``retry``                          ``hookSpecificOutput.retry`` (PermissionDenied)
(none)                             ``continue: false`` + ``stopReason``
=================================  ===========================================

Ours also has ``decision: skip``, which gives a DAG task up unrun (``AttemptStart``).
``suppressOutput`` and ``hookSpecificOutput.hookEventName`` are read and checked, and
change nothing. Claude Code's ``defer`` means no opinion (its reason, ``updatedInput``
and ``additionalContext`` ignored); ``interrupt: true`` with a PermissionRequest deny
stops, as ``continue: false``. When the output names several
decisions (``decision`` and ``permissionDecision``), the strictest wins:
deny/block > ask > allow.

Empty output (or only whitespace) is no opinion. Anything else that is not one JSON
object with fields of the right types (invalid JSON, an array, trailing junk, a
``decision`` of ``"maybe"``) is a ``HookRunError``, never an implicit allow; with
``strict=True`` an unknown field is one too.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final, Literal, TypeAlias, final

import attrs

from orchestra._errors import OrchestraError
from orchestra.skills._protocol.claude_types import elicitation_answer, wrong_types

__all__ = [
    "NO_OPINION",
    "OUTPUT_LIMIT",
    "PLAIN_RESULTS",
    "HookResult",
    "HookRunError",
    "HookVerdict",
    "parse_result",
    "result_from_json",
]

OUTPUT_LIMIT: Final = 1 << 20
"""The most output a hook may give (1 MiB): each of a command's stdout and stderr, an
http response body, an MCP tool's text; more is a ``HookRunError``."""

HookVerdict: TypeAlias = Literal["allow", "deny", "ask", "block", "skip"]
"""A decision a single hook can answer."""

# How strict each decision is, to pick one when an output names several.
_STRICTNESS: Final[dict[str, int]] = {"allow": 1, "skip": 2, "ask": 2, "deny": 3, "block": 3}

_TOP_FIELDS: Final = frozenset(
    {
        *("decision", "reason", "modified_input", "message", "system_message"),  # ours
        *("output", "retry"),
        *("continue", "stopReason", "suppressOutput", "systemMessage"),  # Claude Code's
        *("hookSpecificOutput", "terminalSequence"),
    }
)
# Where Claude Code's hookSpecificOutput gives a tool output (or a text, a path), first wins.
_OUTPUT_FIELDS: Final = (
    "updatedToolOutput",
    "updatedMCPToolOutput",
    "displayContent",
    "worktreePath",
)
_SPECIFIC_FIELDS: Final = frozenset(
    {
        *("hookEventName", "permissionDecision", "permissionDecisionReason", "updatedInput"),
        *("additionalContext", "decision", "retry", *_OUTPUT_FIELDS),
        *("sessionTitle", "initialUserMessage", "watchPaths", "reloadSkills"),
        *("suppressOriginalPrompt", "classifierContext", "action", "content"),
    }
)
_BEHAVIOR_FIELDS: Final = frozenset(
    {"behavior", "message", "updatedInput", "interrupt", "updatedPermissions"}
)


@final
@attrs.frozen
class HookResult:
    """The answer of one hook run.

    Attributes:
        decision: ``"allow"``, ``"deny"``, ``"ask"``, ``"block"``, ``"skip"`` (give the
            DAG task up unrun, on ``AttemptStart``), or None (no opinion).
        reason: why, as the hook said it (for exit 2, its stderr).
        modified_input: the input the hook wants the action to get instead, if any.
        messages: texts for the agent (our ``message``, Claude Code's
            ``additionalContext``).
        system_message: a text for the user, not the agent (``systemMessage``).
        output: a tool's output the hook gives: before the call a mock (the tool is not
            called), after it a rewrite of what the caller gets; None for none.
        retry: after a denial (``PermissionDenied``), the agent may try again.
        stop: the hook asked the agent to stop (Claude Code's ``continue: false``).
        stop_reason: the reason given with ``stop``.
        exit_code: the exit status of a command hook, None for other hook types.
        stderr: what a command hook wrote on stderr (at most 1 MiB), for debugging.
        final: the hook's own protocol ends the chain here (the graph executor's first
            ``block``): the hooks after it do not run, whatever the event.
        ignored: parts of the answer that count for nothing, each saying why (a Claude
            Code field of the wrong type, dropped as Claude Code drops it; a block of a
            change that cannot be blocked); the hook's record notes them.
    """

    decision: HookVerdict | None = None
    reason: str | None = None
    modified_input: Mapping[str, Any] | None = None
    messages: tuple[str, ...] = ()
    stop: bool = False
    stop_reason: str | None = None
    exit_code: int | None = None
    stderr: str = ""
    system_message: str | None = None
    output: Any = None
    retry: bool = False
    final: bool = False
    ignored: tuple[str, ...] = ()


@final
class HookRunError(OrchestraError, RuntimeError):
    """A hook that could not give an answer: it crashed, timed out or printed garbage.

    The message says which, and is distinct per cause: ``"could not start: ..."``,
    ``"exited 1"``, ``"killed by SIGKILL"``, ``"timed out after 5 s"``,
    ``"invalid JSON output: ..."``, ``"output over 1 MiB ..."``, ``"http ..."``,
    ``"mcp ..."``.

    Attributes:
        exit_code: the exit status of a command hook (negative: the signal that killed
            it), or the HTTP status of an http hook, when there is one.
        stderr: what a command hook wrote on stderr (at most 1 MiB).
        summary: the message without anything the hook itself wrote (a response body,
            a tool's text, a value of its output): what spans show unless content
            capture is on.
    """

    def __init__(
        self,
        message: str,
        *,
        exit_code: int | None = None,
        stderr: str = "",
        summary: str | None = None,
    ) -> None:
        super().__init__(message)
        self.exit_code = exit_code
        self.stderr = stderr
        self.summary = summary if summary is not None else message

    def again(self, *, exit_code: int | None = None, stderr: str = "") -> HookRunError:
        """The same error, with the exit code and stderr of the hook that gave it."""
        return HookRunError(str(self), exit_code=exit_code, stderr=stderr, summary=self.summary)


def _invalid(detail: str) -> HookRunError:
    return HookRunError(f"invalid JSON output: {detail}", summary="invalid JSON output")


def _kind(value: object) -> str:
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}
    if value is None:
        return "null"
    return names.get(type(value), "a number")


def _text(obj: Mapping[str, Any], key: str, where: str) -> str | None:
    value = obj.get(key)
    if value is None or isinstance(value, str):
        return value
    raise _invalid(f"{where}{key} must be a string, got {_kind(value)}")


def _flag(obj: Mapping[str, Any], key: str, where: str, default: bool) -> bool:
    value = obj.get(key)
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    raise _invalid(f"{where}{key} must be true or false, got {_kind(value)}")


def _object(obj: Mapping[str, Any], key: str, where: str) -> dict[str, Any] | None:
    value = obj.get(key)
    if value is None or isinstance(value, dict):
        return value
    raise _invalid(f"{where}{key} must be an object, got {_kind(value)}")


def _choice(
    obj: Mapping[str, Any], key: str, where: str, allowed: Mapping[str, HookVerdict | None]
) -> HookVerdict | None:
    value = obj.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or value not in allowed:
        expected = " | ".join(allowed)
        raise _invalid(f"{where}{key} must be one of {expected}, got {json.dumps(value)}")
    return allowed[value]


def _check_fields(obj: Mapping[str, Any], known: frozenset[str], where: str) -> None:
    unknown = sorted(set(obj) - known)
    if unknown:
        raise _invalid(f"unknown field {where}{unknown[0]} (strict_output)")


_OUR_DECISIONS: Final[dict[str, HookVerdict | None]] = {
    "allow": "allow",
    "deny": "deny",
    "ask": "ask",
    "block": "block",
    "skip": "skip",  # a DAG task's AttemptStart: the task ends SKIPPED
    "approve": "allow",  # Claude Code's older PreToolUse shape
}
_PERMISSION_DECISIONS: Final[dict[str, HookVerdict | None]] = {
    "allow": "allow",
    "deny": "deny",
    "ask": "ask",
    "defer": None,  # Claude Code: let the normal permission flow decide
}
_BEHAVIORS: Final[dict[str, HookVerdict | None]] = {"allow": "allow", "deny": "deny"}
# Where each shape puts its decision, its reason and its input change.
_OUR_KEYS: Final = ("decision", "reason", "modified_input")
_PERMISSION_KEYS: Final = ("permissionDecision", "permissionDecisionReason", "updatedInput")
_BEHAVIOR_KEYS: Final = ("behavior", "message", "updatedInput")


def _verdict(
    obj: Mapping[str, Any],
    where: str,
    keys: tuple[str, str, str],
    allowed: Mapping[str, HookVerdict | None],
) -> tuple[HookVerdict | None, str | None, dict[str, Any] | None]:  # a _Verdict
    """A decision, its reason and an input change, read from ``obj`` at ``keys``."""
    decision, reason, changed = keys
    return (
        _choice(obj, decision, where, allowed),
        _text(obj, reason, where),
        _object(obj, changed, where),
    )


_Verdict: TypeAlias = tuple[HookVerdict | None, str | None, dict[str, Any] | None]


def _read_specific(
    specific: Mapping[str, Any], strict: bool, verdicts: list[_Verdict], messages: list[str]
) -> bool:
    r"""Read Claude Code's ``hookSpecificOutput``; return whether a deny ``interrupt``\ s."""
    where = "hookSpecificOutput."
    if strict:
        _check_fields(specific, _SPECIFIC_FIELDS, where)
    _text(specific, "hookEventName", where)
    verdict = _verdict(specific, where, _PERMISSION_KEYS, _PERMISSION_DECISIONS)
    deferred = specific.get("permissionDecision") == "defer"  # its other fields: ignored
    verdicts.append((None, None, None) if deferred else verdict)
    context = _text(specific, "additionalContext", where)
    if context is not None and not deferred:
        messages.append(context)
    # PermissionRequest: {"decision": {"behavior": "allow" | "deny", "message": ..., ...}}
    behavior = _object(specific, "decision", where) or {}
    where = "hookSpecificOutput.decision."
    if strict:
        _check_fields(behavior, _BEHAVIOR_FIELDS, where)
    verdicts.append(_verdict(behavior, where, _BEHAVIOR_KEYS, _BEHAVIORS))
    interrupt = _flag(behavior, "interrupt", where, False)
    return interrupt and behavior.get("behavior") == "deny"  # "for deny only"


def _merged(verdicts: list[_Verdict]) -> _Verdict:
    """The strictest decision, the most specific reason, the one input change."""
    decisions = [decision for decision, _, _ in verdicts if decision is not None]
    # The reason of the most specific shape wins: PermissionRequest's, then
    # hookSpecificOutput's, then ours.
    reason = next((reason for _, reason, _ in reversed(verdicts) if reason is not None), None)
    inputs = [changed for _, _, changed in verdicts if changed is not None]
    if any(other != inputs[0] for other in inputs[1:]):
        raise _invalid("modified_input and updatedInput disagree")
    strictest = max(decisions, key=_STRICTNESS.__getitem__, default=None)
    return strictest, reason, inputs[0] if inputs else None


def parse_result(stdout: bytes, *, strict: bool = False) -> HookResult:
    """Read a hook's output as a result.

    Args:
        stdout: the raw output: a JSON object, or empty for no opinion.
        strict: refuse fields that neither shape knows.

    Returns:
        The result; ``exit_code`` and ``stderr`` are left for the runner to fill in.

    Raises:
        HookRunError: the output is not one JSON object of a known shape.
    """
    if not stdout.strip():
        return HookResult()
    try:
        data = json.loads(stdout)
    except UnicodeDecodeError as exc:
        raise _invalid(f"not UTF-8 ({exc.reason} at byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise _invalid(f"{exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except RecursionError:
        raise _invalid("nested too deeply") from None
    return result_from_json(data, strict=strict)


# The result of ``{"decision": X}`` for each X ours reads (HookResult is frozen: shared).
_PLAIN: Final = {value: HookResult(decision=verdict) for value, verdict in _OUR_DECISIONS.items()}
NO_OPINION: Final = HookResult()
"""The result of ``{}`` (or of a function that returned None), shared."""
PLAIN_RESULTS: Final = frozenset(map(id, (NO_OPINION, *_PLAIN.values())))
"""The ids of the shared results that hold a decision at most (``_PLAIN``, ``NO_OPINION``)."""


def result_from_json(data: object, *, strict: bool = False) -> HookResult:
    """Read an already decoded JSON value as a result (see ``parse_result``).

    Args:
        data: the decoded value; it must be a JSON object (a ``dict``).
        strict: refuse fields that neither shape knows.

    Returns:
        The result.

    Raises:
        HookRunError: the value is not an object of a known shape.
    """
    if not isinstance(data, dict):
        raise _invalid(f"expected an object, got {_kind(data)}")
    if len(data) == 1:  # a decision alone, the most common answer: read once, kept
        plain = _PLAIN.get(decision) if type(decision := data.get("decision")) is str else None
        if plain is not None:
            return plain
    if strict:
        _check_fields(data, _TOP_FIELDS, "")

    # (decision, reason, input change) of each shape present: ours, then Claude Code's
    verdicts = [_verdict(data, "", _OUR_KEYS, _OUR_DECISIONS)]
    messages: list[str] = []
    message = _text(data, "message", "")
    if message is not None:
        messages.append(message)
    specific = _object(data, "hookSpecificOutput", "") or {}
    interrupt, output = False, data.get("output")
    ignored = wrong_types(data) if specific or "terminalSequence" in data else ()
    if specific:  # Claude Code's shape (most answers have none: spare the reading)
        interrupt = _read_specific(specific, strict, verdicts, messages)
        output = next((specific[k] for k in _OUTPUT_FIELDS if k in specific), output)
        output = elicitation_answer(specific) or output
    system_message = _text(data, "systemMessage", "") or _text(data, "system_message", "")
    retry = _flag(data, "retry", "", False) or _flag(
        specific, "retry", "hookSpecificOutput.", False
    )
    _flag(data, "suppressOutput", "", False)
    stop = not _flag(data, "continue", "", True)
    stop_reason = _text(data, "stopReason", "")

    strictest, reason, changed = _merged(verdicts)
    if interrupt and not stop:  # PermissionRequest: deny and stop Claude
        stop, stop_reason = True, reason
    return HookResult(
        decision=strictest,
        reason=reason,
        modified_input=changed,
        messages=tuple(messages),
        stop=stop,
        stop_reason=stop_reason,
        system_message=system_message,
        output=output,
        retry=retry,
        ignored=ignored,
    )
