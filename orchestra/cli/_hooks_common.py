"""What the ``orchestra hooks`` commands share.

Loading hook files (their problems printed, exit 1), the console for tables, a hook as
JSON.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final, NoReturn

import click
from rich.console import Console

from orchestra._errors import ConfigError
from orchestra.skills import HookRegistry, HookSpec, load

__all__ = ["PATHS", "fail", "load_registry", "spec_json", "table_console"]

PATHS: Final = click.argument(
    "paths", nargs=-1, required=True, type=click.Path(path_type=Path, dir_okay=True)
)


def table_console() -> Console:
    """A console for tables: off a terminal, lines are not wrapped."""
    # Off a terminal, do not wrap: file:line must stay on one line for grep and tests.
    return Console(width=None if sys.stdout.isatty() else 10_000, highlight=False)


def load_registry(
    paths: Sequence[Path], project_dir: Path | None = None, *, require_trust: bool = False
) -> HookRegistry:
    """Load the hook files, or print their problems and exit 1."""
    # ``type: python`` hooks import "module:function": from the current folder too, as
    # ``python -m`` would.
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        return load(*paths, project_dir=project_dir, require_trust=require_trust)
    except ConfigError as error:
        fail(error)


def fail(error: ConfigError) -> NoReturn:
    """Print every problem of ``error``, their count on stderr, and exit 1."""
    for problem in error.errors:
        click.echo(str(problem))
    count = len(error.errors)
    click.echo(f"{count} problem{'s' if count != 1 else ''} found", err=True)
    raise SystemExit(1)


def spec_json(hook: HookSpec) -> dict[str, Any]:
    """A hook as ``orchestra hooks list --json`` shows it."""
    return {
        "event": hook.event,
        "matcher": hook.matcher,
        "type": hook.type,
        "what": hook.describe(),
        "timeout": hook.timeout,
        "on_error": hook.on_error,
        "source": hook.source,
    }
