"""A trace file read back as runs, tasks and attempts (internal).

What ``orchestra trace show`` prints and ``orchestra trace report`` draws, from the spans
of an OTLP JSON file: span trees, the runs in them (a run span carries
``orchestra.run.id``), each run's tasks in the DAG's order with their attempts and final
state. What each span says, as styled text, is in ``_facts``.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final, final

from orchestra._tracebacks import Frame, failing_frame, format_frames, parse_stacktrace
from orchestra.tracing import names as n
from orchestra.tracing._otlp_json import decode_attributes

__all__ = [
    "NOT_OK",
    "Run",
    "SpanNode",
    "Task",
    "build_traces",
    "failed_upstreams",
    "find_runs",
    "select_run",
]

NOT_OK: Final = ("failed", "upstream_failed", "cancelled")
"""The final task states that make a run not ok."""
_ERROR: Final = 2


@final
class SpanNode:
    """One span of a trace file, decoded, with its children."""

    __slots__ = ("attributes", "children", "end", "events", "links", "raw", "start")

    def __init__(self, raw: dict[str, Any]) -> None:
        self.raw = raw
        self.attributes = decode_attributes(raw.get("attributes"))
        self.start = int(raw.get("startTimeUnixNano") or 0)
        self.end = max(int(raw.get("endTimeUnixNano") or 0), self.start)
        self.events: list[tuple[str, dict[str, Any]]] = [
            (str(e.get("name", "")), decode_attributes(e.get("attributes")))
            for e in raw.get("events") or ()
        ]
        self.links: list[str] = [str(link.get("spanId", "")) for link in raw.get("links") or ()]
        self.children: list[SpanNode] = []

    @property
    def name(self) -> str:
        """The span's name."""
        return str(self.raw.get("name", "?"))

    @property
    def span_id(self) -> str:
        """The span's id, hex."""
        return str(self.raw.get("spanId", ""))

    @property
    def trace_id(self) -> str:
        """The span's trace id, hex."""
        return str(self.raw.get("traceId", ""))

    @property
    def error(self) -> str | None:
        """The status message of a span with status ERROR, else None."""
        status = self.raw.get("status") or {}
        if status.get("code") in (_ERROR, "STATUS_CODE_ERROR"):
            return str(status.get("message") or "error")
        return None

    def _stacktrace(self) -> tuple[tuple[Frame, ...], str]:
        for name, event in reversed(self.events):
            text = event.get("exception.stacktrace") if name == "exception" else None
            if isinstance(text, str) and text:
                return parse_stacktrace(text)
        return (), ""

    @property
    def traceback(self) -> str | None:
        """The failing frames of the span's recorded exception (library frames folded)."""
        frames, closing = self._stacktrace()
        return format_frames(frames, closing) if frames else None

    @property
    def failing_frame(self) -> Frame | None:
        """The frame of the user's code where the span's recorded exception was raised."""
        return failing_frame(self._stacktrace()[0])

    @property
    def is_hook(self) -> bool:
        """Whether the span is a hook call."""
        return n.ATTR_HOOK_EVENT in self.attributes

    @property
    def attempt(self) -> int | None:
        """The task attempt number of a task-attempt span, else None."""
        value = self.attributes.get(n.ATTR_TASK_ATTEMPT)
        return None if value is None else int(value)

    def walk(self) -> Iterator[SpanNode]:
        """This span and every span below it, depth first."""
        yield self
        for child in self.children:
            yield from child.walk()


def build_traces(spans: Sequence[dict[str, Any]]) -> dict[str, list[SpanNode]]:
    """Group spans by trace and link them into trees; roots by start time, per trace.

    A span whose parent is not in the file (a remote parent) is a root.
    """
    by_trace: dict[str, list[SpanNode]] = defaultdict(list)
    for raw in spans:
        by_trace[str(raw.get("traceId", ""))].append(SpanNode(raw))
    traces: dict[str, list[SpanNode]] = {}
    for trace_id, nodes in by_trace.items():
        by_id = {node.span_id: node for node in nodes}
        roots: list[SpanNode] = []
        for node in nodes:
            parent = by_id.get(str(node.raw.get("parentSpanId") or ""))
            (parent.children if parent is not None and parent is not node else roots).append(node)
        for node in nodes:
            node.children.sort(key=lambda c: (c.start, c.end))
        roots.sort(key=lambda c: (c.start, c.end))
        traces[trace_id] = roots
    return dict(sorted(traces.items(), key=lambda kv: kv[1][0].start if kv[1] else 0))


def failed_upstreams(
    task: str, deps: Mapping[str, Sequence[str]], states: Mapping[str, str]
) -> list[str]:
    """The FAILED (or CANCELLED) tasks upstream of ``task`` that made it UPSTREAM_FAILED.

    Follows the deps that ended FAILED, UPSTREAM_FAILED or CANCELLED up to the tasks that
    failed themselves, in the DAG's order of ``deps``; empty when none did.
    """
    causes: dict[str, None] = {}
    seen: set[str] = set()
    stack = [task]
    while stack:
        for dep in deps.get(stack.pop(), ()):
            state = states.get(dep)
            if dep in seen or state not in NOT_OK:
                continue
            seen.add(dep)
            if state == "upstream_failed":
                stack.append(dep)
            else:
                causes[dep] = None
    return list(causes)


@final
class Task:
    """One task of a run: its attempts (spans), final state and deps.

    ``cause``: for a task that never ran because of a failure upstream, the tasks whose
    failure it was.
    """

    __slots__ = ("attempts", "cause", "deps", "id", "recorded", "state")

    def __init__(self, task_id: str, deps: Sequence[str]) -> None:
        self.id = task_id
        self.deps = list(deps)
        self.attempts: list[SpanNode] = []
        self.state = "unknown"
        self.recorded = False  # False: no span or event says the state; it was inferred
        self.cause: list[str] = []

    @property
    def ran(self) -> bool:
        """Whether the task started at least one attempt."""
        return bool(self.attempts)


@final
class Run:
    """One DAG run in a trace file: its span and its tasks in the DAG's order."""

    __slots__ = ("graph", "nested", "span", "tasks")

    def __init__(self, span: SpanNode) -> None:
        self.span = span
        self.nested = False  # below another run's span (an agent run in a task's body)
        self.tasks: dict[str, Task] = {}
        self.graph = False  # True when the run span carries the DAG's shape
        deps = _deps(span.attributes.get(n.ATTR_DAG_DEPS))
        if deps is not None:
            self.graph = True
            for task_id, on in deps.items():
                self.tasks[task_id] = Task(task_id, on)
        for child in span.children:
            if child.attempt is None or n.ATTR_TASK_ID not in child.attributes:
                continue
            task_id = str(child.attributes[n.ATTR_TASK_ID])
            task = self.tasks.get(task_id)
            if task is None:
                task = self.tasks[task_id] = Task(task_id, ())
            task.attempts.append(child)
        for task in self.tasks.values():
            task.attempts.sort(key=lambda a: (a.attempt or 0, a.start))
            if task.attempts:
                task.state = str(task.attempts[-1].attributes.get(n.ATTR_TASK_STATE, "unknown"))
                task.recorded = n.ATTR_TASK_STATE in task.attempts[-1].attributes
        for name, event in span.events:
            if name == n.EVENT_TASK_NOT_RUN:
                not_run = str(event.get(n.ATTR_TASK_ID))
                task = self.tasks.get(not_run)
                if task is None:
                    task = self.tasks[not_run] = Task(not_run, ())
                if not task.attempts:
                    task.state = str(event.get(n.ATTR_TASK_STATE, "unknown"))
                    task.recorded = True
        self._infer()

    def _infer(self) -> None:
        # A span keeps 128 events by default: past that, a task that never ran has no
        # record. Its state follows from its deps under the default trigger rule.
        deps = {t.id: t.deps for t in self.tasks.values()}
        states = {t.id: t.state for t in self.tasks.values()}
        for task in self.tasks.values():  # the DAG's order: deps first
            if task.recorded or task.ran:
                continue
            upstream = [states.get(d) for d in task.deps]
            if any(s in NOT_OK for s in upstream):
                task.state = "upstream_failed"
            elif any(s == "skipped" for s in upstream):
                task.state = "skipped"
            states[task.id] = task.state
        for task in self.tasks.values():
            if task.state == "upstream_failed":
                task.cause = failed_upstreams(task.id, deps, states)

    @property
    def run_id(self) -> str:
        """The run's id."""
        return str(self.span.attributes.get(n.ATTR_RUN_ID, ""))

    @property
    def dag(self) -> str:
        """The DAG's name."""
        name = self.span.attributes.get(n.ATTR_DAG_NAME)
        return str(name) if name is not None else self.span.name.removeprefix("run ")

    @property
    def budget(self) -> str | None:
        """The run's budget use, ``budget: tool calls 2/2, model calls 3/20`` (None: none)."""
        attributes = self.span.attributes
        prefix, kinds = n.ATTR_BUDGET_PREFIX, []
        for key, limit in attributes.items():
            if key.startswith(prefix) and key.endswith(".limit"):
                kind = key[len(prefix) : -len(".limit")]
                used = attributes.get(f"{prefix}{kind}.used", 0)
                kinds.append(f"{kind.replace('_', ' ')} {_figure(used)}/{_figure(limit)}")
        return "budget: " + ", ".join(kinds) if kinds else None

    @property
    def ok(self) -> bool | None:
        """Whether the run ended ok (None if the span does not say)."""
        ok = self.span.attributes.get(n.ATTR_RUN_OK)
        return None if ok is None else bool(ok)

    @property
    def dropped_events(self) -> int:
        """How many events of the run span the SDK dropped (its span limits)."""
        return int(self.span.raw.get("droppedEventsCount") or 0)

    def counts(self) -> dict[str, int]:
        """How many tasks ended in each state, most frequent first."""
        counts: dict[str, int] = defaultdict(int)
        for task in self.tasks.values():
            counts[task.state] += 1
        return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _deps(value: object) -> dict[str, list[str]] | None:
    if not isinstance(value, str):
        return None
    try:
        deps = json.loads(value)
    except ValueError:  # cut by an attribute length limit
        return None
    if not isinstance(deps, dict):
        return None
    return {str(k): [str(d) for d in v] for k, v in deps.items() if isinstance(v, list)}


def _runs_below(node: SpanNode, inside: bool) -> Iterator[Run]:
    """The runs of ``node``'s tree; ``inside``: it is below a run's span."""
    is_run = n.ATTR_RUN_ID in node.attributes
    if is_run:
        run = Run(node)
        run.nested = inside
        yield run
    for child in node.children:
        yield from _runs_below(child, inside or is_run)


def find_runs(traces: Mapping[str, Sequence[SpanNode]]) -> list[Run]:
    """Every DAG run in the span trees (an agent run in a task's body too), by start time."""
    runs = [run for roots in traces.values() for root in roots for run in _runs_below(root, False)]
    return sorted(runs, key=lambda r: r.span.start)


def select_run(runs: Sequence[Run], run_id: str | None) -> Run:
    """The run with this id (or a unique prefix of it); for None, the last outer run.

    An outer run is not inside another: a DAG run, not the agent run of one of its tasks.

    Raises:
        LookupError: no run matches, or a prefix matches several; the message lists the
            runs in the file.
    """
    if not runs:
        raise LookupError("no DAG run in the file")
    if run_id is None:
        return next((r for r in reversed(runs) if not r.nested), runs[-1])
    exact = [r for r in runs if r.run_id == run_id]
    matches = exact or [r for r in runs if r.run_id.startswith(run_id)]
    if len(matches) == 1:
        return matches[0]
    listed = ", ".join(f"{r.run_id} ({r.dag})" for r in runs)
    what = "several runs start with" if matches else "no run"
    raise LookupError(f"{what} {run_id!r}; the runs in the file: {listed}")


def _figure(value: Any) -> str:
    """A budget figure as a person reads it: 3, 0.0125."""
    return f"{value:.4f}".rstrip("0").rstrip(".") if isinstance(value, float) else str(value)
