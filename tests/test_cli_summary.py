"""What ``orchestra run`` prints once the run is over, and ``orchestra run --report``."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import orchestra.tracing as ot
from tests.helpers.system import require
from tests.test_cli_trace import orchestra_cli

FLOW = textwrap.dedent(
    """
    import orchestra
    from orchestra import Skip, TaskHooks

    dag = orchestra.DAG("flow")

    @dag.task
    def fetch():
        return 1

    @dag.task(deps=[fetch])
    def boom(fetch):
        raise ValueError("kaput")

    @dag.task(deps=[boom])
    def after(boom):
        return boom

    @dag.task(deps=[after])
    def last(after):
        return after

    @dag.task(deps=[fetch])
    def optional(fetch):
        return fetch

    class Gate(TaskHooks):
        def before_execute(self, ctx):
            if ctx.task.id == "optional":
                return Skip("not today")

    hooks = [Gate()]
    """
)


def run(tmp_path: Path, *args: str, columns: str = "200") -> tuple[int, str]:
    (tmp_path / "flow.py").write_text(FLOW)
    out = orchestra_cli("run", str(tmp_path / "flow.py"), *args, env={"COLUMNS": columns})
    return out.returncode, out.stdout


def test_summary_lists_what_did_not_succeed_and_why(tmp_path: Path) -> None:
    status, text = run(tmp_path)
    assert status == 1
    rows = {m[1]: m[0] for m in re.finditer(r"│ (\w+) +│.*", text)}
    assert set(rows) == {"boom", "after", "last", "optional"}  # not fetch: it succeeded
    assert "ValueError: kaput" in rows["boom"]
    assert "boom failed upstream" in rows["after"]
    assert "boom failed upstream" in rows["last"]  # the failure, not the task in between
    assert "skipped by Gate.before_execute: not today" in rows["optional"]
    closing = text.strip().splitlines()[-1]
    assert re.fullmatch(
        r"run flow failed: 3 of 5 tasks not ok in \d+\.\d\d s "
        r"\(1 succeeded, 1 failed, 1 skipped, 2 upstream_failed\)",
        closing,
    ), closing
    # one duration for the run: the closing line's
    assert len(re.findall(r"\d+\.\d\d s\b", text)) == 1


def test_summary_all_lists_every_task(tmp_path: Path) -> None:
    status, text = run(tmp_path, "--all")
    assert status == 1
    assert re.search(r"│ fetch +│ succeeded", text)


def test_summary_of_a_run_that_went_well_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "fine.py").write_text(
        "import orchestra\ndag = orchestra.DAG('fine')\ndag.task(lambda: 1, id='one')\n"
    )
    out = orchestra_cli("run", str(tmp_path / "fine.py"))
    assert out.returncode == 0, out.stderr
    assert "│" not in out.stdout  # no table
    assert re.search(r"run fine ok: 1 task in \d+\.\d\d s \(1 succeeded\)$", out.stdout.strip())


def test_hints_are_not_wrapped_when_piped(tmp_path: Path) -> None:
    trace = tmp_path / ("a-rather-long-folder-name-for-traces" * 2) / "out.jsonl"
    status, text = run(tmp_path, "--trace", str(trace), columns="40")
    assert status == 1
    assert f"trace written to {trace}  (orchestra trace show {trace})" in text.splitlines()


def test_run_report_writes_the_page(tmp_path: Path) -> None:
    require("dot")  # the task names are checked in the graph's SVG
    page = tmp_path / "out" / "run.html"
    status, text = run(tmp_path, "--report", str(page))
    assert status == 1
    assert f"report written to {page}" in text
    html = page.read_text()
    for task in ("fetch", "boom", "after", "last", "optional"):
        assert f">{task}<" in html
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == ["flow.py", "run.html"]
    # with --trace too: the same run in both
    status, text = run(tmp_path, "--report", str(page), "--trace", str(tmp_path / "t.jsonl"))
    assert status == 1
    (run_id,) = {
        ot.decode_attributes(span["attributes"]).get(ot.ATTR_RUN_ID)
        for span in ot.read_jsonl(tmp_path / "t.jsonl")
        if span["name"] == "run flow"
    }
    assert run_id in page.read_text()


def test_run_report_with_tracing_off(tmp_path: Path) -> None:
    page = tmp_path / "run.html"
    (tmp_path / "flow.py").write_text(FLOW)
    out = orchestra_cli(
        "run", str(tmp_path / "flow.py"), "--report", str(page), env={"ORCHESTRA_TRACING": "off"}
    )
    assert out.returncode == 1
    assert "no report: the run made no spans" in out.stdout
    assert not page.exists()
