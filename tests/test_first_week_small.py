"""The small surprises of a new user's first week, each as the user met it.

The quickstart printed ``<TaskState.SUCCEEDED: 'succeeded'>``; ``orchestra run`` said a
file "defines 1 DAGs"; ``orchestra report`` was "No such command" with no hint; the
rollout page's replay example named the wrong line; ``run_sync`` said nothing when a task
failed; the report's header said the run id twice.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from helpers.cli import orchestra_cli

ROOT = Path(__file__).resolve().parent.parent


def _python(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=120,
        check=False,
    )  # fmt: skip


def _blocks(page: Path, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", page.read_text(), re.S)


def test_the_quickstart_prints_readable_states(tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text()
    quickstart = readme[readme.index("## Quickstart") :]
    code = re.search(r"```python\n(.*?)```", quickstart, re.S)
    assert code is not None
    out = _python(code[1], tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[-1] == (
        "{'extract': TaskState.SUCCEEDED, 'transform': TaskState.SUCCEEDED, "
        "'publish': TaskState.SKIPPED} [10, 20, 30]"
    )


def test_one_dag_is_one_dag(tmp_path: Path) -> None:
    (tmp_path / "flow.py").write_text("import orchestra\n\npipeline = orchestra.DAG('p')\n")
    out = orchestra_cli("run", "flow.py:pipline", cwd=tmp_path)
    assert out.returncode != 0
    assert "defines 1 DAG (pipeline)" in out.stderr
    assert "DAGs" not in out.stderr


def test_a_command_of_a_group_typed_alone_names_the_group(tmp_path: Path) -> None:
    out = orchestra_cli("report", "out.jsonl", cwd=tmp_path)
    assert out.returncode == 2
    assert out.stderr.splitlines()[-1] == (
        "Error: No such command 'report': it is 'orchestra trace report' "
        "(orchestra trace report --help)"
    )
    assert orchestra_cli("nonsense", cwd=tmp_path).stderr.splitlines()[-1] == (
        "Error: No such command 'nonsense'."
    )


def test_the_rollout_page_names_the_line_that_decides(tmp_path: Path) -> None:
    page = ROOT / "docs" / "howto" / "rollout.md"
    out = _python(_blocks(page, "python")[-1], tmp_path)  # the replay, from Python
    assert out.returncode == 0, out.stderr
    decided_by = out.stdout.splitlines()[0].split()[-1]
    assert decided_by == "stricter.yaml:8"
    (console,) = [b for b in _blocks(page, "console") if "hooks replay" in b]
    assert f"│ {decided_by} │" in console


def test_run_sync_says_when_tasks_failed(tmp_path: Path) -> None:
    code = (
        "import orchestra\n"
        "dag = orchestra.DAG('pipeline')\n"
        "@dag.task\n"
        "def count() -> int:\n"
        "    raise ValueError('boom')\n"
        "@dag.task(deps=[count])\n"
        "def report(count: int) -> int:\n"
        "    return count\n"
        "result = orchestra.run_sync(dag)\n"
        "print(result.ok)\n"
    )
    out = _python(code, tmp_path)
    assert out.returncode == 0, out.stderr  # the result contract: returned, not raised
    assert out.stdout == "False\n"
    (line,) = out.stderr.splitlines()
    assert re.fullmatch(
        r"run \w+: failed: 'count' \(ValueError: boom\); upstream_failed: 'report' "
        r"\(result.ok is False: see result.errors, or call result.raise_for_failures\(\)\)",
        line,
    )
    ok = _python(code.replace("raise ValueError('boom')", "return 1"), tmp_path)
    assert (ok.stdout, ok.stderr) == ("True\n", "")


def test_the_report_header_says_the_run_id_once(tmp_path: Path) -> None:
    (tmp_path / "flow.py").write_text(
        "import orchestra\n\ndag = orchestra.DAG('r')\ndag.add(orchestra.Task(id='a', fn=int))\n"
    )
    out = orchestra_cli("run", "flow.py", "--report", "run.html", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    page = (tmp_path / "run.html").read_text()
    found = re.search(r'<script type="application/json" id="orchestra-data">(.*?)</script>', page)
    assert found is not None
    run = json.loads(found[1])["run"]
    assert run["source"] == "orchestra run"  # the header's "run id ..." says the id
