"""``load(..., pass_env=...)``: named variables reach the hooks of every source."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from orchestra.skills import load

pytestmark = pytest.mark.anyio

WRITE = 'printf "%s" "${{SOURCES_TOKEN-unset}}" > "$ORCHESTRA_PROJECT_DIR/seen-{kind}.txt"'


def orchestra_yaml(root: Path) -> tuple[Path, str, dict[str, object]]:
    path = root / "orchestra.yaml"
    command = json.dumps(WRITE.format(kind="yaml"))
    path.write_text(
        f"hooks:\n  Stop:\n    - hooks:\n        - type: command\n          command: {command}\n"
    )
    return path, "Stop", {}


def claude_settings(root: Path) -> tuple[Path, str, dict[str, object]]:
    path = root / ".claude" / "settings.json"
    path.parent.mkdir()
    hook = {"type": "command", "command": WRITE.format(kind="claude")}
    path.write_text(json.dumps({"hooks": {"Stop": [{"hooks": [hook]}]}}))
    return path, "Stop", {}


def graph_hooks(root: Path) -> tuple[Path, str, dict[str, object]]:
    path = root / "hooks.json"
    path.write_text(json.dumps([{"event": "GraphStart", "command": WRITE.format(kind="graph")}]))
    return path, "RunStart", {"dag": "d", "run_id": "r", "task_ids": []}


def arc_toml(root: Path) -> tuple[Path, str, dict[str, object]]:
    path = root / "run.toml"
    command = json.dumps(WRITE.format(kind="arc"))
    path.write_text(f'[[hooks]]\nevent = "run_start"\ncommand = {command}\n')
    return path, "RunStart", {"dag": "d", "run_id": "r", "task_ids": []}


def skill(root: Path) -> tuple[Path, str, dict[str, object]]:
    folder = root / "skills" / "lint"
    folder.mkdir(parents=True)
    command = json.dumps(WRITE.format(kind="skill"))
    (folder / "SKILL.md").write_text(
        textwrap.dedent(f"""\
        ---
        name: lint
        description: lints
        hooks:
          Stop:
            - hooks:
                - type: command
                  command: {command}
        ---
        Lint.
        """)
    )
    return folder / "SKILL.md", "Stop", {}


def seen(root: Path) -> list[str]:
    """What each hook that ran saw of the variable."""
    return [path.read_text() for path in root.glob("seen-*.txt")]


SOURCES = [orchestra_yaml, claude_settings, graph_hooks, arc_toml, skill]


@pytest.mark.parametrize("source", SOURCES, ids=lambda s: s.__name__)
@pytest.mark.parametrize("passed", [True, False])
async def test_named_variables_reach_every_sources_hooks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: object, passed: bool
) -> None:
    monkeypatch.setenv("SOURCES_TOKEN", "s3cret")
    monkeypatch.setenv("SOURCES_OTHER", "not named")
    path, event, payload = source(tmp_path)  # type: ignore[operator]
    names = ("SOURCES_TOKEN",) if passed else ()
    reg = load(path, project_dir=tmp_path, pass_env=names)
    outcome = await reg.fire(event, payload)
    assert not outcome.errors, outcome.errors
    assert seen(tmp_path) == ["s3cret" if passed else "unset"]


async def test_globs_pass_and_other_variables_stay_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOURCES_TOKEN", "one")
    monkeypatch.setenv("SOURCES_OTHER", "two")
    monkeypatch.setenv("UNRELATED_SECRET", "three")
    path = tmp_path / "hooks.json"
    command = 'env > "$ORCHESTRA_PROJECT_DIR/env.txt"'
    path.write_text(json.dumps([{"event": "GraphStart", "command": command}]))
    reg = load(path, project_dir=tmp_path, pass_env=["SOURCES_*"])
    await reg.fire("RunStart", {"dag": "d", "run_id": "r", "task_ids": []})
    env = (tmp_path / "env.txt").read_text().splitlines()
    assert "SOURCES_TOKEN=one" in env
    assert "SOURCES_OTHER=two" in env
    assert not [line for line in env if line.startswith("UNRELATED_SECRET=")]


def test_bad_pass_env_is_refused_clearly(tmp_path: Path) -> None:
    path = tmp_path / "hooks.json"
    path.write_text("[]")
    with pytest.raises(TypeError, match=r"not a string: write pass_env=\('HOME',\)"):
        load(path, pass_env="HOME")
    with pytest.raises(ValueError, match="pass_env: 'A B' is not a variable name or glob"):
        load(path, pass_env=("A B",))
