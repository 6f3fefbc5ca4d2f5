"""Import benchmark: what ``import orchestra`` costs a script, and the CLI's start.

Each figure comes from a fresh interpreter, the contenders interleaved over rounds:

- ``python -X importtime -c "import M"``: the cumulative microseconds of ``M``, for
  ``asyncio`` (the yardstick: every anyio program loads it), ``orchestra`` and
  ``orchestra.skills``;
- ``orchestra --help``: CPU time (user + system) of the console script, against
  ``python -c pass`` (target at most 5x, issue 46: the subcommands are imported when
  used, not for ``--help``), and against the floor, a bare ``click.Group`` of as many
  commands printing its ``--help`` (orchestra's own share; target at most 1.15x); wall
  times beside them;
- which heavy modules a plain ``import orchestra`` loads (target: none of tornado,
  sqlite3, ssl, curses, ctypes, tenacity, asyncio, the OpenTelemetry SDK, protobuf).

Target: ``import orchestra`` under 80 ms cumulative (median); its ratio to
``import asyncio`` is printed beside it. Medians with min-max over the rounds.

Run: ``python bench/imports.py [--quick]``.
"""

from __future__ import annotations

import json
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

QUICK = "--quick" in sys.argv
ROUNDS = 5 if QUICK else 15
HELP_ROUNDS = 10 if QUICK else 40  # of the three commands that print a help
MODULES = ("asyncio", "orchestra", "orchestra.skills")
HEAVY = (
    "tornado",
    "sqlite3",
    "ssl",
    "curses",
    "ctypes",
    "tenacity",
    "asyncio",
    "opentelemetry.sdk",
    "google.protobuf",
)
TARGET_MS = 80.0


def cumulative_us(module: str) -> int:
    """``-X importtime``'s cumulative figure for ``module``, in a fresh interpreter."""
    err = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import {module}"],
        check=True,
        capture_output=True,
        text=True,
    ).stderr
    for line in err.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[2].rstrip() == f" {module}":
            return int(parts[1])
    raise RuntimeError(f"no importtime line for {module}")


HELP_TARGET = 5.0  # orchestra --help at most this many times python -c pass
OWN_TARGET = 1.15  # ... and this many times a bare click group's --help
# The floor: what click itself costs a command of four subcommands to print its --help.
CLICK_HELP = (
    "import click\n"
    "main = click.Group('orchestra', help='orchestra: lifecycle hooks for orchestration.')\n"
    "for name in ('hooks', 'run', 'runs', 'trace'):\n"
    "    main.add_command(click.Command(name, help='The first line of its help.'))\n"
    "main(['--help'], prog_name='orchestra')\n"
)


def help_command() -> list[str]:
    script = shutil.which("orchestra", path=str(Path(sys.executable).parent))
    return [script, "--help"] if script else [sys.executable, "-m", "orchestra.cli", "--help"]


def timed(command: list[str]) -> tuple[float, float]:
    """Wall and CPU (user + system) milliseconds of ``command``, run to its end."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall * 1e3, cpu * 1e3


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):7.1f} ({min(values):.1f}-{max(values):.1f})"


def import_figures() -> bool:
    """``-X importtime`` of each module, and the heavy modules ``import orchestra`` loads."""
    ms: dict[str, list[float]] = {m: [] for m in MODULES}
    for _ in range(ROUNDS):
        for module in MODULES:
            ms[module].append(cumulative_us(module) / 1e3)
    base = statistics.median(ms["asyncio"])
    for name, values in ms.items():
        ratio = statistics.median(values) / base
        print(f"  {name:<18} cumulative ms {spread(values)}  {ratio:5.2f}x import asyncio")
        print(f"FIGURE imports/{name} {statistics.median(values):.4g} ms")
    loaded = json.loads(
        subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys, json, orchestra; print(json.dumps(list(sys.modules)))",
            ],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    )
    heavy = [m for m in HEAVY if m in loaded]
    print(f"  import orchestra loads {len(loaded)} modules; heavy ones: {heavy or 'none'}")
    median = statistics.median(ms["orchestra"])
    fast = median < TARGET_MS
    print(
        f"import orchestra {median:.1f} ms cumulative (median), {median / base:.2f}x asyncio: "
        f"target < {TARGET_MS:.0f} ms: {'ok' if fast else 'MISSED'}; "
        f"no heavy module: {'ok' if not heavy else 'MISSED'}\n"
    )
    return fast and not heavy


def help_figures() -> bool:
    """``orchestra --help`` against ``python -c pass`` and a bare click group's ``--help``."""
    commands = {  # name -> (its FIGURE's, the command)
        "python -c pass": ("pass", [sys.executable, "-c", "pass"]),
        "click group --help": ("click-help", [sys.executable, "-c", CLICK_HELP]),
        "orchestra --help": ("orchestra-help", help_command()),
    }
    wall: dict[str, list[float]] = {name: [] for name in commands}
    cpu: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(HELP_ROUNDS):
        for name, (_, command) in commands.items():
            w, c = timed(command)
            wall[name].append(w)
            cpu[name].append(c)
    print(f"  {'':<20} {'CPU ms':>20}  {'wall ms':>20}")
    for name, (slug, _) in commands.items():
        print(f"  {name:<20} {spread(cpu[name])}  {spread(wall[name])}")
        print(f"FIGURE imports/{slug}-cpu {statistics.median(cpu[name]):.4g} ms")
    ok = True
    for against, target in (("python -c pass", HELP_TARGET), ("click group --help", OWN_TARGET)):
        ratios = {
            kind: [h / b for h, b in zip(times["orchestra --help"], times[against], strict=True)]
            for kind, times in (("CPU", cpu), ("wall", wall))
        }
        median = statistics.median(ratios["CPU"])
        ok &= median <= target
        print(f"FIGURE imports/help-over-{commands[against][0]} {median:.4g} x")
        print(
            f"orchestra --help {median:.2f}x {against} in CPU (median of the rounds' ratios,"
            f" {min(ratios['CPU']):.2f}-{max(ratios['CPU']):.2f}; wall"
            f" {statistics.median(ratios['wall']):.2f}x): target <= {target:g}x:"
            f" {'ok' if median <= target else 'MISSED'}"
        )
    return ok


def main() -> int:
    print("imports: interleaved rounds, each figure from a fresh interpreter, median (min-max)")
    fine = import_figures()
    return 0 if help_figures() and fine else 1


if __name__ == "__main__":
    sys.exit(main())
