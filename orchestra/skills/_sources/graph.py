"""The graph executor's hook files (seed 000) as a source, with their own protocol.

Two shapes load: a JSON graph definition whose ``hooks`` key is a list (its other keys,
``nodes``, ``edges``, ..., are the graph's own), and a ``hooks.json`` holding the list
itself. Each entry:

=====================  ==============================================================
field                  meaning
=====================  ==============================================================
``event``              ``GraphStart``, ``PreNodeExecute``, ``PostNodeExecute``,
                       ``GraphComplete``, ``GraphError`` (required)
``command``            run as ``sh -c COMMAND``, the event JSON on stdin (required)
``match_node_type``    ``*`` (default), an exact type, or ``prefix__*``: matched on
                       the task's ``metadata["type"]``
``match_node_id``      an exact task id; when set, it alone decides (wins over type)
``timeout_ms``         default 1000
``enabled``            ``false``: the hook is not loaded
``name``,              kept for the reader, change nothing
``description``
=====================  ==============================================================

The events are orchestra's DAG events: ``GraphStart`` is ``RunStart``,
``PreNodeExecute`` ``AttemptStart``, ``PostNodeExecute`` a successful ``AttemptEnd``,
``GraphComplete`` and ``GraphError`` ``RunEnd`` with ``state`` ``succeeded`` and
``failed``. The hook prints ``{"action": "continue" | "block" | "modify",
"modified_data": ...}``:

- ``continue`` (or nothing): go on;
- ``block`` before a node: the node does not run, its output is ``{}`` and its
  dependents run (after it: its output becomes ``{}``; at ``GraphStart``: no node runs);
- ``modify``: before a node, ``modified_data`` (an object) merges into the node's
  inputs, each hook seeing the inputs as modified before it (list order); after it,
  ``modified_data`` is the node's output.

Everything else fails open, as in the seed: a non-zero exit, a timeout, output that is
not JSON or an unknown action is a hook error (on ``RunResult.hook_errors``) and counts
as ``continue``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, ClassVar, Final, final

import attrs

from orchestra.skills._config.yaml import Map, Problems, Seq, kind
from orchestra.skills._hooks.spec import NOT_CONFIG, HookCall, HookSpec, utc_timestamp
from orchestra.skills._processes.command import command_argv, describe_exit, run_process
from orchestra.skills._processes.environment import KEPT_MINIMAL, hook_environment
from orchestra.skills._protocol.result import NO_OPINION, HookResult, HookRunError
from orchestra.skills._sources.seed_fields import SeedEntry
from orchestra.tracing.names import ATTR_PROCESS_EXIT_CODE

__all__ = ["GRAPH_ENV_NOTE", "GRAPH_EVENTS", "GraphHook", "is_graph_file", "read_graph"]

# The seed's events: (orchestra's event, the RunEnd/AttemptEnd state it is, if one).
GRAPH_EVENTS: Final[Mapping[str, tuple[str, str | None]]] = {
    "GraphStart": ("RunStart", None),
    "PreNodeExecute": ("AttemptStart", None),
    "PostNodeExecute": ("AttemptEnd", None),  # failed nodes too, as the seed fires it
    "GraphComplete": ("RunEnd", None),  # always, also when the run failed
    "GraphError": ("RunEnd", "failed"),
}
"""The graph executor's events, each as orchestra's event (and the state it stands for)."""
_FIELDS: Final = (
    "event",
    "command",
    "match_node_type",
    "match_node_id",
    "timeout_ms",
    "enabled",
    "name",
    "description",
)
_DEFAULT_TIMEOUT_MS: Final = 1000
_MAX_TIMEOUT_MS: Final = 300_000
_ACTIONS: Final = ("continue", "block", "modify")
_NODE_EVENTS: Final = frozenset({"AttemptStart", "AttemptEnd"})
GRAPH_ENV_NOTE: Final = f"graph executor hooks {KEPT_MINIMAL}"
"""What the loader says once per graph executor file (the difference it keeps)."""
_STDERR_TAIL: Final = 500  # the end of a failed hook's stderr, in its recorded error


def _type_problem(pattern: str) -> str | None:
    """What is wrong with a ``match_node_type``, or None."""
    if "*" in pattern[:-1]:
        return f"{pattern!r}: only '*' alone or a trailing '*' (prefix__*) is a wildcard"
    return None


@final
@attrs.frozen(kw_only=True, repr=False)
class GraphHook(HookSpec):
    """A graph executor's hook: a shell command at a graph event (see the module doc).

    Attributes:
        command: the shell command.
        graph_event: the seed's event name (``PreNodeExecute``, ...).
        state: the ``state`` of the event it stands for (``GraphComplete``:
            ``succeeded``), or None for every state.
        match_node_type: ``*``, an exact type or ``prefix__*``, matched on the task's
            ``metadata["type"]``.
        match_node_id: an exact task id, or None; when set, the type is not looked at.
        name: the hook's name in its file, if it has one.
        pass_env: the parent's variables (names or globs) it gets beyond the minimal
            environment (``load(..., pass_env=...)``).
    """

    type: ClassVar[str] = "graph"
    exit_code_attribute: ClassVar[str | None] = ATTR_PROCESS_EXIT_CODE
    filters: ClassVar[bool] = True
    in_order: ClassVar[bool] = True

    command: str
    graph_event: str = attrs.field(metadata=NOT_CONFIG)
    state: str | None = attrs.field(default=None, metadata=NOT_CONFIG)
    match_node_type: str = "*"
    match_node_id: str | None = None
    name: str | None = None
    pass_env: tuple[str, ...] = attrs.field(default=(), metadata=NOT_CONFIG)

    def describe(self) -> str:
        """The command, and what it matches."""
        what = f"{self.graph_event}: {self.command}"
        if self.match_node_id is not None:
            return f"{what} (node {self.match_node_id})"
        if self.match_node_type != "*":
            return f"{what} (type {self.match_node_type})"
        return what

    def selects(self, payload: Mapping[str, Any]) -> bool:
        """The event's state, then the node: its id when ``match_node_id``, else its type."""
        if self.state is not None and payload.get("state") != self.state:
            return False
        if self.event not in _NODE_EVENTS:
            return True
        if self.match_node_id is not None:
            return payload.get("task_id") == self.match_node_id
        pattern = self.match_node_type
        if pattern == "*":
            return True
        node_type = payload.get("type")
        if not isinstance(node_type, str):
            return False
        if pattern.endswith("*"):
            return node_type.startswith(pattern[:-1])
        return node_type == pattern

    def event_json(self, data: Mapping[str, Any]) -> bytes:
        """The seed's event JSON: ``event``, ``node_id``, ``node_type``, ``data``, ..."""
        body: dict[str, Any] = {
            "event": self.graph_event,
            "graph": data.get("dag"),
            "run_id": data.get("run_id"),
            "timestamp": data.get("timestamp") or utc_timestamp(),
        }
        if self.event in _NODE_EVENTS:
            body["node_id"] = data.get("task_id")
            body["node_type"] = data.get("type")
            body["attempt"] = data.get("attempt")
            if self.event == "AttemptStart":
                body["inputs"] = data.get("inputs")
            else:
                body["outputs"] = data.get("output")
                body["error"] = data.get("error")
        elif self.event == "RunEnd":
            body["status"] = data.get("state")
            body["failed"] = data.get("failed")
        return json.dumps(body, default=str).encode()

    async def run(self, call: HookCall) -> HookResult:
        """Run the command and read the seed's answer; every failure is a hook error."""
        done = await run_process(
            command_argv(self.command, None),
            stdin=self.event_json(call.data),
            env=hook_environment(
                event=call.event, project_dir=call.project_dir, pass_env=self.pass_env
            ),
            cwd=call.project_dir,
            timeout=self.timeout,
        )
        if done.returncode != 0:
            said = done.stderr.strip()[-_STDERR_TAIL:]
            raise HookRunError(
                f"{describe_exit(done.returncode, True)} (the graph executor goes on)"
                + (f": {said}" if said else ""),
                exit_code=done.returncode,
                stderr=done.stderr,
            )
        return self.answer(done.stdout, call.data)

    def answer(self, stdout: bytes, data: Mapping[str, Any]) -> HookResult:
        """What the hook's ``action`` means at its event.

        Raises:
            HookRunError: the output is not an action of the seed's protocol.
        """
        if not stdout.strip():
            return NO_OPINION
        try:
            reply = json.loads(stdout)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise HookRunError(
                f"invalid JSON output: {exc}", summary="invalid JSON output"
            ) from None
        action = reply.get("action", "continue") if isinstance(reply, dict) else None
        if action not in _ACTIONS:
            raise HookRunError(f"invalid output: action must be one of {', '.join(_ACTIONS)}")
        if action == "continue":
            return NO_OPINION
        failed = data.get("state") == "failed"  # a failed node's PostNodeExecute: ignored
        if action == "block":
            if self.event == "RunStart":
                return HookResult(decision="block", reason=f"blocked by {self.graph_event} hook")
            if self.event in _NODE_EVENTS and not failed:
                return HookResult(output={}, final=True)
            return HookResult(final=True)  # the first block ends the chain
        modified = reply.get("modified_data")
        if failed:
            return NO_OPINION
        if self.event == "AttemptEnd":
            return HookResult(output=modified) if modified is not None else NO_OPINION
        if self.event != "AttemptStart":
            return NO_OPINION
        if not isinstance(modified, dict):
            raise HookRunError(
                f"invalid output: modified_data must be an object, got {kind(modified)}"
            )
        current = data.get("inputs")
        merged = {**current, **modified} if isinstance(current, Mapping) else dict(modified)
        return HookResult(modified_input=merged)


def is_graph_file(data: Any) -> bool:
    """Whether a parsed JSON file is the graph executor's.

    A list (``hooks.json``), an object whose ``hooks`` is a list, or a saved graph
    (``nodes`` a list) without ``hooks``: Claude Code's settings have no ``nodes``.
    """
    if isinstance(data, Seq):
        return True
    if not isinstance(data, Map):
        return False
    hooks = data.get("hooks")
    return isinstance(hooks, Seq) or (hooks is None and isinstance(data.get("nodes"), Seq))


def read_graph(file: str, data: Map | Seq, problems: Problems) -> list[GraphHook]:
    """The enabled hooks of a graph executor's file, in the seed's order.

    The graph's own ``hooks`` first, then each node's ``config.hooks`` (in node order),
    whose ``match_node_id`` is that node's id.
    """
    found = _read(file, data, problems)
    if found:  # said once per file: the difference orchestra keeps on purpose
        problems.notes.append(f"{file}:{found[0].line}: {GRAPH_ENV_NOTE}")
    return found


def _read(file: str, data: Map | Seq, problems: Problems) -> list[GraphHook]:
    if isinstance(data, Seq):
        return _entries(file, data, "", problems)
    hooks = data.get("hooks")
    found = _entries(file, hooks, "hooks", problems) if isinstance(hooks, Seq) else []
    nodes = data.get("nodes")
    for i, node in enumerate(nodes if isinstance(nodes, Seq) else ()):
        config = node.get("config") if isinstance(node, Map) else None
        node_hooks = config.get("hooks") if isinstance(config, Map) else None
        if node_hooks is None or not isinstance(config, Map):
            continue
        where = f"nodes[{i}].config.hooks"
        node_id = node.get("id")
        if not isinstance(node_id, str) or not node_id:
            problems.add(file, node.line, f"nodes[{i}].id", "a node with hooks needs its id")
        elif not isinstance(node_hooks, Seq):
            problems.add(file, config.line, where, f"expected a list, got {kind(node_hooks)}")
        else:
            found += _entries(file, node_hooks, where, problems, node_id)
    return found


def _entries(
    file: str, entries: Seq, prefix: str, problems: Problems, node_id: str | None = None
) -> list[GraphHook]:
    hooks: list[GraphHook] = []
    for i, raw in enumerate(entries):
        where = f"{prefix}[{i}]"
        if not isinstance(raw, Map):
            problems.add(file, entries.lines[i], where, f"expected an object, got {kind(raw)}")
            continue
        hook = _hook(SeedEntry(raw, where, file, problems), node_id)
        if hook is not None:
            hooks.append(hook)
    return hooks


def _hook(entry: SeedEntry, node: str | None) -> GraphHook | None:
    entry.known(_FIELDS, "a graph executor hook")
    seed_event = entry.choice("event", GRAPH_EVENTS)
    command = entry.string("command", required=True)
    node_type = entry.string("match_node_type") or "*"
    problem = _type_problem(node_type)
    if problem is not None:
        entry.bad("match_node_type", problem)
    node_id = entry.string("match_node_id")
    if node is not None:  # a node's own hook: that node only
        if node_id not in (None, node):
            entry.bad("match_node_id", f"a hook of node {node!r} runs on that node only")
        node_id = node
    timeout = entry.milliseconds("timeout_ms", _DEFAULT_TIMEOUT_MS, _MAX_TIMEOUT_MS)
    enabled = entry.flag("enabled", True)
    name = entry.string("name")
    entry.string("description")
    if entry.count or seed_event is None or command is None or not enabled:
        return None
    event, state = GRAPH_EVENTS[seed_event]
    return GraphHook(
        event=event,
        command=command,
        graph_event=seed_event,
        state=state,
        match_node_type=node_type,
        match_node_id=node_id,
        name=name,
        timeout=timeout,
        on_error="continue",
        file=entry.file,
        line=entry.line(),
    )
