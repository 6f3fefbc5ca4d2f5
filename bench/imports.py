"""Import benchmark: what ``import orchestra`` costs a script, and the CLI's start.

Each figure comes from a fresh interpreter, the contenders interleaved over rounds:

- ``python -X importtime -c "import M"``: the cumulative microseconds of ``M``, for
  ``asyncio`` (the yardstick: every anyio program loads it), ``orchestra`` and
  ``orchestra.skills``;
- ``orchestra --help``: wall time of the console script, against ``python -c pass``
  (target at most 5x: the subcommands are imported when used, not for ``--help``);
- which heavy modules a plain ``import orchestra`` loads (target: none of tornado,
  sqlite3, ssl, curses, ctypes, tenacity, asyncio, the OpenTelemetry SDK, protobuf).

Target: ``import orchestra`` under 80 ms cumulative (median); its ratio to
``import asyncio`` is printed beside it. Medians with min-max over the rounds.

Run: ``python bench/imports.py [--quick]``.
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

QUICK = "--quick" in sys.argv
ROUNDS = 5 if QUICK else 15
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


def cli_seconds() -> float:
    script = shutil.which("orchestra", path=str(Path(sys.executable).parent))
    command = [script, "--help"] if script else [sys.executable, "-m", "orchestra.cli", "--help"]
    return wall(command)


def wall(command: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True)
    return time.perf_counter() - started


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):7.1f} ({min(values):.1f}-{max(values):.1f})"


def main() -> int:
    print(f"imports: {ROUNDS} interleaved rounds, each figure from a fresh interpreter")
    ms: dict[str, list[float]] = {m: [] for m in (*MODULES, "orchestra --help")}
    bare: list[float] = []
    for _ in range(ROUNDS):
        for module in MODULES:
            ms[module].append(cumulative_us(module) / 1e3)
        bare.append(wall([sys.executable, "-c", "pass"]) * 1e3)
        ms["orchestra --help"].append(cli_seconds() * 1e3)
    base = statistics.median(ms["asyncio"])
    print(f"  {'python -c pass':<18} {'wall':>10} ms {spread(bare)}")
    for name, values in ms.items():
        kind = "wall" if name.endswith("--help") else "cumulative"
        ratio = statistics.median(values) / base
        print(f"  {name:<18} {kind:>10} ms {spread(values)}  {ratio:5.2f}x import asyncio")
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
    light = not heavy
    print(f"  import orchestra loads {len(loaded)} modules; heavy ones: {heavy or 'none'}")
    median = statistics.median(ms["orchestra"])
    fast = median < TARGET_MS
    print(
        f"import orchestra {median:.1f} ms cumulative (median), {median / base:.2f}x asyncio: "
        f"target < {TARGET_MS:.0f} ms: {'ok' if fast else 'MISSED'}; "
        f"no heavy module: {'ok' if light else 'MISSED'}"
    )
    helps = [h / b for h, b in zip(ms["orchestra --help"], bare, strict=True)]
    help_ratio = statistics.median(helps)
    quick = help_ratio <= HELP_TARGET
    print(
        f"orchestra --help {help_ratio:.2f}x python -c pass (median of the rounds' ratios, "
        f"{min(helps):.2f}-{max(helps):.2f}): target <= {HELP_TARGET:g}x: "
        f"{'ok' if quick else 'MISSED'}"
    )
    return 0 if fast and light and quick else 1


if __name__ == "__main__":
    sys.exit(main())
