"""``orchestra trace show FILE.jsonl``: a trace file as a terminal waterfall."""

from __future__ import annotations

import os
import sys
from collections import defaultdict
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Final, final

import click
from rich.bar import Bar
from rich.console import Console
from rich.table import Table
from rich.text import Text

from orchestra.tracing import _names as n
from orchestra.tracing._otlp_json import decode_attributes, read_jsonl

__all__ = ["trace"]

_ERROR: Final = 2
_STATE_STYLE: Final = {
    "succeeded": "green",
    "failed": "red",
    "upstream_failed": "red",
    "cancelled": "magenta",
    "skipped": "yellow",
    n.STATE_RETRYING: "yellow",
}


@final
class SpanNode:
    """One span of a trace file, decoded, with its children (internal)."""

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
    def error(self) -> str | None:
        """The status message of a span with status ERROR, else None."""
        status = self.raw.get("status") or {}
        if status.get("code") in (_ERROR, "STATUS_CODE_ERROR"):
            return str(status.get("message") or "error")
        return None


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


def _duration(nanos: int) -> str:
    seconds = nanos / 1e9
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds * 1e6:.0f} µs"


def _decision(attributes: dict[str, Any]) -> Text | None:
    kind = attributes.get(n.ATTR_DECISION)
    if kind is None:
        return None
    style = "red" if kind in ("fail", "deny", "block") else "yellow"
    text = Text(str(kind), style=f"bold {style}")
    delay = attributes.get(n.ATTR_DECISION_DELAY)
    if delay:
        text.append(f" after {delay:g} s")
    agent = attributes.get(n.ATTR_DECISION_AGENT)
    if agent:
        text.append(f" to {agent}")
    by = attributes.get(n.ATTR_DECISION_BY)
    if by:
        text.append(" by ")
        text.append(str(by), style="cyan")
    reason = attributes.get(n.ATTR_DECISION_REASON)
    if reason:
        text.append(f": {reason}")
    return text


def _details(node: SpanNode, attempts: dict[str, int]) -> Text:
    """The state, attempt, decision and error of one span, as one line of text."""
    a = node.attributes
    parts: list[Text] = []
    state = a.get(n.ATTR_TASK_STATE)
    if state is not None:
        parts.append(Text(str(state), style=_STATE_STYLE.get(str(state), "")))
    if n.ATTR_RUN_OK in a:
        ok = bool(a[n.ATTR_RUN_OK])
        parts.append(Text("ok" if ok else "failed", style="green" if ok else "bold red"))
        if a.get(n.ATTR_RUN_FAILED):
            parts.append(Text(f"{a[n.ATTR_RUN_FAILED]} task(s) not ok", style="red"))
    attempt = a.get(n.ATTR_TASK_ATTEMPT, a.get(n.ATTR_AGENT_ATTEMPT))
    if attempt is not None:
        text = Text(f"attempt {attempt}")
        previous = [attempts[s] for s in node.links if s in attempts]
        if previous:
            text.append(f" (after {previous[0]})", style="dim")
        parts.append(text)
    if n.ATTR_HOOK_TYPE in a:
        text = Text(str(a[n.ATTR_HOOK_TYPE]), style="dim")
        name = a.get(n.ATTR_HOOK_NAME)
        if name and a[n.ATTR_HOOK_TYPE] == "python":
            text.append(f" {name}", style="cyan")
        source = a.get(n.ATTR_HOOK_SOURCE)
        if source:
            text.append(f" {source}", style="cyan")
        parts.append(text)
    if n.ATTR_PROCESS_EXIT_CODE in a:
        parts.append(Text(f"exit {a[n.ATTR_PROCESS_EXIT_CODE]}"))
    mode = a.get(n.ATTR_AGENT_MODE)
    if mode is not None:
        parts.append(Text(str(mode), style="dim"))
    delegated = a.get(n.ATTR_AGENT_DELEGATED_FROM)
    if delegated:
        parts.append(Text("delegated from " + ", ".join(map(str, delegated)), style="dim"))
    tool_decision = a.get(n.ATTR_TOOL_DECISION)
    if tool_decision is not None:
        parts.append(Text(str(tool_decision), style="green" if tool_decision == "allow" else "red"))
    decision = _decision(a)
    if decision is not None:
        parts.append(decision)
    for name, event in node.events:
        if name == n.EVENT_HOOK_ERROR:
            parts.append(
                Text(
                    f"hook error in {event.get(n.ATTR_HOOK_NAME)}: "
                    f"{event.get('exception.message', '')}",
                    style="red",
                )
            )
    error = node.error
    if error is not None and n.ATTR_RUN_OK not in a:
        parts.append(Text(error, style="red"))
    return Text("  ").join(parts)


def _walk(
    nodes: Sequence[SpanNode], prefix: str = "", root: bool = True
) -> Iterator[tuple[str, SpanNode]]:
    for i, node in enumerate(nodes):
        last = i == len(nodes) - 1
        if root:
            yield "", node
            yield from _walk(node.children, "", root=False)
            continue
        yield prefix + ("└─ " if last else "├─ "), node
        yield from _walk(node.children, prefix + ("   " if last else "│  "), root=False)


def render(spans: Sequence[dict[str, Any]], console: Console) -> None:
    """Print every trace in ``spans`` as a tree with a waterfall."""
    bar_width = max(10, min(32, console.width // 6))
    for trace_id, roots in build_traces(spans).items():
        everything = list(_walk(roots))
        t0 = min(node.start for _, node in everything)
        t1 = max(node.end for _, node in everything)
        total = max(t1 - t0, 1)
        attempts = {
            node.span_id: int(node.attributes[n.ATTR_TASK_ATTEMPT])
            for _, node in everything
            if n.ATTR_TASK_ATTEMPT in node.attributes
        }
        table = Table(
            title=f"trace {trace_id}  ·  {len(everything)} spans  ·  {_duration(t1 - t0)}",
            title_justify="left",
            expand=False,
            show_lines=False,
        )
        table.add_column("span", no_wrap=True)
        table.add_column("waterfall", width=bar_width, no_wrap=True)
        table.add_column("duration", justify="right", no_wrap=True)
        table.add_column("state, attempt, decisions", ratio=1)
        for prefix, node in everything:
            name = Text(prefix, style="dim")
            name.append(node.name, style="bold red" if node.error else "bold")
            color = "red" if node.error else "green"
            state = node.attributes.get(n.ATTR_TASK_STATE)
            if state in _STATE_STYLE and not node.error:
                color = _STATE_STYLE[str(state)]
            table.add_row(
                name,
                Bar(total, node.start - t0, node.end - t0, width=bar_width, color=color),
                _duration(node.end - node.start),
                _details(node, attempts),
            )
        for _, node in everything:
            for event_name, event in node.events:
                if event_name == n.EVENT_TASK_NOT_RUN:
                    state = str(event.get(n.ATTR_TASK_STATE))
                    table.add_row(
                        Text(f"·  task {event.get(n.ATTR_TASK_ID)}", style="dim"),
                        "",
                        "",
                        Text(f"not run: {state}", style=_STATE_STYLE.get(state, "dim")),
                    )
        console.print(table)


@click.group("trace")
def trace() -> None:
    """Read JSONL trace files, as written by orchestra run --trace."""


@trace.command("show")
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--width", type=int, default=None, help="Terminal width (default: detected).")
def show(path: Path, width: int | None) -> None:
    """Show the span tree of a JSONL trace file as a terminal waterfall.

    Durations, task states, attempts, the decisions taken and who took them.
    """
    try:
        spans = read_jsonl(path)
    except (OSError, ValueError) as exc:
        raise click.ClickException(str(exc)) from None
    if width is None and not sys.stdout.isatty() and "COLUMNS" not in os.environ:
        width = 160  # off a terminal (CI, a pipe), a waterfall needs room
    console = Console(width=width, highlight=False)
    if not spans:
        console.print(f"{path}: no spans")
        return
    render(spans, console)
