"""``orchestra runs list|show JOURNAL``: the runs a journal holds, and one run's tasks.

JOURNAL is a journal file (the embedded SQLite journal) or a ``postgresql://`` URL (with
``orchestra-hooks-postgres`` installed). Files are opened read-only.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Final

import click
from rich import box
from rich.console import Console
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from orchestra import JournalError, TaskState
from orchestra.journal import Journal, RunInfo, SQLiteJournal

__all__ = ["journal_arg", "open_journal", "runs"]

_STYLE: Final = {
    TaskState.SUCCEEDED.value: "green",
    TaskState.FAILED.value: "bold red",
    TaskState.UPSTREAM_FAILED.value: "red",
    TaskState.SKIPPED.value: "yellow",
    TaskState.CANCELLED.value: "magenta",
}
_ORDER: Final = [s.value for s in TaskState]
_URL_SCHEMES: Final = ("postgresql://", "postgres://")
_ID_WIDTH: Final = 32  # a run id: uuid4().hex
_WHEN_WIDTH: Final = 19  # YYYY-MM-DD HH:MM:SS; in 80 columns, a longer DAG name is cut


def journal_arg(target: str) -> str | Journal:
    """What ``run(journal=...)`` gets for a ``--journal`` value: a path, or a Postgres journal."""
    if not target.startswith(_URL_SCHEMES):
        return target
    try:
        from orchestra_postgres import PostgresJournal  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        raise click.ClickException(
            f"{target.split('://')[0]}:// journals need orchestra-hooks-postgres "
            "(pip install orchestra-hooks-postgres)"
        ) from None
    try:
        journal: Journal = PostgresJournal(target)
    except JournalError as exc:
        raise click.ClickException(str(exc)) from None
    return journal


@contextmanager
def open_journal(target: str) -> Iterator[Journal]:
    """Open JOURNAL for reading (a file read-only), and close it after."""
    opened = journal_arg(target)
    if isinstance(opened, str):
        try:
            opened = SQLiteJournal(opened, read_only=True)
        except JournalError as exc:
            raise click.ClickException(str(exc)) from None
    try:
        yield opened
    finally:
        opened.close()


def _when(started_at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(started_at))


def _states(run: RunInfo, sep: str = "  ") -> Text:
    text = Text()
    for state in sorted(run.states, key=lambda s: _ORDER.index(s) if s in _ORDER else 99):
        if text:
            text.append(sep)
        text.append(f"{run.states[state]} {state}", style=_STYLE.get(state, ""))
    unsettled = run.task_count - run.settled
    if unsettled > 0:
        text.append(f"{sep if text else ''}{unsettled} not settled", style="dim")
    return text


@click.group("runs")
def runs() -> None:
    """Runs kept in a journal (orchestra run --journal)."""


@runs.command("list")
@click.argument("journal", metavar="JOURNAL")
@click.option("--dag", "dag", metavar="NAME", help="Only the runs of this DAG.")
@click.option(
    "--limit", type=click.IntRange(min=1), default=20, show_default=True, help="How many runs."
)
def list_runs(journal: str, dag: str | None, limit: int) -> None:
    """List the latest runs in JOURNAL (a file, or a postgresql:// URL), newest first."""
    with open_journal(journal) as store:
        found = store.list_runs(dag, limit=limit)
    console = Console(highlight=False)
    if not found:
        console.print(f"no runs{f' of DAG {dag!r}' if dag else ''} in {journal}")
        return
    table = _wide_runs(journal, found)
    if (
        Measurement.get(console, console.options.update_width(10_000), table).maximum
        > console.width
    ):
        table = _narrow_runs(journal, found)
    console.print(table)


def _wide_runs(journal: str, found: Sequence[RunInfo]) -> Table:
    """A column each: run id, DAG, started, tasks, states, resumed from."""
    table = Table(title=f"runs in {journal}", title_justify="left")
    table.add_column("run id", no_wrap=True)
    table.add_column("DAG", no_wrap=True)
    table.add_column("started", no_wrap=True)
    table.add_column("tasks", justify="right")
    table.add_column("states")
    table.add_column("resumed from", no_wrap=True)
    for run in found:
        table.add_row(
            run.run_id,
            run.dag,
            _when(run.started_at),
            str(run.task_count),
            _states(run),
            run.resumed_from or "",
        )
    return table


def _narrow_runs(journal: str, found: Sequence[RunInfo]) -> Table:
    """The same columns in 80, stacked: what a run resumed under its id, when under the DAG.

    A run id keeps its 32 characters (to copy into ``runs show``); a long DAG name is cut
    with an ellipsis; one state a line.
    """
    table = Table(
        title=f"runs in {journal}",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        collapse_padding=True,
    )
    table.add_column("run id\n↳ resumed from", no_wrap=True, min_width=_ID_WIDTH)
    table.add_column("DAG\nstarted", no_wrap=True, overflow="ellipsis", max_width=_WHEN_WIDTH)
    table.add_column("tasks", justify="right", no_wrap=True)
    table.add_column("states", ratio=1, min_width=10)
    for run in found:
        ids = Text(run.run_id)
        if run.resumed_from:
            resumed = f"↳ {run.resumed_from}"
            if len(resumed) > _ID_WIDTH:
                resumed = resumed[: _ID_WIDTH - 1] + "…"
            ids.append(f"\n{resumed}", style="dim")
        dag = run.dag if len(run.dag) <= _WHEN_WIDTH else run.dag[: _WHEN_WIDTH - 1] + "…"
        table.add_row(
            ids,
            Text(f"{dag}\n") + Text(_when(run.started_at), style="dim"),
            str(run.task_count),
            _states(run, "\n"),
        )
    return table


@runs.command("show")
@click.argument("journal", metavar="JOURNAL")
@click.argument("run_id", metavar="[RUN_ID|last]", default="last")
@click.option("--dag", "dag", metavar="NAME", help="With 'last': the last run of this DAG.")
def show_run(journal: str, run_id: str, dag: str | None) -> None:
    """Show the tasks of one run in JOURNAL (default: the last run)."""
    with open_journal(journal) as store:
        if run_id == "last":
            latest = store.list_runs(dag, limit=1)
            if not latest:
                raise click.ClickException(
                    f"no runs{f' of DAG {dag!r}' if dag else ''} in {journal}"
                )
            run_id = latest[0].run_id
        found = store.load_run(run_id)
        if found is None:
            ids = ", ".join(r.run_id for r in store.list_runs(dag, limit=5)) or "none"
            raise click.ClickException(f"no run {run_id!r} in {journal}; latest runs: {ids}")
    info = found.info
    console = Console(highlight=False)
    resumed = f"  ·  resumed from {info.resumed_from}" if info.resumed_from else ""
    table = Table(
        title=f"run {info.run_id}  ·  {info.dag}  ·  {_when(info.started_at)}{resumed}",
        title_justify="left",
        caption=_states(info),
        caption_justify="left",
    )
    table.add_column("task", no_wrap=True)
    table.add_column("state", no_wrap=True)
    table.add_column("attempts", justify="right")
    table.add_column("duration", justify="right")
    table.add_column("output")
    table.add_column("error / note")
    for task in found.tasks.values():
        if task.reused:
            output = Text("reused", style="cyan")
        elif task.output_digest is not None:
            output = Text(f"kept ({len(found.payloads.get(task.output_digest, b''))} bytes)")
        else:
            output = Text("")
        table.add_row(
            task.task_id,
            Text(task.state, style=_STYLE.get(task.state, "")),
            str(task.attempts),
            f"{task.duration * 1e3:.1f} ms",
            output,
            task.error or task.note or "",
        )
    console.print(table)
