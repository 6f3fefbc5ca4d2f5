"""Report benchmark: the HTML run report of a 3,000-task run, its trace, size and open time.

A 3,000-task DAG (30 layers of 100 tasks, each on one to three tasks of the layer before)
runs with tracing to an OTLP JSON file (``configure(jsonl=...)``), under a ``TaskHooks``
called before and after every task and a ``RetryPolicy``: every 50th task fails once and
is retried, one task fails for good and the tasks below it end UPSTREAM_FAILED. About
5,700 spans: OpenTelemetry's default batch queue (2,048 spans), what ``configure`` used
before, lost spans at this size (a 3,000-task run kept 2,789 of its 3,001 task spans).
Then:

- the trace file holds every span the run made (counted against an in-memory exporter
  on the same provider; target: all);

- ``orchestra trace report`` writes the page: its size (target: under 2 KB per task, 2 MB
  for 1,000) and how long
  writing it takes (``dot`` laying out the graph included; no target);
- Debian's Chromium (headless, through Playwright) opens it from disk, with every
  network request refused: the time from navigation to the page's ``data-ready`` mark
  (target: under 2 s), and a check that every task is drawn with its state.

Run: ``python bench/report.py [--out DIR]`` (needs Graphviz's ``dot`` and ``chromium``).
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tenacity import retry_if_exception_type

import orchestra
import orchestra.tracing as ot
from orchestra import RetryPolicy, TaskHooks

ROOT = Path(__file__).resolve().parent.parent
LAYERS, WIDTH = 30, 100


class Audit(TaskHooks):
    def before_execute(self, ctx: Any) -> None:
        return None

    def after_execute(self, ctx: Any, result: Any) -> None:
        return None


def build() -> orchestra.DAG:
    rng = random.Random(7)
    dag = orchestra.DAG("thousand")
    calls: dict[str, int] = {}

    def body(name: str, flaky: bool, broken: bool) -> Any:
        def fn(**_: Any) -> str:
            calls[name] = calls.get(name, 0) + 1
            if broken:
                raise RuntimeError(f"{name}: the input is corrupt")
            if flaky and calls[name] == 1:
                raise ConnectionError(f"{name}: connection reset")
            return name

        return fn

    previous: list[str] = []
    for layer in range(LAYERS):
        current = []
        for k in range(WIDTH):
            name = f"l{layer:02d}_t{k:02d}"
            deps = rng.sample(previous, rng.randint(1, 3)) if previous else []
            if (layer, k) == (13, 0) and previous[0] not in deps:
                deps.append(previous[0])  # below the broken task
            index = layer * WIDTH + k
            dag.task(
                body(name, flaky=index % 50 == 7, broken=(layer, k) == (12, 0)),
                id=name,
                deps=deps,
            )
            current.append(name)
        previous = current
    return dag


def trace_run(path: Path) -> tuple[orchestra.RunResult, int]:
    """The run, traced to ``path``, and how many spans it made (kept in memory too)."""
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    provider = ot.configure(jsonl=path, set_global=False)
    assert provider is not None
    memory = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    try:
        return orchestra.run_sync(
            build(), hooks=[Audit(), RetryPolicy(retry=retry_if_exception_type(ConnectionError))]
        ), len(memory.get_finished_spans())
    finally:
        provider.shutdown()
        ot.set_tracer_provider(None)


def open_time(page_path: Path, tasks: int) -> float:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path="/usr/bin/chromium",
            args=["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run"],
        )
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            url = page_path.resolve().as_uri()
            page.route("**/*", lambda r: r.continue_() if r.request.url == url else r.abort())
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            best = float("inf")
            for _ in range(3):
                started = time.perf_counter()
                page.goto(url)
                page.wait_for_selector("body[data-ready]")
                best = min(best, time.perf_counter() - started)
            drawn = page.locator("#waterfall .row[data-state]").count()
            nodes = page.locator("#graph g.node[data-task]").count()
            assert not errors, errors
            assert drawn == tasks, drawn
            assert nodes == tasks, nodes
            return best
        finally:
            browser.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None, help="keep the files here")
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="orchestra-bench-report-"))
    out.mkdir(parents=True, exist_ok=True)
    trace = out / "thousand.jsonl"
    result, made = trace_run(trace)
    kept = len(ot.read_jsonl(trace))
    every = "ok" if kept == made else "MISSED"
    print(f"trace: {kept} spans in the file of {made} made (target: every span): {every}")
    page = out / "thousand.html"
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "orchestra.cli", "trace", "report", str(trace), "-o", str(page)],
        check=True,
        cwd=ROOT,
        capture_output=True,
    )
    write = time.perf_counter() - started
    size = page.stat().st_size
    counts = {s.value: result.count(s) for s in orchestra.TaskState if result.count(s)}
    print(f"run: {len(result.states)} tasks {counts}; trace {trace.stat().st_size / 1e6:.2f} MB")
    limit = 2e3 * len(result.states)  # 2 KB per task
    ratio = size / limit
    print(
        f"report: {size / 1e6:.2f} MB (target < {limit / 1e6:.0f} MB, ratio {ratio:.2f}: "
        f"{'ok' if size < limit else 'MISSED'}); written in {write:.2f} s"
    )
    seconds = open_time(page, len(result.states))
    opened = "ok" if seconds < 2 else "MISSED"
    print(f"open in Chromium: {seconds:.2f} s (target < 2 s, ratio {seconds / 2:.2f}: {opened})")
    return 0 if size < limit and seconds < 2 and kept == made else 1


if __name__ == "__main__":
    sys.exit(main())
