"""``orchestra hooks replay EVENTS.jsonl PATH...``: what a policy would decide otherwise.

Fires every event recorded in EVENTS.jsonl (``orchestra run --record-events``,
``skills.load(record=...)``) through the hooks of PATH, for real, and lists the events
whose decision would change; exits 1 when any would, 0 when none (a CI gate), 2 when the
events file or the hooks cannot be used (not trusted, corrupt), as every command does.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import attrs
import click
from rich.markup import escape
from rich.table import Table

from orchestra._errors import ConfigError
from orchestra.cli._hooks_common import PATHS, load_registry, review_registry, table_console
from orchestra.skills import CommandHook, HookRegistry, ReplayChange, ReplayReport, Sandbox

__all__ = ["replay"]


def _refuse_in_process(paths: tuple[Path, ...]) -> None:
    """Exit 2 before anything is imported if a hook runs in this process (``python``).

    No sandbox reaches a python hook: --sandbox refuses them, reading the files without
    importing anything (a module's code would run on import).
    """
    in_process = [hook.source for hook in review_registry(paths).hooks if hook.type == "python"]
    if in_process:
        click.echo(
            "error: --sandbox cannot sandbox python hooks, which run in this process: "
            f"{', '.join(in_process)}; replay without them, or without --sandbox",
            err=True,
        )
        raise SystemExit(2)


def _sandboxed(registry: HookRegistry) -> HookRegistry:
    """The same hooks, every command hook under the sandbox (``sandbox: true``)."""
    hooks = [
        attrs.evolve(hook, sandbox=hook.sandbox or Sandbox())
        if isinstance(hook, CommandHook)
        else hook
        for hook in registry.hooks
    ]
    return HookRegistry(
        hooks,
        project_dir=registry.project_dir,
        judge=registry.judge,
        notes=registry.notes,
        max_parallel_hooks=registry.max_parallel_hooks,
    )


async def _replay(registry: HookRegistry, events: Path) -> ReplayReport:
    async with registry:  # stops persistent hooks' processes when done
        return await registry.replay(events)


def _change_json(change: ReplayChange) -> dict[str, Any]:
    return attrs.asdict(change)


def _print(report: ReplayReport) -> None:
    console = table_console()
    if report.changes:
        table = Table()
        for column in ("line", "event", "subject", "was -> now", "decided by", "reason"):
            table.add_column(column, overflow="fold")
        for change in report.changes:
            table.add_row(
                str(change.line),
                change.event,
                escape(change.subject),
                f"{change.was} -> [bold]{change.now}[/bold]",
                escape(change.decided_by or "-"),
                escape(change.reason or ""),
            )
        console.print(table)
        if report.changed > len(report.changes):
            console.print(f"(the first {len(report.changes)} of {report.changed} shown)")
    console.print(report.summary())


@click.command("replay")
@click.argument("events", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@PATHS
@click.option(
    "--project-dir",
    type=click.Path(path_type=Path, file_okay=False, exists=True),
    help="The hooks' working directory (default: the current one).",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@click.option(
    "--trust-all", is_flag=True, help="Run the hooks even if their files are not trusted."
)
@click.option(
    "--sandbox",
    is_flag=True,
    help="Run every command hook under the sandbox (bubblewrap), as sandbox: true does "
    "(python hooks, which run in-process, are refused).",
)
def replay(
    events: Path,
    paths: tuple[Path, ...],
    project_dir: Path | None,
    as_json: bool,
    trust_all: bool,
    sandbox: bool,
) -> None:
    """Fire every event recorded in EVENTS through the hooks of PATH; list what changes.

    The hooks RUN FOR REAL, once per recorded event: commands run, requests are sent.
    So their files must be trusted (orchestra hooks trust PATH) unless --trust-all, and
    --sandbox runs every command hook under bubblewrap. Record events with
    `orchestra run --hooks ... --record-events EVENTS` or `skills.load(record=...)`.

    Prints each event whose decision would change (was -> now, and the hook that decides
    now) and a summary; exits 1 when any would change, 0 when none, 2 when EVENTS is
    not a file of recorded events (the line is named) or the hooks cannot be used
    (files not trusted, hooks that do not load).
    """
    if sandbox:
        _refuse_in_process(paths)
    registry = load_registry(paths, project_dir, require_trust=not trust_all)
    if sandbox:
        registry = _sandboxed(registry)
    try:
        report = anyio.run(_replay, registry, events)
    except ConfigError as error:
        click.echo(f"error: {error}", err=True)
        raise SystemExit(2) from None
    if as_json:
        data = {
            "events": report.events,
            "changed": report.changed,
            "changes": [_change_json(c) for c in report.changes],
            "summary": report.summary(),
        }
        click.echo(json.dumps(data, indent=2))
    else:
        _print(report)
    raise SystemExit(1 if report.changed else 0)
