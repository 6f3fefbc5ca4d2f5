"""A click group whose subcommands are imported when they are used (internal).

click's documented ``LazyGroup`` pattern (click docs, "Lazily Loading Subcommands"):
each subcommand is named by its import path and imported by ``get_command``, so
``orchestra --help`` or ``orchestra hooks list`` loads only what it shows or runs. The
top-level help lists each command with the short help given here, so that ``--help``
imports none of them (``tests/test_cli_lazy.py`` checks each against its command's own).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

import click

__all__ = ["LazyGroup"]


class LazyGroup(click.Group):
    """A ``click.Group`` with subcommands imported on first use.

    Args:
        lazy: subcommand name -> (``"module:attribute"``, the first line of its help).
        loaded: called with each subcommand when it is imported (to add options).
    """

    def __init__(
        self,
        *args: Any,
        lazy: Mapping[str, tuple[str, str]] | None = None,
        loaded: Callable[[click.Command], None] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = dict(lazy or {})
        self.loaded = loaded

    def list_commands(self, ctx: click.Context) -> list[str]:
        """The subcommands, imported or not, sorted."""
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """The subcommand ``cmd_name``, imported now if it was not yet."""
        if cmd_name in self.lazy and cmd_name not in self.commands:
            module, _, attribute = self.lazy[cmd_name][0].partition(":")
            command = getattr(importlib.import_module(module), attribute)
            if not isinstance(command, click.Command):
                raise TypeError(f"{self.lazy[cmd_name][0]} is not a click command")
            if self.loaded is not None:
                self.loaded(command)
            self.add_command(command, cmd_name)
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The commands section of the help, as click writes it, without importing any."""
        commands = []
        for name in self.list_commands(ctx):
            command = self.commands.get(name) or click.Command(name, help=self.lazy[name][1])
            if not command.hidden:
                commands.append((name, command))
        if commands:
            limit = formatter.width - 6 - max(len(name) for name, _ in commands)
            with formatter.section("Commands"):
                formatter.write_dl([(n, c.get_short_help_str(limit)) for n, c in commands])
