"""``orchestra trace report``: one run as one self-contained HTML page (internal).

The page holds everything it shows: the run's data as JSON, the DAG as an inline SVG,
and its own CSS and JavaScript (``report_assets/``). It loads nothing when opened.

The graph is laid out by Graphviz's ``dot`` when the report is made, not in the
browser: ``dot`` lays out 1,000 tasks in well under a second, so the page opens at
once, where JavaScript layout libraries inlined into the page take seconds for a graph
that size. Without ``dot`` on the PATH, the page is written without the graph (and says
how to get it).
"""

from __future__ import annotations

import html
import json
import math
import re
import shutil
import subprocess
from collections.abc import Callable, Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from orchestra.cli._facts import facts
from orchestra.cli._tracefile import (
    Run,
    SpanNode,
    Task,
    build_traces,
    find_runs,
    select_run,
)
from orchestra.tracing import ENV_TRACING
from orchestra.tracing._otlp_json import encode_request, spans_of

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan

__all__ = ["build_html", "write_report", "write_report_of_spans"]

DOT_TIMEOUT: Final = 120.0
"""Seconds ``dot`` may take to lay out the graph."""
NO_DOT: Final = (
    "Graphviz's dot was not found, so the report has no graph: install Graphviz "
    "(apt-get install graphviz, brew install graphviz, or graphviz.org) and run it again"
)
_SVG_NOISE: Final = re.compile(
    r"<\?xml[^>]*\?>|<!DOCTYPE[^>]*>|<!--.*?-->|<title>.*?</title>"
    r'|<polygon fill="transparent"[^>]*/>'  # the background
    r'| (?:fill|stroke|stroke-width|font-family)="[^"]*"',  # the page's CSS draws these
    re.S,
)
_SVG_NUMBERS: Final = re.compile(r'( (?:points|d|x|y|viewBox|transform)=")([^"]*)"')
_DECIMALS: Final = re.compile(r"(\d\.\d)\d+")


def _ms(nanos: int) -> float:
    return round(nanos / 1e6, 3)


def _calls(attempt: SpanNode, t0: int, attempts: dict[str, int]) -> list[list[Any]]:
    """Every span below an attempt (hook calls, agents, tools), depth first."""
    out: list[list[Any]] = []

    def visit(node: SpanNode, depth: int) -> None:
        for child in node.children:
            out.append(
                [
                    depth,
                    child.name,
                    _ms(child.start - t0),
                    _ms(child.end - child.start),
                    1 if child.is_hook else 0,
                    facts(child, attempts),
                ]
            )
            visit(child, depth + 1)

    visit(attempt, 0)
    return out


def _task_data(
    task: Task, index: dict[str, int], t0: int, attempts: dict[str, int]
) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": task.id,
        "state": task.state,
        "deps": [index[d] for d in task.deps if d in index],
        "attempts": [
            {
                "n": attempt.attempt,
                "s": _ms(attempt.start - t0),
                "d": _ms(attempt.end - attempt.start),
                "state": attempt.attributes.get("orchestra.task.state", "unknown"),
                "facts": facts(attempt, attempts),
                "calls": _calls(attempt, t0, attempts),
            }
            for attempt in task.attempts
        ],
    }
    for attempt, shown in zip(task.attempts, data["attempts"], strict=True):
        text = attempt.traceback
        if text is not None:
            shown["tb"] = text
    if task.cause:
        data["cause"] = [index[c] for c in task.cause if c in index]
    if not task.recorded and not task.ran:
        data["inferred"] = True
    return data


def run_data(run: Run, *, source: str) -> dict[str, Any]:
    """What the page shows, as JSON-ready data."""
    t0 = run.span.start
    index = {task_id: i for i, task_id in enumerate(run.tasks)}
    attempts = {a.span_id: a.attempt or 0 for t in run.tasks.values() for a in t.attempts}
    return {
        "run": {
            "dag": run.dag,
            "id": run.run_id,
            "ok": run.ok,
            "duration": _ms(run.span.end - t0),
            "source": source,
            "graph": run.graph,
            "dropped": run.dropped_events,
            "counts": run.counts(),
            "budget": run.budget,
            "fatal": next(
                (
                    f"{e.get('exception.type', 'error')}: {e.get('exception.message', '')}"
                    for name, e in run.span.events
                    if name == "exception"
                ),
                None,
            ),
        },
        "tasks": [_task_data(t, index, t0, attempts) for t in run.tasks.values()],
    }


def _dot_string(text: str) -> str:
    """``text`` as a quoted DOT label, shown as it is (its backslashes are no escapes)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ") + '"'


def _components(run: Run) -> list[list[int]]:
    """The DAG's weakly connected components, as task indices; each and all in task order."""
    index = {task_id: i for i, task_id in enumerate(run.tasks)}
    parent = list(range(len(index)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, task in enumerate(run.tasks.values()):
        for dep in task.deps:
            if dep in index:
                parent[root(index[dep])] = root(i)
    groups: dict[int, list[int]] = {}
    for i in range(len(index)):
        groups.setdefault(root(i), []).append(i)
    return sorted(groups.values(), key=lambda group: group[0])


def dot_source(run: Run) -> str:
    """The run's DAG in the DOT language: node ``n{i}`` is task ``i``, edges from deps.

    Left to right, as a pipeline reads. Dot stacks a graph's connected components
    bottom-up in the order it reads them, so they are written last first, to read top
    down in the DAG's order. The tasks that stand alone (no deps, nothing depends on
    them) would make one tall column: they are laid out as a grid of rows in the DAG's
    order, below the rest, each row held by invisible edges.
    """
    lines = [
        "digraph dag {",
        '  graph [rankdir=LR, nodesep=0.12, ranksep=0.3, bgcolor="transparent", pad=0.1];',
        '  node [shape=box, style=filled, fontname="Helvetica", fontsize=11, height=0.3,'
        ' margin="0.1,0.03"];',
        "  edge [arrowsize=0.6];",
    ]
    index = {task_id: i for i, task_id in enumerate(run.tasks)}
    tasks = list(run.tasks.values())

    def node(i: int) -> str:
        label = _dot_string(tasks[i].id)
        if len(tasks[i].attempts) > 1:  # a second line
            label = f'{label[:-1]}\\n{len(tasks[i].attempts)} attempts"'
        return f'  n{i} [id="n{i}", label={label}];'

    components = _components(run)
    alone = [group[0] for group in components if len(group) == 1]
    if len(alone) > 1:
        lines += _grid(alone, node)
    for group in reversed(components):
        if len(group) == 1 and len(alone) > 1:
            continue
        lines += [node(i) for i in group]
        for i in group:
            lines += [
                f'  n{index[dep]} -> n{i} [id="e{index[dep]}_{i}"];'
                for dep in tasks[i].deps
                if dep in index
            ]
    lines.append("}")
    return "\n".join(lines)


def _grid(alone: Sequence[int], node: Callable[[int], str]) -> list[str]:
    """Tasks that stand alone as rows of about the square root of their count.

    Each row is a chain of invisible edges, a component of its own: written last first.
    """
    width = max(2, math.isqrt(len(alone) - 1) + 1)
    lines: list[str] = []
    for start in reversed(range(0, len(alone), width)):
        row = alone[start : start + width]
        lines += [node(i) for i in row]
        if len(row) > 1:
            lines.append(f"  {' -> '.join(f'n{i}' for i in row)} [style=invis];")
    return lines


def _compact(svg: str) -> str:
    """Dot's SVG without what the page's CSS draws, comments and titles; 1-decimal numbers."""
    svg = _SVG_NOISE.sub("", svg)
    svg = _SVG_NUMBERS.sub(lambda m: m[1] + _DECIMALS.sub(r"\1", m[2]) + '"', svg)
    return "\n".join(line for line in svg.splitlines() if line.strip())


def graph_svg(run: Run) -> tuple[str | None, str | None]:
    """The DAG laid out by Graphviz's ``dot``, as inline SVG; or None and why not."""
    dot = shutil.which("dot")
    if dot is None:
        return None, NO_DOT
    try:
        done = subprocess.run(
            [dot, "-Tsvg"],
            input=dot_source(run),
            capture_output=True,
            text=True,
            timeout=DOT_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"Graphviz's dot could not lay out the graph ({exc}): no graph"
    if done.returncode != 0:
        error = done.stderr.strip().splitlines()[-1:] or ["no message"]
        return None, f"Graphviz's dot failed ({error[0]}): no graph"
    return _compact(done.stdout), None


def _asset(name: str) -> str:
    return resources.files("orchestra.cli").joinpath("report_assets", name).read_text("utf-8")


def _script_json(data: object) -> str:
    # Inside <script>: no "</script>", no "<!--"; JSON.parse reads \u003c back.
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def build_html(run: Run, *, source: str) -> tuple[str, str | None]:
    """The page of one run, and a warning (no graph) or None."""
    svg, warning = graph_svg(run)
    data = run_data(run, source=source)
    data["run"]["graphNote"] = warning
    page = _asset("report.html")
    parts = {
        "<!--TITLE-->": html.escape(f"run {run.dag} · orchestra"),
        "/*CSS*/": _asset("report.css"),
        "<!--SVG-->": svg or "",
        "/*DATA*/": _script_json(data),
        "/*JS*/": _asset("report.js"),
    }
    for marker, text in parts.items():
        page = page.replace(marker, text, 1)
    return page, warning


def write_report(run: Run, out: Path, *, source: str) -> str | None:
    """Write the page of one run to ``out``; return a warning (no graph) or None."""
    page, warning = build_html(run, source=source)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page, encoding="utf-8")
    return warning


def write_report_of_spans(spans: Sequence[ReadableSpan], out: Path, *, run_id: str) -> str | None:
    """Write the page of run ``run_id`` from finished SDK spans (``orchestra run --report``).

    Returns a warning (no graph; no page when the run made no spans) or None.
    """
    raw = list(spans_of(encode_request(spans))) if spans else []
    try:
        run = select_run(find_runs(build_traces(raw)), run_id)
    except LookupError:
        return f"no report: the run made no spans (is tracing switched off, {ENV_TRACING}?)"
    return write_report(run, out, source="orchestra run")  # the header shows the run id
