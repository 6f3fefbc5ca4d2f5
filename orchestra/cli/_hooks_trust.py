"""``orchestra hooks trust|untrust|trusted``: the user's trust store of hook files."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.markup import escape
from rich.table import Table

from orchestra._errors import ConfigError
from orchestra.cli._hooks_common import PATHS, fail, table_console
from orchestra.skills._load import read_sources
from orchestra.skills._trust import Trusted, TrustStore, digest, summary
from orchestra.skills._yaml import Problems

__all__ = ["trust", "trusted", "untrust"]


@click.command("trust")
@PATHS
def trust(paths: tuple[Path, ...]) -> None:
    """Trust hook files as they are now (a folder: its orchestra.yaml and every SKILL.md).

    Read them first: a trusted hook runs commands as you. A file that changes later
    needs trusting again.
    """
    problems = Problems()
    loaded = read_sources(paths, problems)
    try:
        problems.raise_if_any()
    except ConfigError as error:
        fail(error)
    TrustStore().trust(
        Trusted(str(item.source.path.resolve()), item.sha256, summary(item.hooks))
        for item in loaded
    )
    for item in loaded:
        count = len(item.hooks)
        click.echo(
            f"trusted {item.source.path} ({count} hook{'s' if count != 1 else ''}, "
            f"sha256 {item.sha256[:12]})"
        )


@click.command("untrust")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
def untrust(paths: tuple[Path, ...]) -> None:
    """Forget hook files from the trust store (a folder: every file trusted below it)."""
    store = TrustStore()
    known = store.read()
    wanted: list[str] = []
    for path in paths:
        resolved = path.resolve()
        wanted += [p for p in known if p == str(resolved) or Path(p).is_relative_to(resolved)]
    removed = store.untrust(wanted)
    for name in removed:
        click.echo(f"untrusted {name}")
    if not removed:
        click.echo("nothing to untrust: none of these is trusted")


@click.command("trusted")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def trusted(as_json: bool) -> None:
    """List the trusted hook files and whether each is still as it was trusted."""
    store = TrustStore()
    rows = []
    for path, entry in sorted(store.read().items()):
        try:
            state = "ok" if digest(Path(path).read_bytes()) == entry.sha256 else "changed"
        except OSError:
            state = "missing"
        rows.append((path, entry, state))
    if as_json:
        listed = [
            {"path": p, "state": s, "hooks": list(e.hooks), "trusted_at": e.trusted_at}
            for p, e, s in rows
        ]
        click.echo(json.dumps(listed, indent=2))
        return
    console = table_console()
    console.print(f"{len(rows)} trusted file{'s' if len(rows) != 1 else ''} in {store.path}")
    if rows:
        table = Table()
        for column in ("file", "state", "hooks", "trusted at"):
            table.add_column(column)
        for path, entry, state in rows:
            table.add_row(escape(path), state, str(len(entry.hooks)), entry.trusted_at)
        console.print(table)
