"""``orchestra hooks import`` keeps each Claude Code hook's meaning, or leaves it out saying why.

What a new user met: a Claude Code ``type: prompt`` hook (which asks a model) came out as
an orchestra ``type: prompt`` hook (which adds a fixed message); and a note "timeout 600 s
cut to 300 s" stood on lines that set no timeout. Now the prompt hook asks the judge
(``judge: true``), the matchers match the same tool names, a matcher on a field that
orchestra.yaml does not match leaves its hook out with the reason, and notes speak only of
what the file says.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from helpers.cli import orchestra_cli

from orchestra import skills

pytestmark = pytest.mark.anyio

SETTINGS = """\
{"hooks": {
  "PreToolUse": [
    {"matcher": "Bash", "hooks": [{"type": "command", "command": "echo {}"}]},
    {"matcher": "Edit|Write",
     "hooks": [{"type": "prompt", "prompt": "Is this edit safe? $ARGUMENTS"}]},
    {"matcher": "mcp__.*__write",
     "hooks": [{"type": "command", "command": "echo {}", "timeout": 900}]}
  ],
  "SubagentStart": [
    {"matcher": "Explore", "hooks": [{"type": "command", "command": "echo {}"}]}
  ]
}}
"""


def _import(tmp_path: Path) -> subprocess.CompletedProcess[str]:
    claude = tmp_path / ".claude"
    claude.mkdir()
    (claude / "settings.json").write_text(SETTINGS)
    return orchestra_cli("hooks", "import", ".claude/settings.json", cwd=tmp_path)


async def test_import_keeps_meanings_and_notes_only_what_the_file_says(tmp_path: Path) -> None:
    out = _import(tmp_path)
    assert out.returncode == 0, out.stderr
    notes = out.stderr.splitlines()
    assert notes == [
        "note: .claude/settings.json:7: timeout 900 s cut to 300 s",
        "note: .claude/settings.json:10: left out: its matcher reads agent_type in Claude "
        "Code, but agent_name in orchestra.yaml",
    ]
    (tmp_path / "orchestra.yaml").write_text(out.stdout)
    asked: list[Any] = []

    async def judge(request: Any) -> dict[str, Any]:
        asked.append(request)
        return {"ok": False, "reason": "not on Fridays"}

    registry = skills.load(tmp_path / "orchestra.yaml", judge=judge)
    (prompt,) = [hook for hook in registry.hooks if hook.type == "prompt"]
    assert prompt.asks_judge
    assert prompt.model is None
    original = skills.load(tmp_path / ".claude" / "settings.json")
    for name in ("Bash", "Edit", "Write", "NotebookEdit", "mcp__fs__write", "BashOutput", "x"):
        payload = {"tool_name": name, "tool_input": {}}
        now = [h.describe() for h in registry.hooks_for("PreToolUse", payload)]
        was = [h.describe() for h in original.hooks_for("PreToolUse", payload)]
        assert now == was, name
    outcome = await registry.fire("PreToolUse", {"tool_name": "Write", "tool_input": {}})
    assert outcome.blocked
    assert outcome.reason == "not on Fridays"
    assert "Is this edit safe?" in asked[0].prompt
    assert not registry.hooks_for("SubagentStart", {"agent_name": "Explore"})
