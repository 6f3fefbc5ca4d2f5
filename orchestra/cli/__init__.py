"""The ``orchestra`` command (extra ``cli``).

``main`` is a ``click.Group`` whose command families each live in their own module,
imported when used (``_lazy``: ``orchestra --help`` imports none of them)::

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

__all__ = ["main"]


# name -> (where it is, the first line of its help: what ``orchestra --help`` prints)
COMMANDS = {
    "hooks": (
        "orchestra.cli._hooks:hooks",
        "Validate, list, test, replay and import hooks (orchestra.yaml, SKILL.md, Claude Code).",
    ),
    "run": (
        "orchestra.cli._run:run",
        "Run the DAG defined in FILE.py (NAME picks one if the file has several).",
    ),
    "runs": ("orchestra.cli._runs:runs", "Runs kept in a journal (orchestra run --journal)."),
    "trace": (
        "orchestra.cli._trace:trace",
        "Read trace files (OTLP JSON), as written by orchestra run --trace.",
    ),
}


@click.group(cls=Main, lazy=COMMANDS, loaded=add_debug_option)
@click.version_option(__version__, prog_name="orchestra")
def main() -> None:
    """orchestra: lifecycle hooks for orchestration."""


add_debug_option(main)
