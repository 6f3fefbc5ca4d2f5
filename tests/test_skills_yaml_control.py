"""Control characters in hook files: one ConfigError line naming file:line (issue 49, 13).

The audit: a NUL or another C0 control character in YAML escaped ``load()`` and
``orchestra hooks validate`` as a raw ``yaml.reader.ReaderError`` traceback.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from orchestra.skills import ConfigError, load


def _write(folder: Path, char: str, name: str = "orchestra.yaml") -> Path:
    path = folder / name
    body = f'hooks:\n  Stop:\n    - hooks: [{{type: command, command: "echo {char}x"}}]\n'
    if name == "SKILL.md":
        body = f"---\nname: s\ndescription: d\n{body}---\nA skill.\n"
    path.write_text(body)
    return path


@pytest.mark.parametrize("char", ["\x00", "\x01", "\x07", "\x1b", "\x7f"])
def test_a_control_character_is_one_config_error_with_its_line(tmp_path: Path, char: str) -> None:
    path = _write(tmp_path, char)
    with pytest.raises(ConfigError) as info:
        load(path)
    text = str(info.value)
    assert text.startswith(f"{path}:3: a control character (U+{ord(char):04X})")
    assert "\n" not in text


def test_in_a_skill_s_front_matter_the_line_is_the_file_s(tmp_path: Path) -> None:
    skill = tmp_path / "s"
    skill.mkdir()
    path = _write(skill, "\x00", "SKILL.md")
    with pytest.raises(ConfigError, match=rf"{path}:6: a control character \(U\+0000\)"):
        load(path)


def test_validate_prints_one_line_and_no_traceback(tmp_path: Path) -> None:
    path = _write(tmp_path, "\x00")
    done = subprocess.run(
        [sys.executable, "-m", "orchestra.cli", "hooks", "validate", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert "Traceback" not in done.stderr + done.stdout
    assert f"{path}:3: a control character (U+0000)" in done.stdout + done.stderr
    assert "ReaderError" not in done.stdout + done.stderr
