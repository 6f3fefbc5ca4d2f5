"""How a hook of a Claude Code source is read, as Claude Code's hooks reference says.

A command hook's exit, per event (``EventSpec.claude`` says what each event does):

=========================  ==========================================================
the hook                   its result
=========================  ==========================================================
stdout starting with       JSON: the fields the event reads (``ClaudeEvent.reads``),
``{`` (leading spaces      the universal ones it does not discard; invalid JSON is
ignored)                   plain text; an object of the wrong shape is a hook error
                           (non-blocking: Claude Code's default ``on_error``)
other stdout               plain text: context for the agent on SessionStart,
                           UserPromptSubmit and UserPromptExpansion; elsewhere (Setup
                           included) the debug log only: nothing
exit 0                     the JSON, or the plain text, as above
exit 2                     on events that block: a block, the JSON's reason if it
                           blocks, else stderr (the JSON's other fields kept, also
                           when it is of the wrong shape); elsewhere stderr goes where
                           the event sends it: to the agent (PostToolUse,
                           PostToolUseFailure), to the user (``system_message``:
                           SessionStart, Setup, SubagentStart, SessionEnd, ...), or
                           nowhere (PermissionRequest, whose ``decision`` object still
                           counts; Notification, ...)
any other exit             valid JSON decides alone (no error); else a non-blocking
                           hook error with stderr's first line
WorktreeCreate             the last non-empty line of stdout (ANSI codes stripped) is
                           the worktree's path (``output``); any non-zero exit, or no
                           path, fails the creation (a block)
=========================  ==========================================================

An ``asyncRewake`` hook that exits 2 gives stderr, or stdout when stderr is empty.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from typing import Any, Final

import attrs

from orchestra.skills._processes.command import ExitReader, describe_exit
from orchestra.skills._protocol.catalog import EVENTS, EventSpec
from orchestra.skills._protocol.result import HookResult, HookRunError, result_from_json

__all__ = [
    "PAYLOAD_RULES",
    "by_payload",
    "claude_reader",
    "only_what_it_reads",
    "read_claude_exit",
]

_ANSI: Final = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")
_DECISIONS: Final = frozenset({"decision", "permissionDecision", "decision.behavior"})
_INPUTS: Final = frozenset({"updatedInput", "decision.updatedInput"})
_OUTPUTS: Final = frozenset(
    {"updatedToolOutput", "updatedMCPToolOutput", "displayContent", "worktreePath", "action"}
)
_UNBLOCKABLE: Final = "ConfigChange from policy_settings cannot be blocked (Claude Code)"
PAYLOAD_RULES: Final = frozenset({"ConfigChange", "DirectoryAdded"})
"""The events whose payload changes what a hook's answer may do (``by_payload``)."""


def only_what_it_reads(spec: EventSpec, result: HookResult) -> HookResult:
    """``result`` without the fields Claude Code does not read on ``spec``'s event."""
    claude = spec.claude
    reads = frozenset(claude.reads)
    changes: dict[str, Any] = {}
    if result.decision is not None and reads.isdisjoint(_DECISIONS):
        changes.update(decision=None, reason=None)
    if result.modified_input is not None and reads.isdisjoint(_INPUTS):
        changes["modified_input"] = None
    if result.messages and "additionalContext" not in reads:
        changes["messages"] = ()
    if result.output is not None and reads.isdisjoint(_OUTPUTS):
        changes["output"] = None
    if result.retry and "retry" not in reads:
        changes["retry"] = False
    if result.system_message is not None and "systemMessage" in claude.discards:
        changes["system_message"] = None
    if result.stop and "continue" in claude.discards:
        changes.update(stop=False, stop_reason=None)
    return attrs.evolve(result, **changes) if changes else result


def _json(spec: EventSpec, text: str) -> tuple[HookResult | None, HookRunError | None]:
    """The JSON on stdout as a result, or (None, its shape error), or (None, None)."""
    if not text.lstrip().startswith("{"):
        return None, None
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):  # invalid JSON is plain text
        return None, None
    try:
        return only_what_it_reads(spec, result_from_json(data)), None
    except HookRunError as exc:
        return None, exc


def _exit_2(spec: EventSpec, parsed: HookResult | None, stderr: str) -> HookResult:
    base = parsed or HookResult()
    text = stderr.strip()
    mode = spec.claude.exit_2
    if mode == "block":
        if spec.name in ("Elicitation", "ElicitationResult"):
            base = HookResult()  # an exit-2 hook's hookSpecificOutput is ignored there
        blocking = base.decision in ("deny", "block") and base.reason
        reason = base.reason if blocking else (text or None)
        return attrs.evolve(base, decision="block", reason=reason, modified_input=None)
    if mode == "agent" and text:
        return attrs.evolve(base, messages=(*base.messages, text))
    if mode == "user" and text:
        shown = f"{base.system_message}\n{text}" if base.system_message else text
        return attrs.evolve(base, system_message=shown)
    return base  # debug log, or nowhere (a PermissionRequest decision object counts)


def _worktree(code: int, text: str, stderr: str) -> HookResult:
    if code != 0:
        reason = stderr.strip() or f"worktree hook {describe_exit(code, True)}"
        return HookResult(decision="block", reason=reason)
    lines = [line for line in _ANSI.sub("", text).splitlines() if line.strip()]
    if not lines:
        return HookResult(decision="block", reason="the worktree hook printed no path")
    return HookResult(output=lines[-1].strip())


def read_claude_exit(
    spec: EventSpec, code: int, stdout: bytes, stderr: str, *, rewake: bool = False
) -> HookResult:
    """Read a Claude Code command hook that exited by itself (see the module docstring).

    Raises:
        HookRunError: a non-blocking hook error (an exit other than 0 and 2 without
            valid JSON, or JSON of the wrong shape).
    """
    text = stdout.decode("utf-8", "replace")
    if spec.name == "WorktreeCreate":
        return attrs.evolve(_worktree(code, text, stderr), exit_code=code, stderr=stderr)
    parsed, invalid = _json(spec, text)
    plain = text.strip() if parsed is None and invalid is None else ""
    if code == 2:
        if rewake:  # in the background: what wakes the agent is stderr, else stdout
            reason = stderr.strip() or plain or None
            return HookResult(reason=reason, exit_code=2, stderr=stderr)
        return attrs.evolve(_exit_2(spec, parsed, stderr), exit_code=2, stderr=stderr)
    if invalid is not None:
        raise invalid.again(exit_code=code, stderr=stderr)
    if parsed is not None:  # on any exit code, valid JSON decides alone
        return attrs.evolve(parsed, exit_code=code, stderr=stderr)
    if code != 0:
        lines = stderr.strip().splitlines()
        how = describe_exit(code, True)
        message = f"{how}: {lines[0]}" if lines else how
        raise HookRunError(message, exit_code=code, stderr=stderr, summary=how)
    context = (plain,) if plain and spec.claude.plain_stdout == "context" else ()
    return HookResult(messages=context, exit_code=0, stderr=stderr)


@functools.lru_cache(maxsize=128)
def claude_reader(event: str, rewake: bool = False) -> ExitReader:
    """The ``run_command`` reader of a Claude Code command hook on ``event``."""
    return functools.partial(read_claude_exit, EVENTS[event], rewake=rewake)


def by_payload(
    event: str, data: Mapping[str, Any], result: HookResult, claude_code: bool
) -> HookResult:
    """``result`` as the event's payload lets it count, as Claude Code's reference says.

    - ``ConfigChange`` with ``source: policy_settings``: a block is ignored (managed
      settings always take effect), for every hook;
    - ``DirectoryAdded`` (a Claude Code source's hook): ``systemMessage`` goes to the
      agent (``messages``) when ``source`` is ``slash_command``, to the debug log
      (nowhere) when ``register_repo_root``.
    """
    source = data.get("source")
    if event == "ConfigChange":
        if source != "policy_settings" or result.decision not in ("deny", "block"):
            return result
        ignored = (*result.ignored, _UNBLOCKABLE)
        return attrs.evolve(result, decision=None, reason=None, ignored=ignored)
    if not claude_code or result.system_message is None:
        return result
    if source == "slash_command":
        messages = (*result.messages, result.system_message)
        return attrs.evolve(result, messages=messages, system_message=None)
    if source == "register_repo_root":
        return attrs.evolve(result, system_message=None)
    return result
