"""The OpenAI Agents page shows the guard.sh its first block runs (issue 42)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_page_shows_the_guard_script_the_docs_test_runs() -> None:
    harness = (ROOT / "conftest.py").read_text()  # the docs test puts it beside each page
    [script] = re.findall(r'GUARD_SH = """\\\n(.*?)"""', harness, flags=re.S)
    page = (ROOT / "docs" / "integrations" / "openai-agents.md").read_text()
    shown = re.findall(r"```sh\n(.*?)```", page, flags=re.S)
    assert script in shown
