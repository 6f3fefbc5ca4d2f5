"""docs/getting-started.md runs top to bottom as a reader types it, in one folder.

It once ran ``orchestra run pipeline.py --hooks orchestra.yaml`` on an orchestra.yaml it
never created (the docs' own test harness provided one, a reader has none). Here every
block runs in order in one empty folder: a ```` ```python title="F" ```` block is saved as
F and run (``python F``), a ```` ```{.python continuation} ```` block runs after the
blocks before it, a ```` ```yaml title="F" ```` block is saved as F, and every line of a
```` ```sh ```` block runs as a command (``pip install`` lines aside: installing is the
reader's part). Each must succeed.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "getting-started.md"
FENCE = re.compile(r"^```(?P<info>[^\n]*)\n(?P<body>.*?)^```$", re.S | re.M)


def _run(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        args, cwd=cwd, env=env, capture_output=True, text=True, timeout=180, check=False
    )
    assert done.returncode == 0, f"{shlex.join(args)} exited {done.returncode}:\n{done.stderr}"
    return done


def _commands(body: str) -> list[list[str]]:
    lines = []
    for line in body.splitlines():
        words = shlex.split(line, comments=True)
        if words and words[:2] != ["pip", "install"]:
            lines.append(words)
    return lines


def test_getting_started_runs_top_to_bottom(tmp_path: Path) -> None:
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "config"), "COLUMNS": "200"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    python: list[str] = []
    ran: list[str] = []
    for block in FENCE.finditer(PAGE.read_text()):
        info, body = block["info"], block["body"]
        title = re.search(r'title="([^"]+)"', info)
        if info.startswith("python"):
            python = [body]
            assert title is not None, "a first Python block names its file"
            (tmp_path / title[1]).write_text(body)
            _run([sys.executable, title[1]], tmp_path, env)
        elif "continuation" in info:
            python.append(body)
            _run([sys.executable, "-c", "\n".join(python)], tmp_path, env)
        elif info.startswith("yaml") and title is not None:
            (tmp_path / title[1]).write_text(body)
        elif info == "sh":
            for words in _commands(body):
                ran.append(shlex.join(words))
                if words[0] == "orchestra":
                    words = [sys.executable, "-m", "orchestra.cli", *words[1:]]
                _run(words, tmp_path, env)
    assert "orchestra run pipeline.py --hooks orchestra.yaml --trace out.jsonl" in ran
    logged = [json.loads(line) for line in (tmp_path / "tasks.log").read_text().splitlines()]
    assert [event["task_id"] for event in logged] == ["fetch", "count", "report"]
    assert (tmp_path / "out.jsonl").stat().st_size > 0
