from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_example(name: str) -> str:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "examples" / name)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_pipeline_example() -> None:
    out = run_example("pipeline.py")
    lines = {line.split()[0]: line.split() for line in out.splitlines() if line and line[0] != " "}
    assert lines["fetch_rates"][1:3] == ["succeeded", "3"]
    assert lines["publish_dashboard"][1] == "skipped"
    assert "feature flag 'dashboard' is off" in out
    assert lines["cleanup"][1] == "succeeded"
    assert "3 orders, 243.32 EUR" in out
    assert out.count("failed  fetch_rates") == 2
