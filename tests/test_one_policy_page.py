"""docs/howto/one-policy.md's tables are the conformance matrix's: every engine's rows, no other.

The rows come from the matrix tests themselves: ``tests/helpers/matrix_rows.py`` imports
every test module that runs a cell of ``orchestra.bridge.testing`` (in the venv its engine
is installed in: the Makefile's ``OWN_VENV`` engines in ``.venv-<name>``, the others in
this one), finds the engines those modules define and renders their rows
(``task_matrix_row``, ``tool_matrix_row``, ``way_matrix_rows``, ``ask_matrix_row``). So a
new engine, way or cell without its row on the page fails here, and so does a row on the
page that no engine's tests render. (Each engine's own tool, ways and ask tests also
check that their rows are on the page, in its own venv.)
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from functools import cache
from pathlib import Path

import pytest

from orchestra.bridge.testing import (
    ask_matrix_header,
    task_matrix_header,
    tool_matrix_header,
    way_matrix_header,
)

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "howto" / "one-policy.md"
HEADERS = {
    "task": task_matrix_header(),
    "tool": tool_matrix_header(),
    "way": way_matrix_header(),
    "ask": ask_matrix_header(),
}

# Importing every engine's tests takes a while on a loaded machine.
pytestmark = pytest.mark.timeout(900)


def own_venvs() -> set[str]:
    """The integrations the Makefile gives a venv of their own (``OWN_VENV``)."""
    line = next(li for li in (ROOT / "Makefile").read_text().splitlines() if "OWN_VENV :=" in li)
    return set(re.findall(r"integrations/(\w+)", line))


def test_the_makefile_names_the_engines_with_a_venv_of_their_own() -> None:
    own = own_venvs()  # the reader of OWN_VENV finds integrations that exist
    assert own
    assert all((ROOT / "integrations" / name / "pyproject.toml").exists() for name in own)


@cache
def matrix_rows() -> dict[str, list[str]]:
    """Every engine's rows, by table, rendered in the venvs the engines are installed in."""
    own = own_venvs()
    shared = [ROOT / "tests"] + [
        d for d in sorted((ROOT / "integrations").glob("*/tests")) if d.parent.name not in own
    ]
    runs = [(Path(sys.executable), shared)]
    for name in sorted(own):
        python = ROOT / f".venv-{name}" / "bin" / "python"
        assert python.exists(), f"{name}'s tests run in {python.parent.parent}: make {python}"
        runs.append((python, [ROOT / "integrations" / name / "tests"]))
    script = str(ROOT / "tests" / "helpers" / "matrix_rows.py")
    started = [
        subprocess.Popen(
            [str(python), script, *map(str, folders)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for python, folders in runs
    ]
    out: dict[str, list[str]] = {table: [] for table in HEADERS}
    for process in started:
        stdout, stderr = process.communicate(timeout=600)
        assert process.returncode == 0, stderr
        for table, rows in json.loads(stdout).items():
            out[table].extend(rows)
    return out


def page_rows(header: str) -> list[str]:
    """The rows of the page's table under ``header`` (its Markdown lines)."""
    text = PAGE.read_text()
    assert header in text, f"the page has no table with the header {header!r}"
    return text.split(header, 1)[1].split("\n\n", 1)[0].strip().splitlines()


@pytest.mark.parametrize("table", list(HEADERS))
def test_each_table_has_exactly_the_rows_the_engines_tests_render(table: str) -> None:
    rendered, shown = Counter(matrix_rows()[table]), Counter(page_rows(HEADERS[table]))
    assert rendered, f"no engine's tests run a {table} cell"
    missing = "\n".join(rendered - shown)
    stray = "\n".join(shown - rendered)
    assert not missing, f"rows of the {table} matrix that {PAGE.name} lacks:\n{missing}"
    assert not stray, f"rows of {PAGE.name}'s {table} table no engine renders:\n{stray}"


def engines() -> set[str]:
    """Every engine of the matrix, by its name without the adapter's: ``LangGraph``..."""
    rows = matrix_rows()["task"] + matrix_rows()["tool"]
    return {re.sub(r" \(.*\)$", "", row.split(" | ")[0].removeprefix("| ")) for row in rows}


def test_the_opening_paragraph_names_every_engine() -> None:
    opening = " ".join(PAGE.read_text().split("\n\n")[1].split())
    names = engines()
    assert {"Prefect", "Hamilton", "Dask", "CrewAI", "orchestra dispatcher"} <= names
    unnamed = [n for n in sorted(names) if n.removeprefix("orchestra ") not in opening]
    assert not unnamed, f"the page's opening paragraph does not name {unnamed}"
