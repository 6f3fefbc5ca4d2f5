"""``make bench BASE=<rev>``: this checkout's benches, run on orchestra at ``<rev>`` and here.

A regression shows as a ratio: each bench script of *this* checkout runs, in turn, on the
orchestra of a git worktree of ``<rev>`` (``PYTHONPATH``) and on this checkout's, for
``--rounds`` interleaved rounds (base, here, base, here, ...), so that a change of the
machine's load weighs on both alike. Every line a bench prints as
``FIGURE <name> <value> <unit>`` is collected; the table gives, per figure, the base's
and this checkout's medians and their ratio (here / base: above 1 is slower when the
unit is a cost, seconds or µs).

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
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_BENCHES = ("bench/hook_costs.py", "bench/scheduler.py --only async_sections")


def figures(output: str) -> dict[str, tuple[float, str]]:
    """The ``FIGURE name value unit`` lines of a bench's output."""
    found = {}
    for line in output.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[0] == "FIGURE":
            found[parts[1]] = (float(parts[2]), parts[3])
    return found


def run_bench(script: str, library: Path) -> dict[str, tuple[float, str]]:
    env = {**os.environ, "PYTHONPATH": str(library)}
    path, *options = script.split()
    done = subprocess.run(
        [sys.executable, str(ROOT / path), "--quick", *options],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    if done.returncode != 0 and "FIGURE" not in done.stdout:
        raise SystemExit(f"{script} failed on {library}:\n{done.stdout}\n{done.stderr}")
    return figures(done.stdout)


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
            return compare(args.benches, base, args.rounds, commit)
        finally:
            subprocess.run(
                ["git", "worktree", "remove", "--force", str(base)], cwd=ROOT, check=False
            )


def compare(benches: list[str], base: Path, rounds: int, commit: str) -> int:
    print(f"base {commit[:10]} (a worktree), here {ROOT}; {rounds} interleaved rounds")
    for script in benches:
        seen: dict[str, dict[str, list[float]]] = defaultdict(lambda: {"base": [], "here": []})
        units: dict[str, str] = {}
        for _ in range(rounds):
            for side, library in (("base", base), ("here", ROOT)):
                for name, (value, unit) in run_bench(script, library).items():
                    seen[name][side].append(value)
                    units[name] = unit
        print(f"== {script}")
        print(f"  {'figure':<44} {'base':>12} {'here':>12}  here/base")
        for name, sides in seen.items():
            if not sides["base"] or not sides["here"]:
                print(f"  {name:<44} only {'here' if sides['here'] else 'at base'}")
                continue
            b, h = statistics.median(sides["base"]), statistics.median(sides["here"])
            ratio = h / b if b else float("inf")
            unit = units[name]
            print(f"  {name:<44} {b:>10.3g} {unit:<2}{h:>10.3g} {unit:<2} {ratio:6.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
