"""``orchestra hooks ...``: validate, list and test YAML hook configs.

Reviewing is never running: ``validate``, ``list``, ``import``, ``trust`` and ``trusted``
read and report; they import no ``type: python`` hook's module and start no process.

- ``orchestra hooks validate PATH...``: every problem as ``file:line: field: message``;
  exit status 1 if there is any; warnings for what this machine lacks (``_hooks_checks``).
- ``orchestra hooks list PATH...``: the merged hooks, in the order they run.
- ``orchestra hooks test EVENT --payload JSON|@file PATH...``: fires the event for real
  and shows what each hook answered, its latency, its exit code and stderr, and the
  final outcome; ``--repeat N`` fires it N times and shows each hook's latency once
  warm (a persistent hook's process starts at the first event). The files must be
  trusted (``--trust-all`` to skip the check).
- ``orchestra hooks replay EVENTS.jsonl PATH...``: fires recorded events through the
  hooks of PATH and lists the decisions that would change (``_hooks_replay``).
- ``orchestra hooks trust|untrust PATH...``: record or forget the files' content in the
  user's trust store; ``orchestra hooks trusted`` lists it.
- ``orchestra hooks events``: the events catalog.
"""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.markup import escape
from rich.table import Table

from orchestra.cli._hooks_checks import machine_warnings
from orchestra.cli._hooks_common import (
    PATHS,
    not_imported,
    review_registry,
    spec_json,
    table_console,
)
from orchestra.cli._hooks_fire import test
from orchestra.cli._hooks_replay import replay
from orchestra.cli._hooks_trust import trust, trusted, untrust
from orchestra.skills import EVENTS
from orchestra.skills._sources.claude.settings import to_orchestra_yaml

__all__ = ["hooks"]


@click.group("hooks")
def hooks() -> None:
    """Validate, list, test, replay and import hooks (orchestra.yaml, SKILL.md, Claude Code)."""


@hooks.command("validate")
@PATHS
def validate(paths: tuple[Path, ...]) -> None:
    """Check hook configs; print every problem as file:line and exit 1 if any.

    What was ignored on purpose (a Claude Code settings file's other keys, events and
    hook types this version does not run) is listed as notes; what this machine lacks
    for a hook to run (bwrap for a sandbox, httpx for http hooks, the mcp SDK for
    mcp_tool hooks, a script a command names by a relative path) as warnings, which do
    not fail the check. Validating runs nothing: a ``type: python`` hook's module is not
    imported (a note says so).
    """
    registry = review_registry(paths, problems_exit=1)
    for note in [*registry.notes, *not_imported(registry)]:
        click.echo(f"note: {note}")
    for hook in registry.hooks:
        for warning in [*hook.warnings(), *machine_warnings(hook)]:
            click.echo(f"warning: {hook.source}: {warning}")
    count = len(registry.hooks)
    click.echo(f"ok: {count} hook{'s' if count != 1 else ''} in {len(paths)} path(s)")


@hooks.command("import")
@PATHS
def import_hooks(paths: tuple[Path, ...]) -> None:
    """Print the orchestra.yaml equivalent of Claude Code files (settings.json, hooks.json).

    For moving hooks over: redirect the output to orchestra.yaml and review it; the
    notes of what was left out go to stderr.
    """
    registry = review_registry(paths)
    notes = list(registry.notes)
    text = to_orchestra_yaml(list(registry.hooks), notes)
    for note in notes:
        click.echo(f"note: {note}", err=True)
    click.echo(text, nl=False)


@hooks.command("list")
@PATHS
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def list_hooks(paths: tuple[Path, ...], as_json: bool) -> None:
    """Show the merged hooks in the order they run: event, matcher, type, source.

    A hook's ``id:`` follows its source; ``--json`` gives every hook's id (its ``id:``,
    else its place in the file), as its http requests carry it (``hook_id``).
    """
    registry = review_registry(paths)
    if as_json:
        click.echo(json.dumps([spec_json(hook) for hook in registry.hooks], indent=2))
        return
    console = table_console()
    count = len(registry.hooks)
    console.print(f"{count} hook{'s' if count != 1 else ''}, in the order they run")
    table = Table()
    for column in ("event", "matcher", "type", "what", "on_error", "timeout", "source"):
        table.add_column(column, overflow="fold" if column == "what" else "ellipsis")
    for hook in registry.hooks:
        table.add_row(
            hook.event,
            escape(hook.matcher or "*"),
            hook.type,
            escape(hook.describe()),
            hook.on_error,
            f"{hook.timeout:g} s",
            escape(f"{hook.source} ({hook.id})" if hook.id else hook.source),
        )
    console.print(table)
    for note in registry.notes:
        if "network grants" in note:  # a door a repository's file asked to open
            console.print(f"note: {escape(note)}")


@hooks.command("events")
def events() -> None:
    """Show the events catalog: matcher field, can block, can modify, default on_error."""
    table = Table()
    for column in ("event", "matcher field", "can block", "can modify", "on_error", "fires"):
        table.add_column(column)
    for spec in EVENTS.values():
        table.add_row(
            spec.name,
            spec.matcher_field or "-",
            "yes" if spec.can_block else "no",
            "yes" if spec.can_modify else "no",
            spec.default_on_error,
            spec.description,
        )
    table_console().print(table)


for _command in (test, replay, trust, untrust, trusted):
    hooks.add_command(_command)
