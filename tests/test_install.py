"""What a plain install gives: the distribution's name, its dependencies, a CLI that starts."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
INTEGRATIONS = sorted(ROOT.glob("integrations/*/pyproject.toml"))

#: Modules that only extras (or integrations) bring; a plain install has none of them.
EXTRAS_ONLY = ("httpx", "mcp", "opentelemetry.exporter", "dask", "distributed", "hamilton",
               "agents", "prefect", "psycopg")  # fmt: skip


def _project(path: Path) -> dict[str, object]:
    project = tomllib.loads(path.read_text())["project"]
    assert isinstance(project, dict)
    return project


def _names(requirements: object) -> list[str]:
    assert isinstance(requirements, list)
    names = []
    for req in requirements:
        name = str(req)
        for stop in "<>=!~[; ":
            name = name.split(stop)[0]
        names.append(name.strip().lower())
    return names


def test_the_distribution_is_orchestra_hooks_with_the_cli_dependencies() -> None:
    project = _project(ROOT / "pyproject.toml")
    assert project["name"] == "orchestra-hooks"  # PyPI's "orchestra" is another project
    deps = _names(project["dependencies"])
    assert {"click", "rich"} <= set(deps)
    assert project["scripts"] == {"orchestra": "orchestra.cli:main"}


@pytest.mark.parametrize("pyproject", INTEGRATIONS, ids=lambda p: p.parent.name)
def test_integrations_depend_on_orchestra_hooks_never_on_orchestra(pyproject: Path) -> None:
    project = _project(pyproject)
    assert str(project["name"]).startswith("orchestra-hooks-")
    deps = _names(project["dependencies"])
    assert "orchestra-hooks" in deps
    assert "orchestra" not in deps


def test_the_command_starts_without_any_extra() -> None:
    blocker = f"""
import sys
BLOCKED = {EXTRAS_ONLY!r}
class Block:
    def find_spec(self, name, path=None, target=None):
        if any(name == b or name.startswith(b + ".") for b in BLOCKED):
            raise ImportError(f"{{name}} is not installed (blocked by the test)")
        return None
sys.meta_path.insert(0, Block())
sys.argv = ["orchestra", "--help"]
from orchestra.cli import main
main()
"""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", blocker], capture_output=True, text=True, env=env, timeout=60
    )
    assert out.returncode == 0, out.stderr
    for command in ("run", "trace", "hooks"):
        assert command in out.stdout


DISTRIBUTIONS = [ROOT / "pyproject.toml", *INTEGRATIONS]


@pytest.mark.parametrize("pyproject", DISTRIBUTIONS, ids=lambda p: p.parent.name)
def test_every_distribution_ships_its_license_and_says_what_it_runs_on(pyproject: Path) -> None:
    project = _project(pyproject)
    assert project["license"] == "MIT"
    assert project["license-files"] == ["LICENSE"]
    assert (pyproject.parent / "LICENSE").read_text() == (ROOT / "LICENSE").read_text()
    classifiers = project["classifiers"]
    assert isinstance(classifiers, list)
    claimed = {
        c.rsplit(" ", 1)[1]
        for c in classifiers
        if c.startswith("Programming Language :: Python :: 3.")
    }
    assert claimed == {"3.11", "3.12", "3.13"}  # what make test-pythons runs the tests on
    assert project["requires-python"] == ">=3.11"
    assert "Operating System :: POSIX :: Linux" in classifiers


@pytest.mark.parametrize("pyproject", DISTRIBUTIONS, ids=lambda p: p.parent.name)
def test_make_lint_checks_every_distributions_imports(pyproject: Path) -> None:
    # deptry reads its configuration from the pyproject.toml of the folder it runs in
    deptry = tomllib.loads(pyproject.read_text())["tool"]["deptry"]
    package = "orchestra" if pyproject.parent == ROOT else f"orchestra_{pyproject.parent.name}"
    assert deptry["known_first_party"] == [package]
    assert (pyproject.parent / package / "py.typed").is_file()
