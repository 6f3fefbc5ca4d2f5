"""A command hook's script that is not executable is warned about before it fails every call.

Following docs/howto/hook-scripts.md literally (write the script, name it in the command)
gave a guard that blocked every call with "exited 126 (not executable)", while
``orchestra hooks validate`` said ``ok``. Now validate warns and says ``chmod +x``, so
does ``load`` (a logged warning), and the page says it.
"""

from __future__ import annotations

import logging
import subprocess
from pathlib import Path

import pytest
from helpers.cli import orchestra_cli

from orchestra import skills

ROOT = Path(__file__).resolve().parent.parent

CONFIG = """\
hooks:
  PreToolUse:
    - matcher: Bash
      hooks:
        - type: command
          command: "./hooks/no-dotenv.sh"
        - type: command
          command: "sh hooks/no-dotenv.sh"
"""
SCRIPT = "#!/bin/sh\nif grep -q '\\.env'; then echo 'no .env' >&2; exit 2; fi\n"


def _project(tmp_path: Path, mode: int) -> Path:
    (tmp_path / "hooks").mkdir()
    script = tmp_path / "hooks" / "no-dotenv.sh"
    script.write_text(SCRIPT)
    script.chmod(mode)
    (tmp_path / "orchestra.yaml").write_text(CONFIG)
    return script


def _validate(tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return orchestra_cli("hooks", "validate", "orchestra.yaml", cwd=tmp_path)


def test_validate_warns_for_a_script_without_its_execute_bit(tmp_path: Path) -> None:
    script = _project(tmp_path, 0o644)
    out = _validate(tmp_path)
    assert out.returncode == 0, out.stderr  # a warning, not a problem
    assert out.stdout.splitlines() == [
        f"warning: orchestra.yaml:5: ./hooks/no-dotenv.sh is not executable: chmod +x "
        f"{script} (until then this hook fails each time it fires: exited 126)",
        "ok: 2 hooks in 1 path(s)",
    ]  # once (not also as load's log line), and not for `sh hooks/no-dotenv.sh`
    assert out.stderr == ""
    script.chmod(0o755)
    assert _validate(tmp_path).stdout.splitlines() == ["ok: 2 hooks in 1 path(s)"]


def test_load_logs_the_same_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    script = _project(tmp_path, 0o644)
    with caplog.at_level(logging.WARNING, logger="orchestra.skills"):
        skills.load(tmp_path / "orchestra.yaml", project_dir=tmp_path)
    assert [r.getMessage() for r in caplog.records] == [
        f"{tmp_path / 'orchestra.yaml'}:5: ./hooks/no-dotenv.sh is not executable: chmod +x "
        f"{script} (until then this hook fails each time it fires: exited 126)"
    ]
    script.chmod(0o755)
    caplog.clear()
    skills.load(tmp_path / "orchestra.yaml", project_dir=tmp_path)
    assert caplog.records == []


def test_the_hook_scripts_page_says_chmod() -> None:
    page = (ROOT / "docs" / "howto" / "hook-scripts.md").read_text()
    assert "chmod +x hooks/no-dotenv.sh" in page
    assert page.index("chmod +x") < page.index("## Reading the event")
