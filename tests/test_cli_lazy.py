"""``orchestra --help`` imports no subcommand; each is imported when used, whole."""

from __future__ import annotations

import json
import subprocess
import sys

import click
import pytest
from click.testing import CliRunner

from orchestra.cli import COMMANDS, main

SUBCOMMAND_MODULES = sorted(path.partition(":")[0] for path, _ in COMMANDS.values())


def _modules_after(*argv: str) -> tuple[list[str], str]:
    """The subcommand modules ``orchestra ARGV`` loads in a fresh interpreter; its output."""
    script = (
        "import sys, json, io, contextlib\n"
        "from orchestra.cli import main\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out):\n"
        "    try:\n"
        f"        main({list(argv)!r}, prog_name='orchestra')\n"
        "    except SystemExit:\n"
        "        pass\n"
        f"loaded = [m for m in {SUBCOMMAND_MODULES!r} if m in sys.modules]\n"
        "print(json.dumps([loaded, out.getvalue()]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    loaded, output = json.loads(done.stdout.splitlines()[-1])
    return loaded, output


def test_help_lists_every_command_and_imports_none() -> None:
    loaded, output = _modules_after("--help")
    assert loaded == []
    for name in COMMANDS:
        assert f"  {name} " in output


# What ``orchestra --help`` may load beyond what click loads to print a bare group's help:
# the package and the CLI's own light modules (no traceback, no orchestra._errors: they
# are imported on an error only).
CLI_OWN = [
    "orchestra",
    "orchestra._exports",
    "orchestra.cli",
    "orchestra.cli._errors",
    "orchestra.cli._lazy",
]


def _loaded(script: str) -> set[str]:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            f"{script}\nimport sys, json\nprint(json.dumps(sorted(sys.modules)))",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return set(json.loads(done.stdout.splitlines()[-1]))


def test_help_loads_only_what_a_bare_click_group_loads_and_the_cli_itself() -> None:
    quiet = "import contextlib, io\nout = contextlib.redirect_stdout(io.StringIO())\n"
    # orchestra's modules start with `from __future__ import annotations`, which loads the
    # __future__ module; click 8.2 and newer does the same, older ones do not
    bare = _loaded(
        f"from __future__ import annotations\n{quiet}import click\n"
        "group = click.Group('g', commands=[click.Command('c')])\n"
        "with out, contextlib.suppress(SystemExit):\n    group(['--help'])"
    )
    cli = _loaded(
        f"{quiet}from orchestra.cli import main\n"
        "with out, contextlib.suppress(SystemExit):\n    main(['--help'], prog_name='orchestra')"
    )
    assert sorted(cli - bare) == CLI_OWN


def test_a_command_imports_its_own_module_only() -> None:
    loaded, output = _modules_after("runs", "--help")
    assert loaded == ["orchestra.cli._runs"]
    assert "--debug" in output  # options added to every command reach a lazy one


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_the_short_help_is_the_commands_own(name: str) -> None:
    real = main.get_command(click.Context(main), name)
    assert real is not None
    stub = click.Command(name, help=COMMANDS[name][1])
    for limit in (30, 45, 80, 200):
        assert stub.get_short_help_str(limit) == real.get_short_help_str(limit)


def test_help_after_loading_is_the_same() -> None:
    before = CliRunner().invoke(main, ["--help"]).output
    for name in COMMANDS:
        main.get_command(click.Context(main), name)
    assert CliRunner().invoke(main, ["--help"]).output == before


def test_an_unknown_command_is_refused() -> None:
    result = CliRunner().invoke(main, ["trcae"])
    assert result.exit_code == 2
    assert "No such command 'trcae'" in result.output
