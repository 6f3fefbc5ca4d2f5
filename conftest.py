"""Run the README's and the docs' code blocks as they are written (pytest-markdown-docs).

``make docs-code`` runs ``pytest --markdown-docs`` over README.md and docs/. Each
```` ```python ```` block is a whole program, or is fenced
```` ```{.python continuation} ```` (superfences' syntax, which mkdocs renders as Python)
to run after the block before it. Every block runs in a fresh copy of a small project
(this repository's ``examples/hooks`` as ``hooks/``, an ``orchestra.yaml``, a
``skills/`` folder and a ``.claude/`` folder, as the pages describe), with that folder
as the working directory, and with a sample ``PreToolUse`` event on stdin for the
pages' hook scripts, which read one. Nothing a block writes lands in the repository.
"""

from __future__ import annotations

import io
import json
import shutil
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent

#: The project-level config the README and the skills page load.
ORCHESTRA_YAML = """\
hooks:
  PreToolUse:
    - matcher: "Bash|Edit"
      hooks:
        - type: command
          command: "./guard.sh"
          timeout: 5
"""

GUARD_SH = """\
#!/bin/sh
# Block recursive force deletes: exit 2, stderr is the reason.
if grep -Eq 'rm +-[a-zA-Z]*r[a-zA-Z]*f'; then
  echo "recursive force delete is not allowed" >&2
  exit 2
fi
"""

SKILL_MD = """\
---
name: formatter
description: Formats Python files after every edit.
hooks:
  PostToolUse:
    - matcher: Edit
      hooks:
        - type: command
          command: "echo formatted >&2"
---
Formats Python files after every edit.
"""

#: The Claude Code settings of docs/howto/from-claude-code.md.
CLAUDE_SETTINGS = {
    "permissions": {"allow": ["Bash(npm run lint)"]},
    "hooks": {
        "PreToolUse": [
            {
                "matcher": "Bash",
                "hooks": [
                    {"type": "command", "command": '"$CLAUDE_PROJECT_DIR"/.claude/hooks/no-rm.sh'}
                ],
            }
        ],
        "SessionStart": [
            {"hooks": [{"type": "command", "command": "cat .claude/project-context.md"}]}
        ],
    },
}

#: What a hook script of the docs reads on stdin.
SAMPLE_EVENT = {
    "hook_event_name": "PreToolUse",
    "session_id": "docs",
    "cwd": ".",
    "timestamp": "2026-01-01T00:00:00Z",
    "tool_name": "Bash",
    "tool_input": {"command": "git push origin main"},
}


class _Collector(BaseHTTPRequestHandler):
    """An OTLP/HTTP endpoint on 127.0.0.1 that takes every export (for the tracing page)."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *_args: object) -> None:
        pass


@pytest.fixture(scope="session")
def otlp_collector() -> Iterator[str]:
    """The base URL of a local OTLP/HTTP collector stand-in."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Collector)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(autouse=True)
def docs_project(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    """A throwaway project folder as the working directory of a docs code block."""
    if request.node.get_closest_marker("markdown-docs") is None:
        yield tmp_path
        return
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", request.getfixturevalue("otlp_collector"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-docs-offline")  # the SDK wants one; unused
    monkeypatch.setenv("OPENAI_AGENTS_DISABLE_TRACING", "1")  # else it posts traces to OpenAI
    shutil.copytree(ROOT / "examples" / "hooks", tmp_path / "hooks")
    (tmp_path / "orchestra.yaml").write_text(ORCHESTRA_YAML)
    guard = tmp_path / "guard.sh"
    guard.write_text(GUARD_SH)
    guard.chmod(0o755)
    (tmp_path / "skills" / "formatter").mkdir(parents=True)
    (tmp_path / "skills" / "formatter" / "SKILL.md").write_text(SKILL_MD)
    claude = tmp_path / ".claude"
    (claude / "hooks").mkdir(parents=True)
    (claude / "settings.json").write_text(json.dumps(CLAUDE_SETTINGS, indent=2))
    (claude / "project-context.md").write_text("This project uses uv; run tests with make.\n")
    no_rm = claude / "hooks" / "no-rm.sh"
    no_rm.write_text(GUARD_SH)
    no_rm.chmod(0o755)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))  # importable, as for a script run from there
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(SAMPLE_EVENT)))
    yield tmp_path
