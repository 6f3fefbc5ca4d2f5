"""``orchestra hooks trust|untrust|trusted``: the user's trust store of hook files.

A store that cannot be read (not JSON, not a trust store) or written (its folder is a
file, or read-only) is reported in one line on stderr, naming the store, and exit 1.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path

import click
from rich.markup import escape
from rich.table import Table

from orchestra._errors import ConfigError
from orchestra.cli._hooks_common import PATHS, fail, table_console
from orchestra.skills._config.yaml import Problems
from orchestra.skills._sources.claude.grants import file_grants
from orchestra.skills._sources.covered import covered_files
from orchestra.skills._sources.read import Loaded, read_sources
from orchestra.skills._sources.trust import Trusted, TrustStore, digest, summary

__all__ = ["trust", "trusted", "untrust"]


@contextlib.contextmanager
def _store_errors() -> Iterator[None]:
    """A broken or unwritable trust store: one line on stderr, exit 2 (no traceback)."""
    try:
        yield
    except ConfigError as error:
        click.echo(f"error: {error}", err=True)
        raise SystemExit(2) from None


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
    try:
        records = [
            Trusted(
                str(item.source.path.resolve()),
                item.sha256,
                summary(item.hooks),
                files=tuple(covered_files(item.source, item.hooks).items()),
                grants=_grants(item),
            )
            for item in loaded
        ]
    except ValueError as exc:  # a skill's folder too big to cover
        click.echo(f"error: {exc}", err=True)
        raise SystemExit(2) from None
    with _store_errors():
        TrustStore().trust(records)
    for item, record in zip(loaded, records, strict=True):
        count = len(item.hooks)
        files = len(record.files)
        also = f", {files} file{'s' if files != 1 else ''} it runs" if files else ""
        click.echo(
            f"trusted {item.source.path} ({count} hook{'s' if count != 1 else ''}{also}, "
            f"sha256 {item.sha256[:12]})"
        )
        for grant in record.grants:
            click.echo(f"  grants {grant}")


def _grants(item: Loaded) -> tuple[str, ...]:
    """The network grants of a Claude Code file, read from the bytes that were trusted."""
    if not item.source.claude:
        return ()
    raw = item.source.path.read_bytes()
    if digest(raw) != item.sha256:
        raise ValueError(f"{item.source.path} changed while being trusted: trust it again")
    return file_grants(raw)


@click.command("untrust")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
def untrust(paths: tuple[Path, ...]) -> None:
    """Forget hook files from the trust store (a folder: every file trusted below it)."""
    store = TrustStore()
    with _store_errors():
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
    with _store_errors():
        known = store.read()
    rows = []
    for path, entry in sorted(known.items()):
        rows.append((path, entry, _state(Path(path), entry)))
    if as_json:
        listed = [
            {
                "path": p,
                "state": s,
                "hooks": list(e.hooks),
                "files": dict(e.files),
                "trusted_at": e.trusted_at,
            }
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


def _state(path: Path, entry: Trusted) -> str:
    """``ok``, ``changed`` (the file or a file it runs), or ``missing``."""
    try:
        if digest(path.read_bytes()) != entry.sha256:
            return "changed"
    except OSError:
        return "missing"
    for script, sha256 in entry.files:
        try:
            if digest(Path(script).read_bytes()) != sha256:
                return "changed"
        except OSError:
            return "changed"
    return "ok"
