"""Run the README's and the docs' code blocks as they are written (pytest-markdown-docs).

``make docs-code`` runs ``pytest --markdown-docs`` over README.md and docs/. Each
```` ```python ```` block is a whole program, or is fenced
```` ```{.python continuation} ```` (superfences' syntax, which mkdocs renders as Python)
to run after the block before it. Every block runs in a fresh copy of a small project
(this repository's ``examples/hooks`` as ``hooks/``, an ``orchestra.yaml``, a
``skills/`` folder and a ``.claude/`` folder, as the pages describe), with that folder
as the working directory, and with a sample ``PreToolUse`` event on stdin for the
pages' hook scripts, which read one. Nothing a block writes lands in the repository.
A block runs as a script (``__name__ == "__main__"``), and what it shows it prints is
checked: a comment at the end of a ``print`` line is that call's output (``...`` for any
text), so a block that prints another value, or never reaches the call, fails.

A page's config blocks are files of that project: a ```` ```yaml ````, ``json``, ``toml``
or ``sh`` block named by its title (```` ```yaml title="orchestra.yaml" ````) or by a
comment on its first line (``# echo-agent.yaml``, ``# orchestra.yaml: ...``) is written
there, as the page shows it, for the Python blocks after it, which load it with
orchestra's loader and check what the page says about it.
"""

from __future__ import annotations

import io
import json
import re
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


_CONFIG_LANGS = frozenset({"yaml", "yml", "json", "toml", "sh"})
_FILE_NAME = r"[\w.-]+\.(?:yaml|yml|json|toml|sh)"
_TITLE = re.compile(rf'title="({_FILE_NAME})"')
_FIRST_LINE = re.compile(rf"^(?:#|//)\s*({_FILE_NAME})\b")


def _page_files(page: Path, before: int) -> dict[str, str]:
    """The files a page's config blocks above line ``before`` show: name -> text.

    A later block of the same name replaces an earlier one, as it would on disk.
    """
    from markdown_it import MarkdownIt

    files: dict[str, str] = {}
    for token in MarkdownIt("commonmark").parse(page.read_text()):
        if token.type != "fence" or not token.map or token.map[0] + 1 >= before:
            continue
        info = token.info.strip().lstrip("{").rstrip("}")
        lang = info.split(" ", 1)[0].lstrip(".") if info else ""
        if lang not in _CONFIG_LANGS:
            continue
        named = _TITLE.search(info) or _FIRST_LINE.match(token.content)
        if named is not None:
            files[named.group(1)] = token.content
    return files


def _write_page_files(request: pytest.FixtureRequest, folder: Path) -> None:
    """Write the config blocks of the running block's page above it into ``folder``."""
    definition = getattr(request.node, "test_definition", None)
    page = getattr(definition, "source_path", None)
    if definition is None or page is None or Path(page).suffix != ".md":
        return
    for name, text in _page_files(Path(page), definition.start_line).items():
        target = folder / name
        target.write_text(text)
        if name.endswith(".sh"):
            target.chmod(0o755)


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
    _write_page_files(request, tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))  # importable, as for a script run from there
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(SAMPLE_EVENT)))
    yield tmp_path


# What a block shows it prints. A comment at the end of a line that calls ``print`` is
# what that call prints (``...`` stands for any text): `print(total)  # 499500`. The
# docs test fails a block whose call printed something else, or never ran, so a page
# cannot show an output its code does not give. An explanation goes on a line of its own.
_SHOWN_WILDCARD = "..."


class _Printed:
    """What each ``print`` call of the running block printed, by the block's line."""

    def __init__(self) -> None:
        self.lines: dict[int, list[str]] = {}

    def print(self, *args: object, sep: str | None = " ", **kwargs: object) -> None:
        caller = sys._getframe(1)
        if caller.f_code.co_filename == self.filename:
            text = (" " if sep is None else sep).join(map(str, args))
            self.lines.setdefault(caller.f_lineno, []).append(text)
        print(*args, sep=sep, **kwargs)  # type: ignore[call-overload]

    filename = ""


_PRINTED = _Printed()


@pytest.hookimpl(optionalhook=True)  # pytest-markdown-docs is a dev tool: .venv-crewai lacks it
def pytest_markdown_docs_globals() -> dict[str, object]:
    """Every block runs as a script (``__main__``) and its ``print`` is the recording one."""
    return {"__name__": "__main__", "print": _PRINTED.print}


def _shown(source: str) -> dict[tuple[int, int], str]:
    """The shown outputs of a block: each ``print`` call's line span -> its end comment."""
    import ast
    import tokenize

    comments = {
        tok.start[0]: tok.string[1:].strip()
        for tok in tokenize.generate_tokens(io.StringIO(source).readline)
        if tok.type == tokenize.COMMENT
    }
    spans = {}
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "print"
            and node.end_lineno in comments
        ):
            spans[(node.lineno, node.end_lineno)] = comments[node.end_lineno]
    return spans


def _matches(shown: str, printed: str) -> bool:
    """Whether a printed text is the shown one, ``...`` matching any text."""
    parts = shown.split(_SHOWN_WILDCARD)
    if len(parts) == 1:
        return printed == shown
    if not (printed.startswith(parts[0]) and printed.endswith(parts[-1])):
        return False
    at, end = len(parts[0]), len(printed) - len(parts[-1])
    for part in parts[1:-1]:
        found = printed.find(part, at, end)
        if found < 0:
            return False
        at = found + len(part)
    return at <= end


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """Check a docs block's shown outputs against what its ``print`` calls printed."""
    if item.get_closest_marker("markdown-docs") is None:
        return (yield)
    source = dict(item.user_properties)["code"]
    assert isinstance(source, str)
    _PRINTED.lines = {}
    _PRINTED.filename = str(getattr(item, "path", ""))
    result = yield
    wrong = []
    for (first, last), shown in sorted(_shown(source).items()):
        printed = [text for line in range(first, last + 1) for text in _PRINTED.lines.get(line, [])]
        if not any(_matches(shown, text) for text in printed):
            got = " | ".join(printed) if printed else "nothing (the call never ran)"
            wrong.append(f"line {last} shows {shown!r}, printed: {got}")
    if wrong:
        pytest.fail("a block's shown output is not what it prints:\n" + "\n".join(wrong))
    return result
