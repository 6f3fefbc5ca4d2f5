"""Command hooks get a minimal environment; env: and pass_env: open exactly what they name."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from orchestra import ConfigError
from orchestra.skills import load

pytestmark = pytest.mark.anyio

CANARY = "canary-7f3a"


@pytest.fixture(autouse=True)
def secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", CANARY)
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    monkeypatch.setenv("LC_TIME", "C")
    monkeypatch.setenv("DENY_LIST", "/etc/deny.txt")


async def hook_env(tmp_path: Path, config: str, name: str = "orchestra.yaml") -> dict[str, str]:
    """Fire one Stop hook that dumps its environment, and read it back."""
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(config).lstrip("\n"))
    outcome = await load(path, project_dir=tmp_path).fire("Stop", {})
    assert not outcome.errors, outcome.errors
    lines = (tmp_path / "env.out").read_bytes().split(b"\0")
    return dict(line.decode().split("=", 1) for line in lines if line)


DUMP = "env -0 > env.out"


async def test_a_hook_sees_no_secret_of_the_parent(tmp_path: Path) -> None:
    env = await hook_env(
        tmp_path,
        f"""
        hooks:
          Stop:
            - hooks: [{{type: command, command: '{DUMP}'}}]
        """,
    )
    assert CANARY not in "".join(env.values())
    assert set(env) <= {
        *("PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "TZ", "TERM", "TMPDIR"),
        *("LC_TIME", "PWD", "SHLVL", "_", "OLDPWD"),  # LC_*; and what sh itself sets
        *("ORCHESTRA_EVENT", "ORCHESTRA_PROJECT_DIR", "CLAUDE_PROJECT_DIR"),
    }
    assert env["LC_TIME"] == "C"
    assert (env["ORCHESTRA_EVENT"], env["CLAUDE_PROJECT_DIR"]) == ("Stop", str(tmp_path))


async def test_pass_env_passes_names_and_globs(tmp_path: Path) -> None:
    env = await hook_env(
        tmp_path,
        f"""
        hooks:
          Stop:
            - hooks:
                - type: command
                  command: '{DUMP}'
                  pass_env: [DENY_LIST, "AWS_*", NOT_SET]
        """,
    )
    assert (env["DENY_LIST"], env["AWS_REGION"]) == ("/etc/deny.txt", "eu-west-1")
    assert env["AWS_SECRET_ACCESS_KEY"] == CANARY
    assert "OPENAI_API_KEY" not in env
    assert "NOT_SET" not in env


async def test_pass_env_star_passes_everything(tmp_path: Path) -> None:
    env = await hook_env(
        tmp_path,
        f"""
        hooks:
          Stop:
            - hooks: [{{type: command, command: '{DUMP}', pass_env: ["*"]}}]
        """,
    )
    assert env["OPENAI_API_KEY"] == CANARY


async def test_env_sets_variables_and_reads_the_parent_s_by_reference(tmp_path: Path) -> None:
    env = await hook_env(
        tmp_path,
        f"""
        env:
          MODE: strict
          BLOCKLIST: "${{DENY_LIST}}"
        pass_env: [AWS_REGION]
        hooks:
          Stop:
            - hooks:
                - type: command
                  command: '{DUMP}'
                  env: {{MODE: lenient, EMPTY: "${{NOT_SET}}", ORCHESTRA_EVENT: spoofed}}
        """,
    )
    assert (env["MODE"], env["BLOCKLIST"], env["EMPTY"]) == ("lenient", "/etc/deny.txt", "")
    assert env["AWS_REGION"] == "eu-west-1"  # the file's pass_env
    assert env["ORCHESTRA_EVENT"] == "Stop"  # project variables are not overridden
    assert "DENY_LIST" not in env


async def test_a_skill_front_matter_may_set_env_for_its_hooks(tmp_path: Path) -> None:
    env = await hook_env(
        tmp_path,
        f"""
        ---
        name: audit
        pass_env: [DENY_LIST]
        hooks:
          Stop:
            - hooks: [{{type: command, command: '{DUMP}'}}]
        ---
        """,
        name="skills/audit/SKILL.md",
    )
    assert env["DENY_LIST"] == "/etc/deny.txt"
    assert env["SKILL_DIR"] == str(tmp_path / "skills" / "audit")


def test_env_is_part_of_a_hook_s_identity(tmp_path: Path) -> None:
    path = tmp_path / "orchestra.yaml"
    path.write_text(
        "hooks:\n  Stop:\n    - hooks:\n"
        "      - {type: command, command: 'true'}\n"
        "      - {type: command, command: 'true', pass_env: [HOME]}\n"
        "      - {type: command, command: 'true', env: {A: b}}\n"
        "      - {type: command, command: 'true', pass_env: [HOME, HOME]}\n"
    )
    assert len(load(path).hooks) == 3


@pytest.mark.parametrize(
    ("body", "line", "message"),
    [
        (
            "      - {type: command, command: x, pass_env: ['AWS KEY']}\n",
            4,
            "hooks.Stop[0].hooks[0].pass_env: 'AWS KEY' is not a variable name or glob",
        ),
        (
            "      - type: command\n        command: x\n        env: {DEBUG: 1}\n",
            6,
            "hooks.Stop[0].hooks[0].env.DEBUG: expected a string, got a number (1)",
        ),
        (
            "      - {type: command, command: x, env: {1BAD: x}}\n",
            4,
            "hooks.Stop[0].hooks[0].env.1BAD: '1BAD' is not a variable name",
        ),
        (
            "      - {type: command, command: x, env: [A]}\n",
            4,
            "hooks.Stop[0].hooks[0].env: expected a mapping of variable names to strings",
        ),
        (
            "      - {type: http, url: 'https://h.example', pass_env: [A]}\n",
            4,
            "hooks.Stop[0].hooks[0].pass_env: unknown field for a http hook "
            "('pass_env' is a field of command hooks)",
        ),
        (
            "      - {type: command, command: x, passenv: [A]}\n",
            4,
            "hooks.Stop[0].hooks[0].passenv: unknown field for a command hook "
            "(did you mean 'pass_env'?)",
        ),
    ],
)
def test_bad_env_settings_are_refused_with_file_line_and_field(
    tmp_path: Path, body: str, line: int, message: str
) -> None:
    path = tmp_path / "orchestra.yaml"
    path.write_text("hooks:\n  Stop:\n    - hooks:\n" + body)
    with pytest.raises(ConfigError) as info:
        load(path)
    assert str(info.value).startswith(f"{path}:{line}: {message}")


def test_bad_file_level_env_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "orchestra.yaml"
    path.write_text("pass_env: ['$HOME']\nenvs: {}\nhooks: {}\n")
    with pytest.raises(ConfigError) as info:
        load(path)
    assert [str(error) for error in info.value.errors] == [
        f"{path}:1: pass_env: '$HOME' is not a variable name or glob "
        "(letters, digits, _, and the glob characters * ? [...])",
        f"{path}:2: envs: unknown top-level field (did you mean 'env'?)",
    ]
