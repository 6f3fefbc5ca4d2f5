"""The docs test checks what a block shows it prints (the root conftest.py's check).

Each case is a page of its own; the pages are run by one ``pytest --markdown-docs`` in a
subprocess, as ``make docs-code`` runs the docs, with this repository's conftest.py beside
them: a block whose ``print`` shows another output than it gives, or never runs, fails.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

if importlib.util.find_spec("pytest_markdown_docs") is None:  # the dev set brings it
    if os.environ.get("ORCHESTRA_CORE_TESTS") != "1":
        raise ImportError("the docs test needs pytest-markdown-docs (the dev set)")
    pytest.skip(
        "the docs test needs pytest-markdown-docs (the dev set): `make test` runs it",
        allow_module_level=True,
    )

ROOT = Path(__file__).resolve().parent.parent

PASSING = {
    "exact": "print(sum(range(1000)))  # 499500\n",
    "wildcard": "print('Tool call denied: recursive force delete')  # Tool call denied: ...\n",
    "one_of_several": "# an explanation on its own line\nfor n in (1, 2):\n    print(n)  # 2\n",
    "as_a_script": 'if __name__ == "__main__":\n    print("ran")  # ran\n',
    "no_claim": "print(1)\n",
}
# A page's config blocks are files of its project, for the blocks after them
LOAD = "from orchestra.skills import load\n\n"
STOP_YAML = 'hooks:\n  Stop:\n    - hooks: [{type: command, command: "true"}]\n'
PAGES = {
    "config_by_title": f'```yaml title="orchestra.yaml"\n{STOP_YAML}```\n\n```python\n'
    f"{LOAD}print([h.event for h in load(\"orchestra.yaml\").hooks])  # ['Stop']\n```\n",
    "config_by_comment": '```toml\n# run.toml\n[[hooks]]\nevent = "run_start"\n'
    f'command = "true"\n```\n\n```python\n{LOAD}'
    "print([h.event for h in load(\"run.toml\").hooks])  # ['RunStart']\n```\n",
}
LATE_PAGE = (
    f"```python\n{LOAD}load('late.yaml')\n```\n\n"
    f'```yaml title="late.yaml"\n{STOP_YAML}```\n'
)  # a block sees the config blocks above it only
FAILING = {
    "another_output": ("print(0)  # 499500\n", "line 4 shows '499500', printed: 0"),
    "never_ran": ("if False:\n    print(1)  # 1\n", "printed: nothing (the call never ran)"),
    "more_than_shown": ("print('ok', 'later')  # ok\n", "printed: ok later"),
}


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str | None]:
    """Each page's outcome: None when it passed, else the failure's message."""
    folder = tmp_path_factory.mktemp("pages")
    shutil.copy(ROOT / "conftest.py", folder / "conftest.py")
    shutil.copytree(ROOT / "examples" / "hooks", folder / "examples" / "hooks")
    codes = {**PASSING, **{name: code for name, (code, _) in FAILING.items()}}
    for name, code in codes.items():
        (folder / f"{name}.md").write_text(f"# A page\n\n```python\n{code}```\n")
    pages = {**PAGES, "config_below": LATE_PAGE}
    for name, text in pages.items():
        (folder / f"{name}.md").write_text(f"# A page\n\n{text}")
    codes = {**codes, **pages}
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--markdown-docs",
         "--markdown-docs-syntax=superfences", "-m", "markdown-docs", "--junitxml=out.xml",
         *(f"{name}.md" for name in codes)],
        cwd=folder, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    found: dict[str, str | None] = {}
    for case in ET.parse(folder / "out.xml").iter("testcase"):
        page = case.get("classname", "").rsplit(".", 1)[0] or case.get("file", "")
        failure = case.find("failure")
        found[Path(page).stem] = (
            None if failure is None else failure.get("message", "") + (failure.text or "")
        )
    assert set(found) == set(codes), found
    return found


@pytest.mark.parametrize("page", sorted(PASSING))
def test_a_block_that_prints_what_it_shows_passes(
    outcomes: dict[str, str | None], page: str
) -> None:
    assert outcomes[page] is None


@pytest.mark.parametrize("page", sorted(FAILING))
def test_a_block_whose_shown_output_differs_fails(
    outcomes: dict[str, str | None], page: str
) -> None:
    message = outcomes[page]
    assert message is not None
    assert "a block's shown output is not what it prints" in message
    assert FAILING[page][1] in message


@pytest.mark.parametrize("page", sorted(PAGES))
def test_a_config_block_is_a_file_for_the_blocks_after_it(
    outcomes: dict[str, str | None], page: str
) -> None:
    assert outcomes[page] is None


def test_a_config_block_below_a_block_is_not_there_for_it(
    outcomes: dict[str, str | None],
) -> None:
    message = outcomes["config_below"]
    assert message is not None
    assert "late.yaml" in message
