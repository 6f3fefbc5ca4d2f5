"""Errors at the command line: one line for a user's mistake, the traceback with ``--debug``.

Exit statuses, the same for every command (docs/reference/cli.md):

| status  | meaning                                                                       |
|---------|-------------------------------------------------------------------------------|
| 0       | done, nothing to report: the run ok, the files valid, no decision changes,    |
|         | the event not blocked                                                         |
| 1       | done, and the answer is no: the run failed, ``validate`` found problems,      |
|         | ``replay`` found decisions that change, ``hooks test`` was blocked            |
| 2       | the input could not be used: a usage error, a file that cannot be read,       |
|         | parsed or trusted, hooks or a DAG that do not load, an unknown run            |
| 130/143 | stopped by Ctrl-C / SIGTERM (128 + the signal)                                |

What counts as the user's mistake, said in one line with its fix (click's ``Error: ...``
on stderr, exit status 2, ``UNUSABLE``):

- orchestra's own errors (``ConfigError``, ``DAGError``, ``JournalError``, ...);
- a ``TypeError`` or ``ValueError`` that orchestra raised itself, checking what it was
  given (a hook class with a misspelt moment, a bad option);
- a missing extra (an ``ImportError`` that says what to ``pip install``);
- an ``OSError`` (a file that cannot be read or written);
- the ``click.ClickException`` a command raises for the user's file (a syntax error in
  it, a factory that raised), whose cause ``--debug`` prints.

Anything else is a bug, and keeps its traceback. ``--debug`` (on ``orchestra`` or on any
of its commands, or ``ORCHESTRA_DEBUG=1``) prints the traceback of every error.
"""

from __future__ import annotations

from typing import Any, Final

import click

from orchestra.cli._lazy import LazyGroup

__all__ = ["UNUSABLE", "Main", "Unusable", "add_debug_option"]

UNUSABLE: Final = 2
"""The exit status of a command whose input could not be used (a usage error's too)."""

_DEBUG: Final = "orchestra.debug"
_HINT: Final = "  (--debug shows the traceback)"


def _set_debug(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value:
        ctx.meta[_DEBUG] = True


def _debug_option() -> click.Option:
    return click.Option(
        ["--debug"],
        is_flag=True,
        expose_value=False,
        is_eager=True,
        envvar="ORCHESTRA_DEBUG",
        callback=_set_debug,
        help="Show the traceback of an error (default: one line that says what to fix).",
    )


def add_debug_option(command: click.Command) -> None:
    """Give ``command`` and every command below it a ``--debug`` flag."""
    if not any(p.name == "debug" for p in command.params):
        command.params.append(_debug_option())
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            add_debug_option(sub)


def _innermost(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


def _raised_by_orchestra(exc: BaseException) -> bool:
    from orchestra._tracebacks import frames_of  # on an error only: ``--help`` stays quick

    frames = frames_of(exc)
    return bool(frames) and frames[-1].library and "orchestra" in frames[-1].file


def one_line(exc: BaseException) -> str | None:
    """What to print for ``exc`` when it is the user's mistake; None for a bug."""
    from orchestra._errors import OrchestraError  # on an error only: ``--help`` stays quick

    exc = _innermost(exc)
    text = str(exc).strip()
    if isinstance(exc, OrchestraError):
        return text
    if isinstance(exc, ImportError) and "pip install" in text:
        return text
    if isinstance(exc, TypeError | ValueError) and _raised_by_orchestra(exc):
        return text
    if isinstance(exc, OSError):
        return f"{type(exc).__name__}: {text}"
    return None


class Unusable(click.ClickException):
    """A user's mistake: the input could not be used (exit status 2, ``UNUSABLE``)."""

    exit_code = UNUSABLE


class Main(LazyGroup):
    """The ``orchestra`` group: turns a user's mistake into one line (see the module)."""

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        """Find the command; an unknown one that a group has names it (``trace report``)."""
        try:
            return super().resolve_command(ctx, args)
        except click.UsageError:
            name = args[0] if args else ""
            for group_name in self.list_commands(ctx):
                group = self.get_command(ctx, group_name)
                if isinstance(group, click.Group) and name in group.commands:
                    ctx.fail(
                        f"No such command {name!r}: it is 'orchestra {group_name} {name}' "
                        f"(orchestra {group_name} {name} --help)"
                    )
            raise

    def invoke(self, ctx: click.Context) -> Any:
        """Run the command; a user's mistake becomes a ``click.ClickException``."""
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.Abort, click.UsageError):
            raise
        except click.ClickException as exc:
            if ctx.meta.get(_DEBUG) and exc.__cause__ is not None:
                import traceback  # on an error only: ``--help`` stays quick

                traceback.print_exception(exc.__cause__)
            if exc.exit_code == UNUSABLE:
                raise
            raise Unusable(exc.message) from exc.__cause__
        except Exception as exc:
            line = None if ctx.meta.get(_DEBUG) else one_line(exc)
            if line is None:
                raise
            raise Unusable(line + _HINT) from None
