"""The ``orchestra`` command (extra ``cli``).

``main`` is a plain ``click.Group``; each command family lives in its own module and is
added with ``main.add_command(...)``::

    orchestra hooks validate PATH...
    orchestra hooks list PATH...
    orchestra hooks test EVENT --payload JSON|@FILE PATH...
    orchestra hooks events
    orchestra run FILE.py[:NAME] [--trace OUT.jsonl] [--report RUN.html] [--otlp URL]
                                 [--hooks orchestra.yaml] [--all]
    orchestra trace show FILE.jsonl [--run RUN_ID] [--failed] [--hooks]
    orchestra trace report FILE.jsonl [-o RUN.html] [--run RUN_ID]

A user's mistake (a misspelt hook moment, a cycle, a missing extra, a syntax error in
FILE.py) is one line that says what to fix; ``--debug`` (on any command) adds the
traceback. See ``_errors``.
"""

from __future__ import annotations

import click

from orchestra import __version__
from orchestra.cli._errors import Main, add_debug_option
from orchestra.cli._hooks import hooks
from orchestra.cli._run import run
from orchestra.cli._runs import runs
from orchestra.cli._trace import trace

__all__ = ["main"]


@click.group(cls=Main)
@click.version_option(__version__, prog_name="orchestra")
def main() -> None:
    """orchestra: lifecycle hooks for orchestration."""


main.add_command(hooks)
main.add_command(trace)
main.add_command(run)
main.add_command(runs)
add_debug_option(main)
