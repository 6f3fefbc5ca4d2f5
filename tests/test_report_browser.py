"""The HTML run report, opened in a real headless browser (Debian's chromium).

Playwright drives the system's ``/usr/bin/chromium`` (it never downloads a browser);
every request but the page itself is refused and recorded. ``.ci/run`` installs
``chromium`` and ``graphviz``; without them these tests fail and say what to install.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import orchestra
from orchestra.cli._report import write_report
from orchestra.cli._tracefile import build_traces, find_runs, select_run
from orchestra.tracing import read_jsonl
from tests.helpers.browser import FLAGS, chromium_path
from tests.helpers.system import require
from tests.helpers.traces import pipeline, trace_runs


@pytest.fixture
def browser() -> Iterator[Any]:
    # Playwright's sync API keeps an event loop running in this thread while the browser
    # is open, so a test makes its runs (run_sync) before it asks for the browser.
    executable = chromium_path()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=executable, args=list(FLAGS))
        try:
            yield launched
        finally:
            launched.close()


class Opened:
    """A report open in a page, with what it logged and asked the network for."""

    def __init__(self, browser: Any, path: Path) -> None:
        self.page = browser.new_page(viewport={"width": 1400, "height": 1000})
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.url = path.resolve().as_uri()
        self.page.on("console", self._console)
        self.page.on("pageerror", lambda error: self.errors.append(f"pageerror: {error}"))
        self.page.route("**/*", self._route)
        self.page.goto(self.url)
        self.page.wait_for_selector("body[data-ready]")

    def _console(self, message: Any) -> None:
        if message.type in ("error", "warning"):
            self.errors.append(f"{message.type}: {message.text}")

    def _route(self, route: Any) -> None:
        self.requests.append(route.request.url)
        if route.request.url == self.url:
            route.continue_()
        else:
            route.abort()


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, orchestra.RunResult]:
    require("dot")
    folder = tmp_path_factory.mktemp("report")
    (result,) = trace_runs(folder / "run.jsonl", pipeline())
    run = select_run(find_runs(build_traces(read_jsonl(folder / "run.jsonl"))), None)
    assert write_report(run, folder / "run.html", source="run.jsonl") is None
    return folder / "run.html", result


def test_every_task_is_drawn_with_its_state(report: tuple[Path, Any], browser: Any) -> None:
    path, result = report
    opened = Opened(browser, path)
    page = opened.page
    states = {task: state.value for task, state in result.states.items()}
    rows = page.eval_on_selector_all(
        "#waterfall .row", "rows => rows.map(r => [r.dataset.task, r.dataset.state])"
    )
    assert dict(rows) == states
    nodes = page.eval_on_selector_all(
        "#graph g.node", "gs => gs.map(g => [g.dataset.task, g.dataset.state])"
    )
    assert dict(nodes) == states
    # the graph's arrows: one per dependency
    edges = page.locator("#graph g.edge").count()
    assert edges == sum(len(task.deps) for task in pipeline().tasks.values())
    assert page.locator("#run-badge").inner_text() == "failed"
    counts = page.locator("#run-counts").inner_text()
    for text in ("2 succeeded", "2 upstream failed", "1 failed", "1 skipped"):
        assert text in counts
    # the page opens on the task that failed
    assert page.locator("#details h3").inner_text() == "boom"
    assert "RuntimeError: the input is corrupt" in page.locator("#details").inner_text()
    # with the failing line of the user's code, the engine's frames folded
    frames = page.locator("#details pre.tb").inner_text()
    assert 'raise RuntimeError("the input is corrupt")' in frames
    assert "traces.py" in frames
    assert "in boom" in frames
    assert "library frames folded" in frames
    assert "anyio" not in frames
    screenshot = path.with_suffix(".png")
    page.screenshot(path=str(screenshot), full_page=True)
    assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert opened.errors == []
    assert opened.requests == [opened.url]  # nothing else was asked for
    page.close()


def test_clicking_tasks_shows_their_attempts(report: tuple[Path, Any], browser: Any) -> None:
    path, _ = report
    opened = Opened(browser, path)
    page = opened.page
    page.click('#graph g.node[data-task="fetch"]')
    details = page.locator("#details").inner_text()
    assert page.locator("#details h3").inner_text() == "fetch"
    assert "Attempt 1" in details
    assert "Attempt 2" in details
    assert "retry after 0.01 s by RetryPolicy.on_failure" in details
    assert "ConnectionError: connection reset" in details
    assert "hook before_execute" in details  # hook calls, with who they were
    assert "hook on_failure" in details
    assert page.locator('#graph g.node.sel[data-task="fetch"]').count() == 1
    assert page.locator('#waterfall .row.sel[data-task="fetch"]').count() == 1
    # the timeline links the retry to the attempt before it
    assert page.locator('#waterfall .row[data-task="fetch"] .wait').count() == 1
    assert page.locator('#waterfall .row[data-task="fetch"] .bar').count() == 2
    # a task that never ran says which failure upstream stopped it; its link goes there
    page.click('#waterfall .row[data-task="later"]')
    details = page.locator("#details").inner_text()
    assert "failed upstream" in details
    assert "upstream boom failed" in page.locator('.row[data-task="later"] .why').inner_text()
    page.click('#details a.task:text-is("boom")')
    assert page.locator("#details h3").inner_text() == "boom"
    # the skip and who took it
    page.click('#graph g.node[data-task="optional"]')
    assert "skip by Gate.before_execute: not needed today" in page.locator("#details").inner_text()
    page.fill("#find", "publish")
    page.dispatch_event("#find", "change")
    assert page.locator("#details h3").inner_text() == "publish"
    assert opened.errors == []
    page.close()


def test_a_thousand_tasks_fit_in_under_2_mb(tmp_path: Path) -> None:
    require("dot")
    dag = orchestra.DAG("thousand")
    for i in range(1000):  # ten layers of a hundred, each task on two of the layer before
        layer, k = divmod(i, 100)
        deps = [] if layer == 0 else [f"t{layer - 1}_{k}", f"t{layer - 1}_{(k * 7 + 3) % 100}"]
        dag.task(lambda **_: None, id=f"t{layer}_{k}", deps=deps)
    trace_runs(tmp_path / "big.jsonl", dag)
    run = select_run(find_runs(build_traces(read_jsonl(tmp_path / "big.jsonl"))), None)
    assert len(run.tasks) == 1000
    page = tmp_path / "big.html"
    assert write_report(run, page, source="big.jsonl") is None
    size = page.stat().st_size
    assert size < 2_000_000, size
    text = page.read_text()
    assert text.count('class="node"') == 1000
