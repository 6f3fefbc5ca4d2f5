"""The main example, end to end: ``make demo``.

It runs the DAG of ``examples/demo/pipeline.py`` with the ``orchestra`` command, the way a
user would, then reads the trace it wrote:

1. ``orchestra run examples/demo/pipeline.py --hooks examples/demo/orchestra.yaml
   --trace out/demo-trace.jsonl``: live progress and a summary table. In the run:

   - a flaky task (``sources``) fails twice and is retried by a ``RetryPolicy``;
   - a task executed by a subagent (``research``) is delegated by a ``SubagentHooks``
     from the overloaded ``researcher`` to the ``librarian`` fallback;
   - a subagent (``writer``) calls the ``Bash`` tool, guarded by the YAML hooks: ``ls``
     is allowed, ``rm -rf`` is blocked by a command hook;
   - every run, task attempt, hook call, dispatch and tool call is a span, written to a
     file in the OTLP JSON file format.

2. ``orchestra trace show out/demo-trace.jsonl``: the span tree as a waterfall, with the
   states, attempts, decisions and who took them.

3. ``orchestra trace report out/demo-trace.jsonl -o out/demo-report.html``: the same run
   as one HTML page (open it in a browser).

Deterministic and offline (the agents and the tool are fakes). Run it with ``make demo``
or ``python examples/main_demo.py [--out DIR]``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEMO = Path("examples") / "demo"


def orchestra(*args: str) -> int:
    """Run the ``orchestra`` command (as ``python -m orchestra.cli``) from the repo root."""
    print(f"\n$ orchestra {' '.join(args)}", flush=True)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    return subprocess.run(
        [sys.executable, "-m", "orchestra.cli", *args], cwd=ROOT, env=env, timeout=120
    ).returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "out", help="where the trace goes")
    out = parser.parse_args().out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    trace = out / "demo-trace.jsonl"
    status = orchestra(
        "run",
        str(DEMO / "pipeline.py"),
        "--hooks",
        str(DEMO / "orchestra.yaml"),
        "--trust-all",  # the demo's own hooks; your project's: orchestra hooks trust PATH
        "--trace",
        str(trace),
    )
    if status != 0:
        print(f"the run failed (exit status {status})", file=sys.stderr)
        return status
    status = orchestra("trace", "show", str(trace))
    if status != 0:
        return status
    return orchestra("trace", "report", str(trace), "-o", str(out / "demo-report.html"))


if __name__ == "__main__":
    sys.exit(main())
