"""``orchestra hooks ...`` run as a real subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest


def orchestra(
    *args: str | Path, cwd: Path, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    # The trust store lives in the test's folder, never in the user's.
    env = {**os.environ, "XDG_CONFIG_HOME": str(cwd / ".config")}
    return subprocess.run(
        [sys.executable, "-m", "orchestra.cli", *map(str, args)],
        cwd=cwd,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "orchestra.yaml").write_text(
        textwrap.dedent(
            """
            hooks:
              PreToolUse:
                - matcher: Bash
                  hooks:
                    - type: command
                      command: >-
                        echo "checking" >&2;
                        grep -q 'rm -rf' && { echo "no rm -rf" >&2; exit 2; } || true
                    - type: prompt
                      prompt: "Bash ran"
              Stop:
                - hooks: [{type: command, command: 'exit 1'}]
            """
        ).lstrip()
    )
    skill = tmp_path / "skills" / "fmt"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: fmt\nhooks:\n  PostToolUse:\n    - matcher: Edit|Write\n"
        "      hooks: [{type: command, command: 'true'}]\n---\n"
    )
    trusted = orchestra("hooks", "trust", "orchestra.yaml", "skills", cwd=tmp_path)
    assert trusted.returncode == 0, trusted.stderr
    return tmp_path


def test_validate_ok(project: Path) -> None:
    proc = orchestra("hooks", "validate", "orchestra.yaml", "skills", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "ok: 4 hooks in 2 path(s)\n"


def test_validate_prints_every_problem_with_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text(
        "hooks:\n  PreToolUs: []\n  Stop:\n    - hooks: [{type: command, command: x, timeout: 0}]\n"
    )
    (tmp_path / "SKILL.md").write_text("---\nhooks:\n  Stop:\n    - hooks: [{type: nope}]\n---\n")
    proc = orchestra("hooks", "validate", "bad.yaml", "SKILL.md", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stdout.splitlines() == [
        "bad.yaml:2: hooks.PreToolUs: unknown event (did you mean 'PreToolUse'?)",
        "bad.yaml:4: hooks.Stop[0].hooks[0].timeout: must be in (0, 300] seconds, got 0",
        "SKILL.md:4: hooks.Stop[0].hooks[0].type: unknown hook type 'nope'",
    ]
    assert "3 problems found" in proc.stderr


def test_list_shows_event_matcher_type_and_source(project: Path) -> None:
    proc = orchestra("hooks", "list", "orchestra.yaml", "skills", cwd=project)
    assert proc.returncode == 0, proc.stderr
    rows = [line for line in proc.stdout.splitlines() if "│" in line]
    cells = [[cell.strip() for cell in row.strip("│").split("│")] for row in rows]
    assert [(c[0], c[1], c[2], c[-1]) for c in cells] == [
        ("PreToolUse", "Bash", "command", "orchestra.yaml:5"),
        ("PreToolUse", "Bash", "prompt", "orchestra.yaml:9"),
        ("Stop", "*", "command", "orchestra.yaml:12"),
        ("PostToolUse", "Edit|Write", "command", "skills/fmt/SKILL.md:6"),
    ]


def test_list_json(project: Path) -> None:
    proc = orchestra("hooks", "list", "--json", "orchestra.yaml", cwd=project)
    listed = json.loads(proc.stdout)
    assert [(h["event"], h["source"], h["on_error"]) for h in listed] == [
        ("PreToolUse", "orchestra.yaml:5", "block"),
        ("PreToolUse", "orchestra.yaml:9", "block"),
        ("Stop", "orchestra.yaml:12", "continue"),
    ]


def test_test_shows_each_hook_and_the_final_outcome(project: Path) -> None:
    payload = json.dumps({"tool_name": "Bash", "tool_input": {"command": "rm -rf /"}})
    proc = orchestra(
        "hooks", "test", "PreToolUse", "--payload", payload, "orchestra.yaml", cwd=project
    )
    assert proc.returncode == 1, proc.stderr  # blocked: the answer is no (2: unusable input)
    out = proc.stdout
    assert "PreToolUse: 2 of 2 hooks match the payload" in out
    assert "orchestra.yaml:5" in out
    assert "decision: block" in out
    assert "not run: chain ended" in out
    assert "outcome: blocked (deny)" in out
    assert "reason: checking\nno rm -rf" in out
    assert "decided by: orchestra.yaml:5" in out
    assert "checking" in out  # the hook's stderr


def test_test_reads_the_payload_from_a_file_and_prints_json(project: Path) -> None:
    (project / "payload.json").write_text(json.dumps({"tool_name": "Bash", "tool_input": {}}))
    proc = orchestra(
        "hooks",
        "test",
        "PreToolUse",
        "--payload",
        "@payload.json",
        "--json",
        "orchestra.yaml",
        cwd=project,
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    first, second = report["hooks"]
    assert (first["exit_code"], first["stderr"], first["result"]["decision"]) == (
        0,
        "checking\n",
        None,
    )
    assert second["result"]["messages"] == ["Bash ran"]
    assert report["outcome"]["messages"] == ["Bash ran"]
    assert report["outcome"]["blocked"] is False


def test_test_shows_hook_errors(project: Path) -> None:
    proc = orchestra("hooks", "test", "Stop", "--json", "orchestra.yaml", cwd=project)
    (record,) = json.loads(proc.stdout)["hooks"]
    assert (record["error"], record["exit_code"], record["note"]) == (
        "exited 1",
        1,
        "error ignored (on_error: continue)",
    )


def test_test_refuses_an_unknown_event_and_bad_payload(project: Path) -> None:
    proc = orchestra("hooks", "test", "PreToolUs", "orchestra.yaml", cwd=project)
    assert proc.returncode == 2
    assert "did you mean 'PreToolUse'?" in proc.stderr
    proc = orchestra("hooks", "test", "Stop", "--payload", "[1]", "orchestra.yaml", cwd=project)
    assert proc.returncode == 2
    assert "the payload must be a JSON object" in proc.stderr


def test_main_group_help_and_version(tmp_path: Path) -> None:
    proc = orchestra("--help", cwd=tmp_path)
    assert proc.returncode == 0
    assert "hooks" in proc.stdout
    assert orchestra("--version", cwd=tmp_path).stdout.startswith("orchestra, version ")


def test_validate_notes_and_import_of_a_claude_code_file(tmp_path: Path) -> None:
    claude = tmp_path / ".claude"
    claude.mkdir()
    settings = {
        "permissions": {"allow": ["Bash(ls)"]},
        "hooks": {
            "PreToolUse": [
                {
                    "matcher": "Bash",
                    "hooks": [{"type": "command", "command": "./check.sh", "onFailure": "block"}],
                }
            ],
            "SessionStart": [{"hooks": [{"type": "command", "command": "cat notes.md"}]}],
        },
    }
    (claude / "settings.json").write_text(json.dumps(settings, indent=2))
    proc = orchestra("hooks", "validate", ".", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "note: .claude/settings.json:2: permissions: a Claude Code setting" in proc.stdout
    assert "ok: 2 hooks in 1 path(s)" in proc.stdout
    proc = orchestra("hooks", "import", ".claude/settings.json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "permissions" in proc.stderr
    assert "timeout" not in proc.stderr  # the file sets none: no note (Claude Code's 600 s, cut)
    (tmp_path / "orchestra.yaml").write_text(proc.stdout)
    proc = orchestra("hooks", "list", "--json", "orchestra.yaml", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    imported = json.loads(proc.stdout)
    assert [(h["event"], h["what"], h["on_error"], h["timeout"]) for h in imported] == [
        ("PreToolUse", "./check.sh", "block", 300.0),
        ("SessionStart", "cat notes.md", "continue", 300.0),
    ]


def test_list_shows_each_hook_id(tmp_path: Path) -> None:
    (tmp_path / "orchestra.yaml").write_text(
        textwrap.dedent(
            """
            hooks:
              Stop:
                - hooks:
                    - {type: command, command: "true", id: audit}
                    - {type: command, command: "false"}
            """
        ).lstrip("\n")
    )
    proc = orchestra("hooks", "list", "--json", "orchestra.yaml", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert [h["id"] for h in json.loads(proc.stdout)] == ["audit", "orchestra.yaml#Stop/0/1"]
    proc = orchestra("hooks", "list", "orchestra.yaml", cwd=tmp_path)
    assert "orchestra.yaml:4 (audit)" in proc.stdout
