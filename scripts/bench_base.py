"""``make bench BASE=<rev>``: this checkout's benches, run on orchestra at ``<rev>`` and here.

A regression shows as a ratio: each bench script of *this* checkout runs, in turn, on the
orchestra of a git worktree of ``<rev>`` and on this checkout's, for ``--rounds``
interleaved rounds (base, here, base, here, ...), so that a change of the machine's load
weighs on both alike. Each side runs with ``PYTHONPATH`` and its working directory at its
own tree, so the bench and every ``python -c`` it starts import that side's orchestra;
both sides share this checkout's venv (its dependencies, and its ``orchestra`` console
script, which imports the side's ``orchestra.cli``). Every line a bench prints as
``FIGURE <name> <value> <unit>`` is collected; the table gives, per figure, the base's
and this checkout's medians and the median of the rounds' ratios (here / base, with
their min-max): above 1 is slower when the figure is a cost (seconds, µs, ms, or ``x``,
a ratio to a baseline the bench ran beside it in the same round: the steadiest kind
on a loaded machine). A bench that fails on one side (an API the base lacks) is named
with the end of its output, and the others go on.

Run: ``python scripts/bench_base.py REV [--rounds N] ["BENCH.py [OPTIONS]" ...]``
(default: the benches that print figures, each with ``--quick``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_BENCHES = (
    "bench/hook_costs.py",
    "bench/scheduler.py --only async_sections",
    "bench/tracing.py",
    "bench/imports.py",
)


def figures(output: str) -> dict[str, tuple[float, str]]:
    """The ``FIGURE name value unit`` lines of a bench's output."""
    found = {}
    for line in output.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[0] == "FIGURE":
            found[parts[1]] = (float(parts[2]), parts[3])
    return found


def run_bench(script: str, library: Path) -> dict[str, tuple[float, str]] | str:
    """The figures of one run of ``script`` on the orchestra at ``library``; or why none."""
    env = {**os.environ, "PYTHONPATH": str(library)}
    path, *options = script.split()
    done = subprocess.run(
        [sys.executable, str(ROOT / path), "--quick", *options],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        cwd=library,  # a ``python -c`` the bench starts imports this side's orchestra too
    )
    found = figures(done.stdout)
    if not found:
        return (
            f"no FIGURE line (exit status {done.returncode}): {(done.stderr or done.stdout)[-600:]}"
        )
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rev", help="the earlier commit (any git revision)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("benches", nargs="*", default=list(DEFAULT_BENCHES))
    args = parser.parse_intermixed_args()
    commit = subprocess.run(
        ["git", "rev-parse", "--verify", f"{args.rev}^{{commit}}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="orchestra-base-") as folder:
        base = Path(folder) / "base"
        subprocess.run(
            ["git", "worktree", "add", "--detach", "--quiet", str(base), commit],
            cwd=ROOT,
            check=True,
        )
        try:
            for tree in (base, ROOT):  # no side's imports pay for compiling its modules
                compiled(tree)
            return compare(args.benches, base, args.rounds, commit)
        finally:
            subprocess.run(
                ["git", "worktree", "remove", "--force", str(base)], cwd=ROOT, check=False
            )


def compiled(tree: Path) -> None:
    """Byte-compile ``tree``'s orchestra: a new worktree has no ``.pyc`` files, and with
    ``PYTHONDONTWRITEBYTECODE`` set neither side would keep them between its runs."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree / "orchestra")], check=True)


def compare(benches: list[str], base: Path, rounds: int, commit: str) -> int:
    print(f"base {commit[:10]} (a worktree), here {ROOT}; {rounds} interleaved rounds")
    status = 0
    for script in benches:
        print(f"== {script}", flush=True)
        table = side_by_side(script, base, rounds)
        if isinstance(table, str):
            print(f"  {table}")
            status = 1
            continue
        width = max(len(name) for name in [*table, "figure"])
        print(f"  {'figure':<{width}} {'base':>12} {'here':>12}  here/base (min-max)")
        for name, (unit, sides) in table.items():
            if not sides["base"] or not sides["here"]:
                print(f"  {name:<{width}} only {'here' if sides['here'] else 'at base'}")
                continue
            b, h = statistics.median(sides["base"]), statistics.median(sides["here"])
            pairs = zip(sides["base"], sides["here"], strict=False)  # a figure of some rounds
            ratios = [here / was if was else float("inf") for was, here in pairs]
            print(
                f"  {name:<{width}} {b:>9.4g} {unit:<2} {h:>9.4g} {unit:<2}  "
                f"{statistics.median(ratios):5.2f}x ({min(ratios):.2f}-{max(ratios):.2f})"
            )
    return status


def side_by_side(
    script: str, base: Path, rounds: int
) -> dict[str, tuple[str, dict[str, list[float]]]] | str:
    """Each figure's unit and values per side, over interleaved rounds; or why none."""
    table: dict[str, tuple[str, dict[str, list[float]]]] = {}
    for _ in range(rounds):
        for side, library in (("base", base), ("here", ROOT)):
            found = run_bench(script, library)
            if isinstance(found, str):
                return f"failed {'at base' if side == 'base' else 'here'}: {found}"
            for name, (value, unit) in found.items():
                table.setdefault(name, (unit, {"base": [], "here": []}))[1][side].append(value)
    return table


if __name__ == "__main__":
    sys.exit(main())
