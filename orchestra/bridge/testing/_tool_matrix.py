"""The tool half of the one-policy conformance matrix: the same tool cells over every engine.

An engine's tests implement ``ToolEngine``: drive the engine itself (its own scripted or
fake model, or a caller) so that it calls one tool, ``fetch(path)``, once with
``{"path": "/data"}``, under a given registry, and say what the caller read back. Each
cell of ``TOOL_CELLS`` loads its own ``orchestra.yaml`` (real hooks: ``permission`` and
``command``) and checks the outcome with ``check_tool_cell``; a cell an engine cannot do is
listed in its ``cannot`` with the reason. ``tool_matrix_row`` renders the engine's row of
the table in docs/howto/one-policy.md, so a test can check the page against the engine.

| cell              | the hooks...                      | the call...                       |
|-------------------|-----------------------------------|-----------------------------------|
| ``deny``          | ``PreToolUse`` denies             | body unrun, the caller reads why  |
| ``rewrite``       | ``PreToolUse`` ``modified_input`` | the body gets the new input       |
| ``mock``          | ``PreToolUse`` ``output``         | body unrun, the caller reads it   |
| ``post_rewrite``  | ``PostToolUse`` ``output``        | the caller reads the rewrite      |
| ``audit``         | a deny, ``enforce: false``        | runs as if no hook                |
| ``ask``           | ``PreToolUse`` ``ask``            | paused, body unrun                |
| ``raising_guard`` | ``phase: guard``, exits 1         | refused (fails closed)            |
| ``raising_hook``  | ``on_error: continue``, exits 1   | runs (fails open)                 |
| ``hanging_guard`` | ``phase: guard``, times out       | refused (fails closed)            |
| ``hanging_hook``  | ``on_error: continue``, times out | runs (fails open)                 |
| ``one_trace``     | a deny                            | one trace, ``execute_tool fetch`` |
| ``budget``        | ``budget: {max_tool_calls: 0}``   | body unrun, reads ``budget: ...`` |
| ``budget_audit``  | the same, ``enforce: false``      | runs as if no budget              |

The budget cells give the registry a ``budget:`` and no hooks: the engine must open the
registry's budgets for its run (``orchestra.bridge.open_budgets``) and charge the call.
The limit is 0 because each ``call`` is one run making one call: the first call is past
it, so it is refused (``budget: tool calls 0/0``), as any call past a limit is.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol, final

import attrs

from orchestra._tool_call import args_sha256
from orchestra.bridge.testing._tables import header, row

if TYPE_CHECKING:
    from orchestra.skills import HookRegistry

__all__ = [
    "TOOL_CELLS",
    "ToolBody",
    "ToolEngine",
    "ToolRun",
    "check_tool_cell",
    "tool_matrix_header",
    "tool_matrix_row",
]

TOOL_INPUT: Final = {"path": "/data"}
_REASON: Final = "fetching /data is not allowed"
_HANG_TIMEOUT: Final = 1  # seconds a hanging hook is given; it would sleep 30


@final
@attrs.frozen
class ToolRun:
    """What the caller (a model, a task) saw of the one call, as the adapter reads it.

    Attributes:
        read: what the caller read back (the tool's result, a refusal, a mock), as text.
        paused: the engine paused the call for a person.
        request: the pending request the engine gives for a paused call, if it gives one
            (``{"tool_name", "tool_input", "reason", "hook_id", "args_sha256"}``).
    """

    read: str = ""
    paused: bool = False
    request: Mapping[str, Any] | None = None


@final
class ToolBody:
    """The tool ``fetch(path)``: records each path it gets, returns ``fetched {path}``."""

    def __init__(self) -> None:
        self.paths: list[str] = []

    def __call__(self, path: str) -> str:
        self.paths.append(path)
        return f"fetched {path}"


class ToolEngine(Protocol):
    """What an engine's tests implement to run the tool matrix.

    Attributes:
        name: the engine, as its row of the table names it.
        cannot: cell -> why this engine cannot do it (documented, shown as the skip).
    """

    name: str
    cannot: Mapping[str, str]

    def call(self, registry: HookRegistry, body: ToolBody) -> ToolRun:
        """Have the engine call its tool ``fetch`` once with ``{"path": "/data"}``.

        The tool's body is ``body`` (``body(path)``); the engine's own tool path (its
        model's tool call, a guarded function) goes through ``registry``'s tool events.
        """
        ...


def registry_of(hooks: Mapping[str, Any], budget: Mapping[str, Any] | None = None) -> HookRegistry:
    from orchestra.skills import load  # here: the matrix module stays light

    folder = Path(tempfile.mkdtemp(prefix="orchestra-tool-matrix-"))
    path = folder / "orchestra.yaml"
    doc: dict[str, Any] = {"hooks": hooks} if budget is None else {"budget": budget}
    path.write_text(json.dumps(doc))  # JSON is YAML
    return load(path, project_dir=folder)


def _pre(*hooks: dict[str, Any]) -> dict[str, Any]:
    return {"PreToolUse": [{"matcher": "fetch", "hooks": list(hooks)}]}


def _echo(answer: Mapping[str, Any]) -> str:
    return "echo " + json.dumps(json.dumps(answer))  # a shell word: the JSON, quoted


def _expect(engine: ToolEngine, cell: str, ok: bool, what: str) -> None:
    if not ok:
        raise AssertionError(f"{engine.name}, tool cell {cell!r}: {what}")


def _refused(engine: ToolEngine, cell: str, hooks: Mapping[str, Any], why: str) -> None:
    body = ToolBody()
    run = engine.call(registry_of(hooks), body)
    _expect(engine, cell, body.paths == [], f"the tool ran with {body.paths}")
    _expect(engine, cell, why in run.read, f"the caller read {run.read!r}, not {why!r}")


def _ran(engine: ToolEngine, cell: str, hooks: Mapping[str, Any]) -> ToolRun:
    body = ToolBody()
    run = engine.call(registry_of(hooks), body)
    _expect(engine, cell, body.paths == ["/data"], f"the tool got {body.paths}")
    _expect(engine, cell, "fetched /data" in run.read, f"the caller read {run.read!r}")
    return run


def _deny(engine: ToolEngine) -> None:
    deny = {"type": "permission", "decision": "deny", "reason": _REASON}
    _refused(engine, "deny", _pre(deny), _REASON)


def _rewrite(engine: ToolEngine) -> None:
    body = ToolBody()
    rewrite = {"type": "command", "command": _echo({"modified_input": {"path": "/sandbox"}})}
    run = engine.call(registry_of(_pre(rewrite)), body)
    _expect(engine, "rewrite", body.paths == ["/sandbox"], f"the tool got {body.paths}")
    _expect(engine, "rewrite", "fetched /sandbox" in run.read, f"read {run.read!r}")


def _mock(engine: ToolEngine) -> None:
    mock = {"type": "command", "command": _echo({"output": "from the cache"})}
    _refused(engine, "mock", _pre(mock), "from the cache")


def _post_rewrite(engine: ToolEngine) -> None:
    body = ToolBody()
    rewrite = {"type": "command", "command": _echo({"output": "redacted"})}
    hooks = {"PostToolUse": [{"matcher": "fetch", "hooks": [rewrite]}]}
    run = engine.call(registry_of(hooks), body)
    _expect(engine, "post_rewrite", body.paths == ["/data"], f"the tool got {body.paths}")
    _expect(engine, "post_rewrite", "redacted" in run.read, f"the caller read {run.read!r}")


def _audit(engine: ToolEngine) -> None:
    deny = {"type": "permission", "decision": "deny", "reason": _REASON, "enforce": False}
    _ran(engine, "audit", _pre(deny))


def _ask(engine: ToolEngine) -> None:
    body = ToolBody()
    ask = {"type": "permission", "decision": "ask", "reason": "a person decides"}
    run = engine.call(registry_of(_pre(ask)), body)
    _expect(engine, "ask", run.paused, f"the call was not paused (read {run.read!r})")
    _expect(engine, "ask", body.paths == [], f"the tool ran with {body.paths}")
    if run.request is not None:
        shape = {"tool_name", "tool_input", "reason", "hook_id", "args_sha256"}
        _expect(engine, "ask", set(run.request) == shape, f"request {dict(run.request)}")
        digest = args_sha256(TOOL_INPUT)
        _expect(engine, "ask", run.request["args_sha256"] == digest, "another call's digest")


def _failing(cell: str, command: str, guard: bool) -> Callable[[ToolEngine], None]:
    hook: dict[str, Any] = {"type": "command", "command": command, "timeout": _HANG_TIMEOUT}
    if guard:
        hook["phase"] = "guard"
    else:  # a PreToolUse hook of orchestra's files fails closed unless it says otherwise
        hook["on_error"] = "continue"

    def check(engine: ToolEngine) -> None:
        if guard:  # fails closed: refused, the caller told which hook
            _refused(engine, cell, _pre(hook), "")
        else:  # fails open: the call goes on
            _ran(engine, cell, _pre(hook))

    return check


def _one_trace(engine: ToolEngine) -> None:
    from orchestra.tracing.testing import recording  # the SDK: only when this cell runs

    deny = {"type": "permission", "decision": "deny", "reason": _REASON}
    with recording() as exporter:
        engine.call(registry_of(_pre(deny)), ToolBody())
    spans = exporter.get_finished_spans()
    traces = {s.context.trace_id for s in spans if s.context is not None}
    names = [s.name for s in spans]
    _expect(engine, "one_trace", "execute_tool fetch" in names, f"spans {names}")
    _expect(engine, "one_trace", len(traces) == 1, f"{len(traces)} traces, not 1")


def _budget(engine: ToolEngine) -> None:
    body = ToolBody()
    run = engine.call(registry_of({}, {"max_tool_calls": 0}), body)
    _expect(engine, "budget", body.paths == [], f"the tool ran with {body.paths}")
    why = "budget: tool calls 0/0"
    _expect(engine, "budget", why in run.read, f"the caller read {run.read!r}, not {why!r}")


def _budget_audit(engine: ToolEngine) -> None:
    body = ToolBody()
    run = engine.call(registry_of({}, {"max_tool_calls": 0, "enforce": False}), body)
    _expect(engine, "budget_audit", body.paths == ["/data"], f"the tool got {body.paths}")
    _expect(engine, "budget_audit", "fetched /data" in run.read, f"the caller read {run.read!r}")


_CELLS: Final[dict[str, Callable[[ToolEngine], None]]] = {
    "deny": _deny,
    "rewrite": _rewrite,
    "mock": _mock,
    "post_rewrite": _post_rewrite,
    "audit": _audit,
    "ask": _ask,
    "raising_guard": _failing("raising_guard", "exit 1", guard=True),
    "raising_hook": _failing("raising_hook", "exit 1", guard=False),
    "hanging_guard": _failing("hanging_guard", "sleep 30", guard=True),
    "hanging_hook": _failing("hanging_hook", "sleep 30", guard=False),
    "one_trace": _one_trace,
    "budget": _budget,
    "budget_audit": _budget_audit,
}

TOOL_CELLS: Final = tuple(_CELLS)
"""Every cell of the tool matrix, by name (parametrize an engine's test over it)."""


def _check_cannot(engine: ToolEngine) -> None:
    stray = set(engine.cannot) - set(_CELLS)
    if stray:
        raise KeyError(f"{engine.name}: cannot names unknown tool cells {sorted(stray)}")


def check_tool_cell(engine: ToolEngine, cell: str) -> str | None:
    """Check one tool cell on ``engine``; None when it passed, the reason when it cannot.

    Raises:
        AssertionError: the engine did not do what the cell says (the message names both).
        KeyError: ``cell`` is not a cell of ``TOOL_CELLS``, or ``cannot`` names one that is not.
    """
    _check_cannot(engine)
    if cell in engine.cannot:
        return engine.cannot[cell]
    _CELLS[cell](engine)
    return None


def tool_matrix_header() -> str:
    """The header of the tool table in docs/howto/one-policy.md (two Markdown lines)."""
    return header(["engine", *_CELLS])


def tool_matrix_row(engine: ToolEngine) -> str:
    """The engine's row of the tool table in docs/howto/one-policy.md (Markdown).

    ``| name | pass | cannot: reason | ... |``, one column per cell of ``TOOL_CELLS``.
    """
    _check_cannot(engine)
    return row([engine.name], engine.cannot, _CELLS)
