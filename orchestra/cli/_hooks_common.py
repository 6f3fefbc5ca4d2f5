"""What the ``orchestra hooks`` commands share.

Loading hook files (their problems printed, exit 1), the console for tables, a hook as
JSON.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final, NoReturn

import click
from rich.console import Console

from orchestra._errors import ConfigError
from orchestra.skills import HookRegistry, HookSpec, load
from orchestra.skills._hooks.python import without_imports

__all__ = [
    "PATHS",
    "fail",
    "load_registry",
    "not_imported",
    "review_registry",
    "spec_json",
    "table_console",
]

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
    """Load the hook files, or print their problems and exit 2 (hooks unusable)."""
    _current_folder_on_path()
    try:
        return load(*paths, project_dir=project_dir, require_trust=require_trust)
    except ConfigError as error:
        fail(error)


def review_registry(paths: Sequence[Path], *, problems_exit: int = 2) -> HookRegistry:
    """Load the hook files to review them: no module imported, no process started.

    Reviewing is never running: a ``type: python`` hook's reference is checked for its
    form only (importing its module would run the module's code), and nothing is
    spawned. Problems are printed and exit ``problems_exit``: 2 (the files cannot be
    used), or 1 for ``validate``, whose answer they are.
    """
    _current_folder_on_path()
    try:
        with without_imports(), _load_warnings_off():  # the review prints them itself
            return load(*paths)
    except ConfigError as error:
        fail(error, problems_exit)


@contextmanager
def _load_warnings_off() -> Iterator[None]:
    logger = logging.getLogger("orchestra.skills")
    was, logger.disabled = logger.disabled, True
    try:
        yield
    finally:
        logger.disabled = was


def not_imported(registry: HookRegistry) -> list[str]:
    """A note for each ``type: python`` hook that a review did not import."""
    return [
        f"{hook.source}: python hook {hook.describe()!r} was not imported (reviewing "
        "runs no code; `orchestra hooks test` imports it)"
        for hook in registry.hooks
        if hook.type == "python"
    ]


def _current_folder_on_path() -> None:
    # ``type: python`` hooks name "module:function": found in the current folder too, as
    # ``python -m`` would.
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())


def fail(error: ConfigError, code: int = 2) -> NoReturn:
    """Print every problem of ``error``, their count on stderr, and exit ``code``.

    2 by default: the files could not be used (see ``_errors`` for the exit statuses).
    """
    for problem in error.errors:
        click.echo(str(problem))
    count = len(error.errors)
    click.echo(f"{count} problem{'s' if count != 1 else ''} found", err=True)
    raise SystemExit(code)


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
        "id": hook.hook_id,
    }
