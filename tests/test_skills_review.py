"""Reviewing is never running: the review commands read a cloned repository and report.

``orchestra hooks validate``, ``list``, ``import``, ``trust`` and ``trusted`` (and
``load(require_trust=True)`` of a file not trusted) must import no ``type: python``
hook's module and start no process: a user runs them precisely to read a repository
before trusting it. Each test clones a "repository" whose python hook module writes a
marker file when imported, and whose command, persistent and mcp_tool hooks write one
when started, then runs the installed ``orchestra`` command on it for real.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from orchestra import ConfigError
from orchestra.skills import load
from orchestra.skills._hooks.python import read_callable

MODULE = """\
import pathlib
pathlib.Path({marker!r}).write_text("imported")


def check(event):
    return {{"decision": "deny", "reason": "from the module"}}


class Policy:
    @staticmethod
    def judge(event):
        return None


if __name__ == "__main__":
    def only_as_a_script(event):
        return None
"""


def started(marker: Path) -> str:
    """A shell command that leaves a marker when it runs."""
    return f"echo started >> {marker}"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A cloned repository: hooks of every kind that runs something, each leaving a mark."""
    repo = tmp_path / "cloned"
    marks = tmp_path / "marks"
    marks.mkdir()
    (repo / "pkg").mkdir(parents=True)
    (repo / "clonedhook.py").write_text(MODULE.format(marker=str(marks / "module")))
    (repo / "pkg" / "__init__.py").write_text(MODULE.format(marker=str(marks / "package")))
    (repo / "pkg" / "inner.py").write_text(MODULE.format(marker=str(marks / "inner")))
    (repo / "orchestra.yaml").write_text(
        textwrap.dedent(
            f"""\
            hooks:
              PreToolUse:
                - hooks:
                    - {{type: python, callable: "clonedhook:check"}}
                    - {{type: python, callable: "pkg.inner:Policy.judge"}}
                    - {{type: command, command: "{started(marks / "command")}"}}
                    - {{type: command, command: "{started(marks / "persistent")}; cat",
                        persistent: true}}
                    - {{type: mcp_tool, server: {{command: sh, args: [-c,
                        "{started(marks / "mcp")}"]}}, tool: t}}
            """
        )
    )
    # ``hooks import`` converts: its file without the mcp_tool hook (an inline server
    # is not what Claude Code's files hold).
    text = (repo / "orchestra.yaml").read_text()
    (repo / "import.yaml").write_text(text[: text.index("        - {type: mcp_tool")])
    skill = repo / "skills" / "fmt" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text(
        "---\nname: fmt\ndescription: formats\nhooks:\n  Stop:\n    - hooks:\n"
        "        - {type: python, callable: 'clonedhook:check'}\n---\nbody\n"
    )
    return repo


def marks(repo: Path) -> list[str]:
    return sorted(path.name for path in (repo.parent / "marks").iterdir())


def orchestra(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # The installed command, from the repository's folder (as a user reviews a clone):
    # the current folder is on the path where python hooks are looked up.
    env = {**os.environ, "XDG_CONFIG_HOME": str(repo.parent / "config")}
    return subprocess.run(
        [str(Path(sys.executable).parent / "orchestra"), *args],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize(
    "command",
    [
        ("hooks", "validate", "orchestra.yaml", "skills"),
        ("hooks", "list", "orchestra.yaml", "skills"),
        ("hooks", "list", "--json", "orchestra.yaml", "skills"),
        ("hooks", "import", "import.yaml"),
        ("hooks", "trust", "orchestra.yaml", "skills"),
        ("hooks", "trusted"),
    ],
    ids=lambda command: " ".join(command[1:]),
)
def test_a_review_command_imports_no_module_and_starts_no_process(
    repo: Path, command: tuple[str, ...]
) -> None:
    if command[1] == "trusted":
        assert orchestra(repo, "hooks", "trust", ".").returncode == 0
    proc = orchestra(repo, *command)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert marks(repo) == []


def test_validate_says_what_it_did_not_import(repo: Path) -> None:
    proc = orchestra(repo, "hooks", "validate", "orchestra.yaml")
    assert proc.returncode == 0, proc.stdout
    notes = [line for line in proc.stdout.splitlines() if "was not imported" in line]
    assert [note.split(":")[2] for note in notes] == ["4", "5"]  # both python hooks
    assert "clonedhook:check" in notes[0]
    assert marks(repo) == []


def test_validate_reads_the_module_s_source_for_a_missing_function(repo: Path) -> None:
    (repo / "bad.yaml").write_text(
        "hooks:\n  Stop:\n    - hooks:\n"
        "        - {type: python, callable: 'clonedhook:chek'}\n"
        "        - {type: python, callable: 'pkg.inner:Policy.jugde'}\n"
        "        - {type: python, callable: 'clonedhook:only_as_a_script'}\n"
    )
    proc = orchestra(repo, "hooks", "validate", "bad.yaml")
    assert proc.returncode == 1
    assert proc.stdout == (
        "bad.yaml:4: hooks.Stop[0].hooks[0].callable: "
        "clonedhook has no attribute 'chek' (did you mean 'check'?)\n"
        "bad.yaml:5: hooks.Stop[0].hooks[1].callable: "
        "pkg.inner:Policy has no attribute 'jugde' (did you mean 'judge'?)\n"
    )
    assert marks(repo) == []  # the package's __init__ was not run either


def test_hooks_test_of_a_trusted_repository_does_import(repo: Path) -> None:
    # The other side: the marks above are real, and running (after trust) makes them.
    assert orchestra(repo, "hooks", "trust", ".").returncode == 0
    proc = orchestra(
        repo, "hooks", "test", "PreToolUse", "--payload", '{"tool_name": "Bash"}', "orchestra.yaml"
    )
    assert "from the module" in proc.stdout, proc.stdout + proc.stderr
    assert {"module", "package", "inner"} <= set(marks(repo))


def test_load_of_an_untrusted_repository_imports_nothing(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(repo.parent / "config"))
    monkeypatch.syspath_prepend(str(repo))
    with pytest.raises(ConfigError) as refused:
        load(repo / "orchestra.yaml", repo / "skills", require_trust=True)
    errors = refused.value.errors
    assert [(error.file, "not trusted" in str(error)) for error in errors] == [
        (str(repo / "orchestra.yaml"), True),
        (str(repo / "skills" / "fmt" / "SKILL.md"), True),
    ]
    assert marks(repo) == []
    assert "clonedhook" not in sys.modules


@pytest.mark.parametrize(
    ("source", "reference", "problem"),
    [
        ("def f(e): pass\n", "m:g", "m has no attribute 'g'"),
        ("def f(e): pass\n", "m:f", None),
        ("from os import path as g\n", "m:g", None),
        ("import a.b\n", "m:a", None),
        ("try:\n    g = 1\nexcept Exception:\n    pass\n", "m:g", None),
        ("from os import *\n", "m:anything", None),  # any name is possible
        ("def __getattr__(name): ...\n", "m:anything", None),
        ("class C:\n    x = 1\n", "m:C.y", "m:C has no attribute 'y'"),
        ("class C:\n    def f(self, e): ...\n", "m:C.f", None),
        ("(a, [b, c]) = 1, [2, 3]\n", "m:c", None),
        ("def f(e): pass\n", "nosuchmodule_x:f", None),  # not found: the import will say
        ("def f(:\n", "m:f", None),  # unreadable: the import will say
    ],
)
def test_read_callable_reports_only_what_the_source_plainly_lacks(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    source: str,
    reference: str,
    problem: str | None,
) -> None:
    name = f"reviewed_{abs(hash((source, reference)))}"
    (tmp_path / f"{name}.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    reference = reference.replace("m:", f"{name}:")
    expected = problem.replace("m", name, 1) if problem else None
    assert read_callable(reference) == expected
    assert name not in sys.modules


def test_list_json_of_an_untrusted_repository_describes_every_hook(repo: Path) -> None:
    proc = orchestra(repo, "hooks", "list", "--json", "orchestra.yaml")
    listed = json.loads(proc.stdout)
    assert [hook["type"] for hook in listed] == [
        "python",
        "python",
        "command",
        "command",
        "mcp_tool",
    ]
    assert marks(repo) == []
