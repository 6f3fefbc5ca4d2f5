"""The report's graph as a person sees it: wide DAGs, a failed 1,000-task run, no Graphviz.

Twelve tasks that stand alone draw as a grid in the DAG's order (not one tall column,
bottom-up); independent branches stack top-down in the DAG's order; without Graphviz
the page says so once and shows no zoom buttons; a failed run of 1,000 tasks opens on
the failure with its failing line, and its screenshot is kept in the test's tmp_path
(``failed-1000.png``) to be looked at.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import orchestra
from orchestra.cli._report import write_report
from orchestra.cli._tracefile import Run, build_traces, find_runs, select_run
from orchestra.tracing import read_jsonl
from tests.helpers.system import require
from tests.helpers.traces import trace_runs
from tests.test_report_browser import Opened
from tests.test_report_browser import browser as browser  # the fixture, shared

_NODE = re.compile(r'<g id="n(\d+)" class="node">.*?<text[^>]* x="([-\d.]+)" y="([-\d.]+)"', re.S)


def traced(tmp_path: Path, dag: orchestra.DAG) -> Run:
    trace_runs(tmp_path / "run.jsonl", dag, hooks=[])
    return select_run(find_runs(build_traces(read_jsonl(tmp_path / "run.jsonl"))), None)


def positions(page: str) -> dict[int, tuple[float, float]]:
    """Where each task's label is drawn in the page's SVG: ``(x, y)``, y downwards."""
    return {int(m[1]): (float(m[2]), float(m[3])) for m in _NODE.finditer(page)}


def test_tasks_that_stand_alone_draw_as_a_grid_in_order(tmp_path: Path) -> None:
    require("dot")
    dag = orchestra.DAG("twelve")
    for i in range(12):
        dag.task(lambda: None, id=f"report_{i:02d}")
    assert write_report(traced(tmp_path, dag), tmp_path / "r.html", source="run.jsonl") is None
    at = positions((tmp_path / "r.html").read_text())
    assert sorted(at) == list(range(12))
    rows: dict[float, list[int]] = {}
    for i, (_x, y) in at.items():
        rows.setdefault(y, []).append(i)
    # three rows of four, top down, each left to right: not one column of twelve
    in_rows = [sorted(row, key=lambda i: at[i][0]) for _, row in sorted(rows.items())]
    assert in_rows == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]


def test_independent_branches_stack_in_the_dags_order(tmp_path: Path) -> None:
    require("dot")
    dag = orchestra.DAG("branches")
    for k in range(5):
        first = dag.task(lambda: 1, id=f"b{k}_load")
        dag.task(lambda **_: 1, id=f"b{k}_save", deps=[first])
    dag.task(lambda: 1, id="alone_a")
    dag.task(lambda: 1, id="alone_b")
    run = traced(tmp_path, dag)
    assert write_report(run, tmp_path / "r.html", source="run.jsonl") is None
    at = positions((tmp_path / "r.html").read_text())
    index = {task_id: i for i, task_id in enumerate(run.tasks)}
    heads = [at[index[f"b{k}_load"]][1] for k in range(5)]
    assert heads == sorted(heads)  # top down: b0 first
    assert at[index["b0_save"]][0] > at[index["b0_load"]][0]  # left to right
    assert min(at[index["alone_a"]][1], at[index["alone_b"]][1]) > heads[-1]  # below


@pytest.fixture
def report_without_dot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    # made before the browser starts: Playwright keeps an event loop in this thread
    dag = orchestra.DAG("nodot")
    dag.task(lambda: 1, id="alpha")
    dag.task(lambda: 1, id="beta")
    run = traced(tmp_path, dag)
    with monkeypatch.context() as patched:
        patched.setenv("PATH", str(tmp_path / "no-programs-here"))  # no `dot` on it
        assert shutil.which("dot") is None
        warning = write_report(run, tmp_path / "r.html", source="run.jsonl")
    assert warning is not None
    assert "Graphviz's dot was not found" in warning
    return tmp_path / "r.html"


def test_without_graphviz_one_notice_and_no_zoom(report_without_dot: Path, browser: Any) -> None:
    opened = Opened(browser, report_without_dot)
    page = opened.page
    text = page.locator("body").inner_text()
    assert text.count("dot was not found") == 1, text  # said once, where the graph would be
    assert "dot was not found" in page.locator("#graph").inner_text()
    assert not page.locator("#zoom-fit").is_visible()
    assert not page.locator("#zoom-real").is_visible()
    assert not page.locator("#graph-hint").is_visible()  # "each box is a task": no box
    find = page.locator("#timeline-panel #find")
    assert find.is_visible()  # the search moved to what it acts on
    find.fill("beta")
    page.dispatch_event("#find", "change")
    assert page.locator("#details h3").inner_text() == "beta"
    assert page.locator('#waterfall .row.sel[data-task="beta"]').count() == 1
    assert opened.errors == []
    page.close()


def failing(text: str) -> int:
    return int(text)


def thousand() -> orchestra.DAG:
    """12 tasks alone, and 13 layers of 76 (each task on two of the layer before).

    Three tasks of layer 2 fail (``failing``: a ``ValueError``), so what is downstream of
    them ends UPSTREAM_FAILED.
    """
    dag = orchestra.DAG("thousand-failed")
    width = 76
    for i in range(12):
        dag.task(lambda: "ok", id=f"report_{i:02d}")
    for layer in range(13):
        for k in range(width):
            deps = (
                [] if layer == 0 else [f"t{layer - 1}_{k}", f"t{layer - 1}_{(k * 7 + 3) % width}"]
            )
            if layer == 2 and k in (5, 40, 70):
                dag.task(lambda **_: failing("not a number"), id=f"t{layer}_{k}", deps=deps)
            else:
                dag.task(lambda **_: None, id=f"t{layer}_{k}", deps=deps)
    assert len(dag) == 1000
    return dag


@pytest.fixture
def failed_report(tmp_path: Path) -> Iterator[tuple[Path, orchestra.RunResult]]:
    require("dot")
    (result,) = trace_runs(tmp_path / "big.jsonl", thousand(), hooks=[])
    run = select_run(find_runs(build_traces(read_jsonl(tmp_path / "big.jsonl"))), None)
    assert write_report(run, tmp_path / "big.html", source="big.jsonl") is None
    return tmp_path / "big.html", result


def test_a_failed_thousand_task_run_as_a_person_sees_it(
    failed_report: tuple[Path, orchestra.RunResult], browser: Any
) -> None:
    path, result = failed_report
    assert result.count(orchestra.TaskState.FAILED) == 3
    opened = Opened(browser, path)
    page = opened.page
    assert page.locator("#graph g.node").count() == 1000
    # it opens on the first failure, with the line that raised it
    assert page.locator("#details h3").inner_text() in {"t2_5", "t2_40", "t2_70"}
    frames = page.locator("#details pre.tb").inner_text()
    assert "in failing" in frames
    assert "return int(text)" in frames
    assert (
        frames.splitlines()[-1]
        == "ValueError: invalid literal for int() with base 10: 'not a number'"
    )
    # the selected task is scrolled into the graph's view
    box = page.locator("#graph g.node.sel").bounding_box()
    view = page.locator("#graph").bounding_box()
    assert box is not None
    assert view is not None
    assert view["y"] <= box["y"] <= view["y"] + view["height"]
    assert view["x"] <= box["x"] <= view["x"] + view["width"]
    # the tasks that stand alone are a grid, not a column of twelve
    xs = {
        round(b["x"])
        for i in range(12)
        if (b := page.locator(f'#graph g.node[data-task="report_{i:02d}"]').bounding_box())
    }
    assert len(xs) >= 3
    # the "3 failed" chip goes from one failure to the next, in a graph too big to scan
    first = page.locator("#details h3").inner_text()
    seen = [first]
    for _ in range(3):
        page.click('#run-counts button[data-state="failed"]')
        seen.append(page.locator("#details h3").inner_text())
    assert sorted(seen[:3]) == ["t2_40", "t2_5", "t2_70"]
    assert seen[3] == first  # round again
    # scrolled down the timeline, the task panel stays beside it, never over it
    page.evaluate("window.scrollTo(0, document.getElementById('timeline-panel').offsetTop)")
    timeline = page.locator("#timeline-panel").bounding_box()
    panel = page.locator("#details").bounding_box()
    assert timeline is not None
    assert panel is not None
    assert panel["x"] >= timeline["x"] + timeline["width"]
    page.evaluate("window.scrollTo(0, 0)")
    shot = path.with_name("failed-1000.png")
    page.screenshot(path=str(shot), full_page=False)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert opened.errors == []
    assert opened.requests == [opened.url]
    page.close()
