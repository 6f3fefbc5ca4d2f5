"""``orchestra trace show|report FILE``: a trace file as a terminal waterfall or a page."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Final

import click
from rich import box
from rich.bar import Bar
from rich.console import Console
from rich.table import Table
from rich.text import Text

from orchestra.cli._facts import Fact, facts, folded_facts
from orchestra.cli._tracefile import (
    NOT_OK,
    Run,
    SpanNode,
    build_traces,
    find_runs,
    select_run,
)
from orchestra.tracing import names as n
from orchestra.tracing._otlp_json import read_jsonl

__all__ = ["print_tracebacks", "render", "render_run", "trace"]

STATE_STYLE: Final = {
    "succeeded": "green",
    "failed": "bold red",
    "upstream_failed": "red",
    "cancelled": "magenta",
    "skipped": "yellow",
    n.STATE_RETRYING: "yellow",
}
"""The colour of each task state, in the terminal."""
_NARROW: Final = 120
"""Below this width, the waterfall's narrow layout."""
_FACTS_MIN: Final = 24
TRACEBACKS_SHOWN: Final = 3
"""How many distinct tracebacks of failed tasks are printed below a table."""
_ROLE_STYLE: Final = {
    "ok": "green",
    "bad": "bold red",
    "decision": "bold yellow",
    "decision-bad": "bold red",
    "audit": "bold magenta",
    "who": "cyan",
    "dim": "dim",
    "error": "red",
}


def duration(nanos: float) -> str:
    """A duration in nanoseconds, for people (``215.4 ms``)."""
    seconds = nanos / 1e9
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds * 1e6:.0f} µs"


def _style(role: str) -> str:
    if role.startswith("state-"):
        return STATE_STYLE.get(role.removeprefix("state-"), "")
    return _ROLE_STYLE.get(role, "")


def _text(said: Sequence[Fact]) -> Text:
    return Text("  ").join(Text.assemble(*((t, _style(r)) for t, r in fact)) for fact in said)


def _hooks_below(node: SpanNode) -> list[SpanNode]:
    """The hook calls folded into ``node``'s line: its hook children and what they nest."""
    return [h for child in node.children if child.is_hook for h in child.walk()]


def _walk(
    nodes: Sequence[SpanNode], keep: set[str] | None, hooks: bool, prefix: str = ""
) -> Iterator[tuple[str, SpanNode]]:
    shown = [c for c in nodes if (hooks or not c.is_hook) and (keep is None or c.span_id in keep)]
    for i, node in enumerate(shown):
        last = i == len(shown) - 1
        yield prefix + ("└─ " if last else "├─ "), node
        yield from _walk(node.children, keep, hooks, prefix + ("   " if last else "│  "))


def _failed_paths(run: Run) -> set[str]:
    """The span ids on the paths from the run span to what failed."""
    keep = {run.span.span_id}
    for task in run.tasks.values():
        if task.state not in NOT_OK:
            continue
        for attempt in task.attempts:
            keep.update(node.span_id for node in attempt.walk())
    return keep


def _table(title: str, console: Console) -> tuple[Table, int]:
    """The waterfall's table; below ``_NARROW`` columns, one that keeps room for the facts.

    In a narrow terminal (80 columns, or a pipe) the bar is shorter, the table has no
    vertical rules, and a span's name (a deep tree's, a long task id) is cut with an
    ellipsis at 9/32 of the width (22 of 80), so the facts keep ``_FACTS_MIN`` columns.
    """
    width = console.width
    bar_width = max(9, min(32, width // 6 if width >= _NARROW else width // 9))
    narrow = width < _NARROW
    table = Table(
        title=title,
        title_justify="left",
        expand=False,
        show_lines=False,
        box=box.SIMPLE_HEAD if narrow else box.HEAVY_HEAD,
        show_edge=not narrow,
        pad_edge=not narrow,
        collapse_padding=narrow,
    )
    table.add_column(
        "span",
        no_wrap=True,
        overflow="ellipsis",
        max_width=max(16, width * 9 // 32) if narrow else None,
    )
    table.add_column("waterfall", width=bar_width, no_wrap=True)
    table.add_column("duration", justify="right", no_wrap=True)
    table.add_column("state, attempt, decisions", ratio=1, min_width=_FACTS_MIN)
    return table, bar_width


def _rows(
    table: Table,
    bar_width: int,
    lines: Sequence[tuple[str, SpanNode]],
    hooks: bool,
) -> None:
    nodes = [node for _, node in lines]
    t0 = min(node.start for node in nodes)
    total = max(max(node.end for node in nodes) - t0, 1)
    attempts = {node.span_id: a for node in nodes if (a := node.attempt) is not None}
    for prefix, node in lines:
        name = Text(prefix, style="dim")
        name.append(node.name, style="bold red" if node.error else "bold")
        color = "red" if node.error else "green"
        state = node.attributes.get(n.ATTR_TASK_STATE)
        if state in STATE_STYLE and not node.error:
            color = STATE_STYLE[str(state)].removeprefix("bold ")
        said = facts(node, attempts)
        if not hooks:
            said += folded_facts(node, _hooks_below(node))
        table.add_row(
            name,
            Bar(total, node.start - t0, node.end - t0, width=bar_width, color=color),
            duration(node.end - node.start),
            _text(said),
        )


def print_tracebacks(
    console: Console, tracebacks: Iterable[tuple[str, str]], *, elsewhere: str
) -> None:
    """Print each distinct traceback of ``(task id, traceback)`` once, the first few only.

    ``elsewhere`` says where the ones left out can be read.
    """
    by_text: dict[str, list[str]] = {}
    for task_id, text in tracebacks:
        by_text.setdefault(text, []).append(task_id)
    for text, task_ids in list(by_text.items())[:TRACEBACKS_SHOWN]:
        more = f" (and {len(task_ids) - 1} more)" if len(task_ids) > 1 else ""
        console.print(Text(f"{task_ids[0]}{more} failed:", style="bold red"), soft_wrap=True)
        console.print(Text(text), soft_wrap=True)
    left = len(by_text) - TRACEBACKS_SHOWN
    if left > 0:
        console.print(Text(f"({left} other traceback(s): {elsewhere})", "dim"), soft_wrap=True)


def _failed_tracebacks(run: Run) -> Iterator[tuple[str, str]]:
    for task in run.tasks.values():
        if task.state == "failed" and task.attempts:
            text = task.attempts[-1].traceback
            if text is not None:
                yield task.id, text


def render_run(run: Run, console: Console, *, failed: bool = False, hooks: bool = False) -> None:
    """Print one DAG run as a tree with a waterfall.

    Args:
        run: the run.
        console: where to print.
        failed: only the paths to the tasks that did not end ok, and those tasks.
        hooks: a line per hook call, instead of folding them into their span's line.
    """
    counts = run.counts()
    states = "  ".join(f"{count} {state}" for state, count in counts.items())
    ok = {True: "ok", False: "failed", None: "unfinished"}[run.ok]
    took = duration(run.span.end - run.span.start)
    parts = (f"run {run.dag}", run.run_id, ok, states, took)  # an agent run has no tasks
    title = "  ·  ".join(part for part in parts if part)
    budget = [Text(run.budget)] if run.budget is not None else []  # whole, never cut
    keep = _failed_paths(run) if failed else None
    lines = [("", run.span), *_walk(run.span.children, keep, hooks)]
    if failed and len(lines) == 1 and not any(t.state in NOT_OK for t in run.tasks.values()):
        console.print(Text(title), *budget, Text("nothing failed", style="green"), sep="\n")
        return
    table, bar_width = _table(title, console)
    _rows(table, bar_width, lines, hooks)
    for task in run.tasks.values():
        if task.ran or (failed and task.state not in NOT_OK):
            continue
        why = Text(f"not run: {task.state}", style=STATE_STYLE.get(task.state, "dim"))
        if task.cause:
            why.append(f" ({', '.join(task.cause)} failed)")
        if not task.recorded:
            why.append("  inferred from its deps", style="dim")
        table.add_row(Text(f"·  task {task.id}", style="dim"), "", "", why)
    console.print(table)
    if budget:
        console.print(*budget, soft_wrap=True)
    if failed:
        print_tracebacks(console, _failed_tracebacks(run), elsewhere="orchestra trace report")
    if run.dropped_events:
        console.print(
            Text(
                f"note: the SDK dropped {run.dropped_events} event(s) of the run span "
                "(its span limits); states of tasks that never ran were inferred",
                style="dim",
            ),
            soft_wrap=True,
        )


def render(spans: Sequence[dict[str, Any]], console: Console, *, hooks: bool = True) -> None:
    """Print every trace in ``spans`` as a tree with a waterfall (files with no DAG run)."""
    for trace_id, roots in build_traces(spans).items():
        lines = [
            line for root in roots for line in [("", root), *_walk(root.children, None, hooks)]
        ]
        title = f"trace {trace_id}  ·  {len(lines)} spans"
        table, bar_width = _table(title, console)
        _rows(table, bar_width, lines, hooks)
        console.print(table)


def _console(width: int | None) -> Console:
    if width is None and not sys.stdout.isatty() and "COLUMNS" not in os.environ:
        width = 160  # off a terminal (CI, a pipe), a waterfall needs room
    return Console(width=width, highlight=False)


def _read(path: Path) -> list[dict[str, Any]]:
    try:
        return read_jsonl(path)
    except (OSError, ValueError) as exc:
        raise click.ClickException(str(exc)) from None


@click.group("trace")
def trace() -> None:
    """Read trace files (OTLP JSON), as written by orchestra run --trace."""


@trace.command("show")
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--run", "run_id", metavar="RUN_ID", help="The run to show (default: the last).")
@click.option("--failed", is_flag=True, help="Only the paths to the tasks that did not end ok.")
@click.option("--hooks", is_flag=True, help="A line per hook call (default: folded).")
@click.option("--width", type=int, default=None, help="Terminal width (default: detected).")
def show(path: Path, run_id: str | None, failed: bool, hooks: bool, width: int | None) -> None:
    """Show a run of a trace file as a span tree with a waterfall.

    Durations, task states, attempts, the decisions taken and who took them. Hook calls
    are folded into the line of the task, agent or tool they were called for (their
    count, and the decisions and errors that line does not show already).
    """
    spans = _read(path)
    console = _console(width)
    if not spans:
        console.print(f"{path}: no spans")
        return
    traces = build_traces(spans)
    runs = find_runs(traces)
    if not runs and run_id is None and not failed:
        render(spans, console, hooks=hooks)  # spans of something else than a DAG run
        return
    try:
        run = select_run(runs, run_id)
    except LookupError as exc:
        raise click.ClickException(f"{path}: {exc}") from None
    render_run(run, console, failed=failed, hooks=hooks)
    others = len(runs) - 1
    if others and run_id is None:
        console.print(
            Text(f"({others} earlier run(s) in the file: pick one with --run RUN_ID)", "dim"),
            soft_wrap=True,
        )


@trace.command("report")
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    default=None,
    help="The HTML file to write (default: FILE with .html).",
)
@click.option("--run", "run_id", metavar="RUN_ID", help="The run to show (default: the last).")
def report(path: Path, output: Path | None, run_id: str | None) -> None:
    """Write a run of a trace file as one self-contained HTML page.

    The DAG as a graph coloured by state, a waterfall of attempts with retries linked,
    decisions and who took them, hook calls; click a task to see its attempts. The page
    needs no network; laying out the graph needs Graphviz's dot.
    """
    from orchestra.cli._report import write_report

    output = output or path.with_suffix(".html")
    spans = _read(path)
    try:
        run = select_run(find_runs(build_traces(spans)), run_id)
    except LookupError as exc:
        raise click.ClickException(f"{path}: {exc}") from None
    warning = write_report(run, output, source=path.name)
    if warning:
        click.echo(f"warning: {warning}", err=True)
    click.echo(f"report written to {output}")
