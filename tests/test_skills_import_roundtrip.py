"""``orchestra hooks import`` of an orchestra.yaml gives back a file that loads the same hooks.

Every hook type and every field that holds more than a string (an mcp_tool's server, a
sandbox, env and header pairs, an http body, pass_env lists, an id) goes out and comes
back; the import once crashed on an mcp_tool's server and wrote env as a list of pairs.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import attrs

from orchestra import skills

RICH = """
hooks:
  PreToolUse:
    - matcher: "Bash|Edit"
      hooks:
        - type: command
          id: bash-guard
          command: "./check.sh"
          env: {MODE: strict, LEVEL: "2"}
          pass_env: [HOME, "LC_*"]
          sandbox: {network: true}
          phase: guard
        - type: http
          url: https://hooks.example.com/pre
          headers: {Authorization: "Bearer $TOKEN"}
          allowed_env_vars: [TOKEN]
          body: {team: core, tags: [a, b]}
          on_error: raise
        - type: mcp_tool
          server: {command: python3, args: ["-c", "pass"], env: {A: "1"}}
          tool: check
          arguments: {cmd: "x", depth: 2}
  PermissionRequest:
    - hooks:
        - type: permission
          decision: ask
  SessionStart:
    - hooks:
        - type: prompt
          prompt: "Read notes.md first."
"""


def _config(hook: skills.HookSpec) -> dict[str, Any]:
    fields = attrs.fields(type(hook))
    return {f.name: getattr(hook, f.name) for f in fields if f.metadata.get("config", True)} | {
        "event": hook.event,
        "matcher": hook.matcher,
        "type": hook.type,
    }


def test_an_imported_orchestra_yaml_loads_the_same_hooks(tmp_path: Path) -> None:
    source = tmp_path / "orchestra.yaml"
    source.write_text(textwrap.dedent(RICH))
    done = subprocess.run(
        [sys.executable, "-m", "orchestra.cli", "hooks", "import", str(source)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    imported = tmp_path / "imported" / "orchestra.yaml"
    imported.parent.mkdir()
    imported.write_text(done.stdout)
    before = skills.load(source).hooks
    after = skills.load(imported).hooks
    assert len(before) == 5
    assert [_config(h) for h in after] == [_config(h) for h in before]
