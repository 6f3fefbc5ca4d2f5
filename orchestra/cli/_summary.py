"""What ``orchestra run`` prints once a run is over (internal).

The tasks that did not succeed, and those reused from an earlier run (every task with
``--all``), with why: the error and the line of the user's code that raised it, the
decision's reason and who took it, the run a task was reused from, or for UPSTREAM_FAILED
the upstream tasks that failed. Then the failing frames of the first failed tasks (one
per distinct traceback, library frames folded: ``RunResult.tracebacks``).
Then where the trace and the report went, and one closing line: the DAG, ok or failed, the counts
by state and the run's duration (``RunResult.duration``, the one duration shown).
"""

from __future__ import annotations

from collections import Counter
from itertools import islice
from pathlib import Path
from typing import Final

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from orchestra import DAG, RunResult, TaskState
from orchestra._tracebacks import failing_frame, format_error, frames_of
from orchestra.cli._trace import STATE_STYLE, print_tracebacks
from orchestra.cli._tracefile import failed_upstreams

__all__ = ["print_summary"]

_NOT_OK: Final = (TaskState.FAILED, TaskState.UPSTREAM_FAILED, TaskState.CANCELLED)
_WIDE_REST: Final = 48  # the wide table but the task and why columns: state, numbers, rules
_WHY_MIN: Final = 24
_SCANNED: Final = 1000


def _why(task_id: str, result: RunResult, dag: DAG, states: dict[str, str]) -> str:
    state = result.states[task_id]
    if state is TaskState.UPSTREAM_FAILED:
        deps = {t.id: t.deps for t in dag.tasks.values()}
        causes = failed_upstreams(task_id, deps, states)
        if causes:
            return f"{', '.join(causes)} failed upstream"
    if task_id in result.reused:
        return f"reused from run {result.resumed_from}"
    why = result.reasons.get(task_id)
    error = result.errors.get(task_id)
    if error is not None:
        text = f"{type(error).__name__}: {error}"
        text = text if why is None or why in text else f"{text} ({why})"
        frame = failing_frame(frames_of(error))
        return text if frame is None else f"{text}\nat {frame.where}"
    return why or ""


def _tracebacks(console: Console, result: RunResult) -> None:
    """The failing frames of the first failed tasks, one traceback per distinct one.

    Formatting a traceback reads source lines: of a run with many failures, the first
    ``_SCANNED`` failed tasks are looked at (all are in ``RunResult.tracebacks``).
    """
    failed = (
        (task_id, text)
        for task_id, error in result.errors.items()
        if result.states.get(task_id) is TaskState.FAILED
        and (text := format_error(error)) is not None
    )
    print_tracebacks(
        console,
        islice(failed, _SCANNED),
        elsewhere="RunResult.tracebacks, or orchestra trace show --failed",
    )


def _table(result: RunResult, dag: DAG, show_all: bool, width: int) -> Table | None:
    """A column each (task, state, attempts, duration, why); stacked when that is too wide.

    In a narrow terminal (80 columns, a pipe) the state, attempts and duration share one
    column, a long task id folds at 30% of the width, and the why keeps the rest.
    """
    shown = [
        task_id
        for task_id, state in result.states.items()
        if show_all or state is not TaskState.SUCCEEDED or task_id in result.reused
    ]
    if not shown:
        return None
    states = {task_id: state.value for task_id, state in result.states.items()}
    rows = []
    for task_id in shown:
        state = result.states[task_id]
        seconds = result.durations.get(task_id)
        rows.append(
            (
                task_id,
                Text(state.value, style=STATE_STYLE.get(state.value, "")),
                str(result.attempts.get(task_id, 0)),
                "" if seconds is None else f"{seconds * 1e3:.1f} ms",
                _why(task_id, result, dag, states),
            )
        )
    wide_enough = max(len(r[0]) for r in rows) + _WIDE_REST + _WHY_MIN <= width
    return _wide(rows) if wide_enough else _narrow(rows, width)


def _wide(rows: list[tuple[str, Text, str, str, str]]) -> Table:
    table = Table(title_justify="left")
    table.add_column("task", no_wrap=True)
    table.add_column("state", no_wrap=True)
    table.add_column("attempts", justify="right")
    table.add_column("duration", justify="right")
    table.add_column("why")
    for row in rows:
        table.add_row(*row)
    return table


def _narrow(rows: list[tuple[str, Text, str, str, str]], width: int) -> Table:
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, collapse_padding=True)
    table.add_column("task", overflow="fold", max_width=max(12, width * 3 // 10))
    table.add_column("state\nattempts, duration", no_wrap=True)
    table.add_column("why", ratio=1, min_width=_WHY_MIN, overflow="fold")
    for task_id, state, attempts, took, why in rows:
        tries = f"{attempts} attempt{'s' if attempts != '1' else ''}"
        table.add_row(task_id, state + Text(f"\n{tries}{', ' + took if took else ''}"), why)
    return table


def print_summary(
    console: Console,
    result: RunResult,
    dag: DAG,
    *,
    show_all: bool = False,
    trace: Path | None = None,
    report: Path | None = None,
    journal: str | None = None,
) -> None:
    """Print the summary of a finished run.

    Args:
        console: where to print.
        result: the run's result.
        dag: the DAG that ran (for the deps of UPSTREAM_FAILED tasks).
        show_all: list every task, not only those that did not succeed.
        trace: the trace file written, if any.
        report: the HTML report written, if any.
        journal: the journal the run was written to, if any.
    """
    table = _table(result, dag, show_all, console.width)
    if table is not None:
        console.print(table)
    _tracebacks(console, result)
    if trace is not None:
        console.print(f"trace written to {trace}  (orchestra trace show {trace})", soft_wrap=True)
    if report is not None:
        console.print(f"report written to {report}", soft_wrap=True)
    if journal:
        console.print(
            f"journaled as run {result.run_id}  (orchestra runs show {journal})", soft_wrap=True
        )
    counts = Counter(state.value for state in result.states.values())
    by_state = ", ".join(
        f"{counts[state.value]} {state.value}" for state in TaskState if counts[state.value]
    )
    total = len(result.states)
    line = Text(f"run {dag.name} ")
    if result.ok:
        line.append("ok", "green")
        line.append(f": {total} task{'s' if total != 1 else ''}")
    else:
        bad = sum(1 for s in result.states.values() if s in _NOT_OK)
        line.append("failed", "bold red")
        line.append(f": {bad} of {total} tasks not ok")
    line.append(f" in {result.duration:.2f} s ({by_state})")
    console.print(line, soft_wrap=True)
