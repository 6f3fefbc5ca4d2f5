"""``orchestra`` as a user types it: a real process, its output and exit status."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

__all__ = ["orchestra_cli"]


def orchestra_cli(
    *args: str, cwd: Path, timeout: float = 120, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``orchestra ARGS...`` (``python -m orchestra.cli``) in ``cwd`` to its end."""
    return subprocess.run(
        [sys.executable, "-m", "orchestra.cli", *args],
        cwd=cwd,
        env={**os.environ, "COLUMNS": "200", **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
