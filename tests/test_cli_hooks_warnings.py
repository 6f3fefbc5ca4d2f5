"""``orchestra hooks validate`` warns for what this machine lacks, and still says ok.

An ``http`` hook without httpx, an ``mcp_tool`` hook without the mcp SDK (run with those
modules made impossible to import, as on a plain install), a command whose script,
named by a relative path, does not exist: one warning each that says what to do; exit 0.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.test_cli_failures import cli

CONFIG = textwrap.dedent(
    """
    hooks:
      PreToolUse:
        - matcher: "Bash"
          hooks:
            - type: command
              command: "./guard.sh"
            - type: command
              command: "python3 hooks/check.py --strict"
            - type: command
              command: "bash hooks/real.sh && jq -r .tool_input | grep -q 'rm -rf /'"
            - type: command
              command: "$ORCHESTRA_PROJECT_DIR/hooks/gone.sh"
            - type: command
              command: "echo '{}'"
            - type: http
              url: "https://example.com/hook"
            - type: mcp_tool
              server: tools
              tool: check
    """
)


def warnings(text: str) -> dict[int, str]:
    """The warnings by the config line they point at."""
    found: dict[int, str] = {}
    for line in text.splitlines():
        if line.startswith("warning: orchestra.yaml:"):
            number, _, said = line.removeprefix("warning: orchestra.yaml:").partition(": ")
            found[int(number)] = said
    return found


def test_missing_scripts_warn_and_say_what_to_do(tmp_path: Path) -> None:
    (tmp_path / "orchestra.yaml").write_text(CONFIG)
    (tmp_path / "hooks").mkdir()
    (tmp_path / "hooks" / "real.sh").write_text("exit 0\n")
    out = cli("hooks", "validate", "orchestra.yaml", cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.splitlines()[-1] == "ok: 7 hooks in 1 path(s)"
    said = warnings(out.stdout)
    assert set(said) == {6, 8, 12}, out.stdout  # not real.sh, jq, grep's pattern or echo
    assert said[6].startswith(f"./guard.sh not found (looked for {tmp_path / 'guard.sh'}, ")
    assert "create it, or fix the path" in said[6]
    assert said[8].startswith("hooks/check.py not found")
    gone = tmp_path / "hooks" / "gone.sh"
    assert said[12].startswith(f"$ORCHESTRA_PROJECT_DIR/hooks/gone.sh not found (looked for {gone}")
    (tmp_path / "guard.sh").write_text("exit 0\n")
    (tmp_path / "guard.sh").chmod(0o755)  # else: found, and not executable
    assert 6 not in warnings(cli("hooks", "validate", "orchestra.yaml", cwd=tmp_path).stdout)


def test_a_script_of_the_project_above_the_config_is_found(tmp_path: Path) -> None:
    # examples/hooks/orchestra.yaml runs $ORCHESTRA_PROJECT_DIR/hooks/guard.py with the
    # project at examples/: validated from anywhere, the script is found from the config up
    project = tmp_path / "project"
    (project / "conf" / "deep").mkdir(parents=True)
    (project / "bin").mkdir()
    (project / "bin" / "stop.sh").write_text("exit 0\n")
    (project / "bin" / "stop.sh").chmod(0o755)
    (project / "conf" / "deep" / "orchestra.yaml").write_text(
        "hooks:\n  Stop:\n    - hooks:\n"
        "        - type: command\n          command: ./bin/stop.sh\n"
        "        - type: command\n          command: $ORCHESTRA_PROJECT_DIR/bin/stop.sh\n"
        "        - type: command\n          command: ./bin/start.sh\n"
    )
    out = cli("hooks", "validate", str(project / "conf" / "deep" / "orchestra.yaml"), cwd=tmp_path)
    assert out.returncode == 0
    lines = [w for w in out.stdout.splitlines() if w.startswith("warning:")]
    assert len(lines) == 1, out.stdout
    assert ":8: ./bin/start.sh not found" in lines[0]
    assert f"from {project / 'conf' / 'deep'} up" in lines[0]


def test_missing_extras_warn_with_the_pip_command(tmp_path: Path) -> None:
    (tmp_path / "orchestra.yaml").write_text(CONFIG)
    (tmp_path / "guard.sh").write_text("exit 0\n")
    with_them = cli("hooks", "validate", "orchestra.yaml", cwd=tmp_path)
    assert {16, 18}.isdisjoint(warnings(with_them.stdout))  # the dev install has both
    out = cli("hooks", "validate", "orchestra.yaml", cwd=tmp_path, without="httpx,mcp")
    assert out.returncode == 0, out.stdout + out.stderr
    said = warnings(out.stdout)
    assert said[16] == (
        "http hooks need httpx, which is not installed: pip install 'orchestra-hooks[http]' "
        "(until then this hook fails when it fires, as a hook error)"
    )
    assert said[18].startswith("mcp_tool hooks need the mcp SDK, which is not installed: ")
    assert "pip install 'orchestra-hooks[mcp]'" in said[18]
    assert out.stdout.splitlines()[-1] == "ok: 7 hooks in 1 path(s)"
