"""The ways around the guard and the ask round trip: two more halves of the conformance matrix.

The tool matrix (``_tool_matrix``) runs an engine's main tool path. Here:

**Ways around the guard** (``WAY_CELLS``, ``WayEngine``, ``check_way_cell``): each
engine lists the other paths its tools can be called by (a hand-written tool node, an
output function, a shell tool, a tool called inside a node function, ...) and drives
each so that ``fetch`` is called once with ``{"path": "/data"}``. The hook reads the
call's input, so a path that hands the hooks an empty ``tool_input`` fails:

| cell              | the hook...                             | the call...                      |
|-------------------|-----------------------------------------|----------------------------------|
| ``deny_by_input`` | denies because ``tool_input`` is /data  | body unrun, the caller reads why |
| ``runs_by_input`` | denies only ``/etc``                    | runs with ``{"path": "/data"}``  |

A path an engine cannot guard is listed in its ``cannot`` with the reason.

**The ask round trip** (``ASK_CELLS``, ``AskEngine``, ``check_ask_cell``), for the
engines that can pause a call: the hooks ask (and a guard denies ``/etc``); the engine
pauses with the one pending request (``check_pending_request``) and resumes with a
person's answer:

| cell                | the answer                        | the call...                       |
|---------------------|-----------------------------------|-----------------------------------|
| ``approve_once``    | ``approve``, the request's digest | runs exactly once                 |
| ``deny``            | ``deny`` with a reason            | body unrun, the model reads it    |
| ``edit_rejudged``   | ``edit`` to ``/etc``, ``/sandbox``| refused by the guard; asked again |
| ``digest_mismatch`` | ``approve``, another call's digest| body unrun, refused               |

(An engine that cannot pause a resumed call twice refuses the edit to ``/sandbox`` with
the ask's reason instead of asking again: the body never runs unasked.)

``way_matrix_rows`` and ``ask_matrix_row`` render the rows of docs/howto/one-policy.md,
so a test checks the page against the engine.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, Protocol, final

import attrs

from orchestra._tool_call import args_sha256
from orchestra.bridge.testing._pending import check_pending_request
from orchestra.bridge.testing._tables import header, row
from orchestra.bridge.testing._tool_matrix import TOOL_INPUT, ToolBody, ToolRun, registry_of

if TYPE_CHECKING:
    from orchestra.skills import HookRegistry

__all__ = [
    "ASK_CELLS",
    "WAY_CELLS",
    "AskEngine",
    "Paused",
    "WayEngine",
    "ask_matrix_header",
    "ask_matrix_row",
    "check_ask_cell",
    "check_way_cell",
    "way_matrix_header",
    "way_matrix_rows",
]

_REASON: Final = "fetching /data is not allowed"
_ASK_REASON: Final = "a person decides"


def _deny_if(word: str, reason: str) -> dict[str, Any]:
    """A command hook that reads the call's input and denies it when ``word`` is in it."""
    script = f"if grep -q '{word}'; then echo '{reason}' >&2; exit 2; fi"
    return {"type": "command", "command": script}


def _pre(*hooks: dict[str, Any]) -> dict[str, Any]:
    # every tool: a way may call its tool by a name of its own (a shell tool, a computer)
    return {"PreToolUse": [{"matcher": "*", "hooks": list(hooks)}]}


class WayEngine(Protocol):
    """What an engine's tests implement to run the ways-around-the-guard cells.

    Attributes:
        name: the engine, as its rows of the table name it.
        ways: each path (a short name) -> what it is, for the table.
        cannot: a path this engine cannot guard -> why (documented, shown in the table).
    """

    name: str
    ways: Mapping[str, str]
    cannot: Mapping[str, str]

    def call(self, way: str, registry: HookRegistry, body: ToolBody) -> ToolRun:
        """Have the engine call ``fetch`` once with ``{"path": "/data"}`` by ``way``."""
        ...


def _expect(name: str, cell: str, ok: bool, what: str) -> None:
    if not ok:
        raise AssertionError(f"{name}, cell {cell!r}: {what}")


def _deny_by_input(engine: WayEngine, way: str) -> None:
    body = ToolBody()
    run = engine.call(way, registry_of(_pre(_deny_if("/data", _REASON))), body)
    where = f"{engine.name} ({way})"
    _expect(where, "deny_by_input", body.paths == [], f"the tool ran with {body.paths}")
    _expect(where, "deny_by_input", _REASON in run.read, f"the caller read {run.read!r}")


def _runs_by_input(engine: WayEngine, way: str) -> None:
    body = ToolBody()
    run = engine.call(way, registry_of(_pre(_deny_if("/etc", "not /etc"))), body)
    where = f"{engine.name} ({way})"
    _expect(where, "runs_by_input", body.paths == ["/data"], f"the tool got {body.paths}")
    _expect(where, "runs_by_input", "fetched /data" in run.read, f"the caller read {run.read!r}")


_WAYS: Final[dict[str, Callable[[WayEngine, str], None]]] = {
    "deny_by_input": _deny_by_input,
    "runs_by_input": _runs_by_input,
}

WAY_CELLS: Final = tuple(_WAYS)
"""The cells run on each way around the guard."""


def _check_ways(engine: WayEngine) -> None:
    stray = set(engine.cannot) - set(engine.ways)
    if stray:
        raise KeyError(f"{engine.name}: cannot names unknown ways {sorted(stray)}")


def check_way_cell(engine: WayEngine, way: str, cell: str) -> str | None:
    """Check one cell on one way of ``engine``; None when it passed, the reason when it cannot.

    Raises:
        AssertionError: the engine did not do what the cell says (the message names both).
        KeyError: ``way`` is not one of the engine's ``ways``, or ``cell`` not a cell.
    """
    _check_ways(engine)
    if way not in engine.ways:
        raise KeyError(f"{engine.name}: no way {way!r} (its ways: {sorted(engine.ways)})")
    if way in engine.cannot:
        return engine.cannot[way]
    _WAYS[cell](engine, way)
    return None


def way_matrix_header() -> str:
    """The header of the ways table in docs/howto/one-policy.md (two Markdown lines)."""
    return header(["engine", "way", *_WAYS])


def way_matrix_rows(engine: WayEngine) -> str:
    """The engine's rows of the ways table in docs/howto/one-policy.md, one per way."""
    _check_ways(engine)
    rows = []
    for way, what in engine.ways.items():
        # every cell of a way the engine cannot guard says why: the way's reason
        cannot = {cell: engine.cannot[way] for cell in _WAYS if way in engine.cannot}
        rows.append(row([engine.name, f"`{way}`: {what}"], cannot, _WAYS))
    return "\n".join(rows)


@final
@attrs.frozen
class Paused:
    """A call the engine paused for a person: its pending request, and how to answer.

    Attributes:
        request: the pending request the engine gives (``PENDING_FIELDS``).
        answer: resume the run with a person's answer; what the caller saw then (a
            ``ToolRun``: ``paused`` with a new ``request`` when a guard asks again).
    """

    request: Mapping[str, Any]
    answer: Callable[[Mapping[str, Any]], ToolRun]


class AskEngine(Protocol):
    """What an engine's tests implement to run the ask round trip.

    Attributes:
        name: the engine, as its row of the table names it.
        cannot: cell -> why this engine cannot do it.
    """

    name: str
    cannot: Mapping[str, str]

    def pause(self, registry: HookRegistry, body: ToolBody) -> Paused:
        """Have the engine call ``fetch({"path": "/data"})`` under ``registry``, which asks."""
        ...


def _asking(engine: AskEngine, cell: str, body: ToolBody) -> Paused:
    hooks = _pre(
        _deny_if("/etc", "not /etc"),
        {"type": "permission", "decision": "ask", "reason": _ASK_REASON},
    )
    paused = engine.pause(registry_of(hooks), body)
    _expect(engine.name, cell, body.paths == [], f"the tool ran before the answer: {body.paths}")
    check_pending_request(
        paused.request, tool_name="fetch", tool_input=TOOL_INPUT, reason=_ASK_REASON
    )
    return paused


def _approve_once(engine: AskEngine) -> None:
    body = ToolBody()
    paused = _asking(engine, "approve_once", body)
    run = paused.answer({"decision": "approve", "args_sha256": paused.request["args_sha256"]})
    _expect(engine.name, "approve_once", body.paths == ["/data"], f"the tool got {body.paths}")
    _expect(engine.name, "approve_once", "fetched /data" in run.read, f"read {run.read!r}")
    _expect(engine.name, "approve_once", not run.paused, "paused again")


def _deny(engine: AskEngine) -> None:
    body = ToolBody()
    run = _asking(engine, "deny", body).answer({"decision": "deny", "reason": "not today"})
    _expect(engine.name, "deny", body.paths == [], f"the tool ran with {body.paths}")
    _expect(engine.name, "deny", "not today" in run.read, f"the model read {run.read!r}")


def _edit_rejudged(engine: AskEngine) -> None:
    body = ToolBody()
    run = _asking(engine, "edit_rejudged", body).answer(
        {"decision": "edit", "tool_input": {"path": "/etc"}}
    )
    _expect(engine.name, "edit_rejudged", body.paths == [], f"an edit to /etc ran: {body.paths}")
    _expect(engine.name, "edit_rejudged", "not /etc" in run.read, f"read {run.read!r}")
    body = ToolBody()
    again = _asking(engine, "edit_rejudged", body).answer(
        {"decision": "edit", "tool_input": {"path": "/sandbox"}}
    )
    _expect(engine.name, "edit_rejudged", body.paths == [], f"ran unasked: {body.paths}")
    if again.paused:  # the ask guard asks about the new input
        asked = again.request or {}
        digest = args_sha256({"path": "/sandbox"})
        _expect(engine.name, "edit_rejudged", asked.get("args_sha256") == digest, f"{asked}")
    else:  # an engine that cannot pause a resumed call again refuses it with the ask's reason
        _expect(engine.name, "edit_rejudged", _ASK_REASON in again.read, f"read {again.read!r}")


def _digest_mismatch(engine: AskEngine) -> None:
    body = ToolBody()
    other = args_sha256({"path": "/etc"})
    run = _asking(engine, "digest_mismatch", body).answer(
        {"decision": "approve", "args_sha256": other}
    )
    _expect(engine.name, "digest_mismatch", body.paths == [], f"the tool ran with {body.paths}")
    why = "is not the pending call's"
    _expect(engine.name, "digest_mismatch", why in run.read, f"the model read {run.read!r}")


_ASKS: Final[dict[str, Callable[[AskEngine], None]]] = {
    "approve_once": _approve_once,
    "deny": _deny,
    "edit_rejudged": _edit_rejudged,
    "digest_mismatch": _digest_mismatch,
}

ASK_CELLS: Final = tuple(_ASKS)
"""Every cell of the ask round trip, by name."""


def check_ask_cell(engine: AskEngine, cell: str) -> str | None:
    """Check one ask cell on ``engine``; None when it passed, the reason when it cannot.

    Raises:
        AssertionError: the engine did not do what the cell says.
        KeyError: ``cell`` is not one of ``ASK_CELLS``, or ``cannot`` names one that is not.
    """
    stray = set(engine.cannot) - set(_ASKS)
    if stray:
        raise KeyError(f"{engine.name}: cannot names unknown ask cells {sorted(stray)}")
    if cell in engine.cannot:
        return engine.cannot[cell]
    _ASKS[cell](engine)
    return None


def ask_matrix_header() -> str:
    """The header of the ask table in docs/howto/one-policy.md (two Markdown lines)."""
    return header(["engine", *_ASKS])


def ask_matrix_row(engine: AskEngine) -> str:
    """The engine's row of the ask table in docs/howto/one-policy.md (Markdown)."""
    return row([engine.name], engine.cannot, _ASKS)
