"""``orchestra trace show`` and ``orchestra trace report``, run as subprocesses."""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace import Link

import orchestra
import orchestra.tracing as ot
from orchestra import Delegate, Retry
from orchestra.tracing import _spans
from tests.helpers.system import require
from tests.helpers.traces import pipeline, trace_runs

ROOT = Path(__file__).resolve().parent.parent


def orchestra_cli(
    *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "COLUMNS": "220", **(env or {})}
    full["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), full.get("PYTHONPATH", "")) if p)
    return subprocess.run(
        [sys.executable, "-m", "orchestra.cli", *args],
        env=full,
        capture_output=True,
        text=True,
        timeout=120,
    )


def show(path: Path, *options: str) -> subprocess.CompletedProcess[str]:
    return orchestra_cli("trace", "show", str(path), *options)


def write_trace(path: Path, run_attribute: str = "not.a.run") -> None:
    """A run's trace made with the SDK: retries, a hook, a delegation, a denied tool.

    Made by hand, it shows what a run of the scheduler does not: agents, tools and YAML
    hooks below a task. With ``run_attribute=ot.ATTR_RUN_ID`` it is a DAG run.
    """
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(ot.JsonlSpanExporter(path)))
    tracer = provider.get_tracer("test")
    with tracer.start_as_current_span(
        "run demo", attributes={run_attribute: "r1", ot.ATTR_RUN_OK: False, ot.ATTR_RUN_FAILED: 1}
    ) as run:
        with tracer.start_as_current_span(
            "task fetch", attributes={ot.ATTR_TASK_ID: "fetch", ot.ATTR_TASK_ATTEMPT: 1}
        ) as first:
            _spans.record_error(first, ConnectionError("flaky network"))
            with _spans.hook_span(
                tracer, "on_failure", hook_type="python", name="RetryPolicy"
            ) as hook:
                _spans.record_decision(hook, Retry(0.25), "RetryPolicy.on_failure")
            _spans.record_decision(first, Retry(0.25), "RetryPolicy.on_failure")
            first.set_attribute(ot.ATTR_TASK_STATE, "retrying")
        with tracer.start_as_current_span(
            "task fetch",
            links=[Link(first.get_span_context())],
            attributes={
                ot.ATTR_TASK_ID: "fetch",
                ot.ATTR_TASK_ATTEMPT: 2,
                ot.ATTR_TASK_STATE: "succeeded",
            },
        ):
            with _spans.agent_span(
                tracer, "researcher", task="t", mode="sync", parent="demo", attempt=1
            ) as agent:
                _spans.record_decision(agent, Delegate("fallback", "overloaded"), "Router")
            with (
                _spans.agent_span(
                    tracer,
                    "fallback",
                    task="t",
                    mode="sync",
                    parent="demo",
                    attempt=1,
                    delegated_from=["researcher"],
                ),
                _spans.tool_span(tracer, "Bash") as tool,
            ):
                with _spans.hook_span(
                    tracer,
                    "PreToolUse",
                    hook_type="command",
                    name="command",
                    source="orchestra.yaml:7",
                ) as guard:
                    guard.set_attribute(ot.ATTR_PROCESS_EXIT_CODE, 2)
                    _spans.record_decision(guard, "block", "orchestra.yaml:7", reason="no rm -rf")
                tool.set_attribute(ot.ATTR_TOOL_DECISION, "deny")
        run.add_event(
            ot.EVENT_TASK_NOT_RUN,
            {ot.ATTR_TASK_ID: "publish", ot.ATTR_TASK_STATE: "upstream_failed"},
        )
    provider.shutdown()


def test_show_draws_the_tree_with_decisions(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    write_trace(path, ot.ATTR_RUN_ID)
    out = show(path, "--hooks")
    assert out.returncode == 0, out.stderr
    text = out.stdout
    lines = text.splitlines()

    def line(fragment: str) -> str:
        return next(x for x in lines if fragment in x)

    assert line("run demo").lstrip("│ ").startswith("run demo")
    assert "├─ task fetch" in text
    first = line("attempt 1  retry")
    assert "retrying" in first
    assert "after 0.25 s by RetryPolicy.on_failure" in first
    assert "ConnectionError: flaky network" in text
    assert "attempt 2 (after 1)" in text
    assert "delegate to fallback by Router: overloaded" in text
    assert "delegated from researcher" in text
    guard = line("hook PreToolUse")
    assert "orchestra.yaml:7" in guard
    assert "exit 2" in guard
    assert "block by orchestra.yaml:7: no rm -rf" in guard
    assert "deny" in line("execute_tool Bash")
    assert "not run: upstream_failed" in line("task publish")
    assert "failed" in line("run demo")
    # the tree: the hook under the first attempt, the tool under the fallback agent
    assert lines.index(line("hook on_failure")) > lines.index(first)
    assert lines.index(line("execute_tool Bash")) > lines.index(line("invoke_agent fallback"))


def test_show_spans_of_something_else_than_a_run(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    write_trace(path)  # no run id: every trace in the file, as a tree
    out = show(path, "--hooks")
    assert out.returncode == 0, out.stderr
    assert "8 spans" in out.stdout
    assert "hook PreToolUse" in out.stdout


def test_show_folds_hooks_into_agents_and_tools(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    write_trace(path, ot.ATTR_RUN_ID)
    out = show(path)
    assert out.returncode == 0, out.stderr
    assert "hook PreToolUse" not in out.stdout
    tool = line(out.stdout, "execute_tool Bash")
    assert "deny" in tool
    assert "+1 hook call" in tool
    assert "block by orchestra.yaml:7: no rm -rf" in tool  # the hook's decision, lifted
    # a decision the line shows already is not repeated
    assert line(out.stdout, "attempt 1  retry").count("RetryPolicy.on_failure") == 1


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[orchestra.RunResult]]:
    """A file with two runs of ``helpers.traces.pipeline``: ``first``, then ``pipeline``."""
    path = tmp_path_factory.mktemp("traces") / "two.jsonl"
    return path, trace_runs(path, pipeline("first"), pipeline())


def lines_of(text: str) -> list[str]:
    return text.splitlines()


def line(text: str, fragment: str) -> str:
    return next(x for x in text.splitlines() if fragment in x)


def test_show_the_last_run_with_hooks_folded(two_runs: tuple[Path, list[Any]]) -> None:
    path, (first, last) = two_runs
    out = show(path)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    title = text.splitlines()[0]
    assert title.startswith(f"run pipeline  ·  {last.run_id}  ·  failed")
    assert "2 succeeded  2 upstream_failed  1 failed  1 skipped" in title
    assert first.run_id not in text
    assert "1 earlier run(s) in the file: pick one with --run RUN_ID" in text
    # each hook call is folded into its task's line: no line of its own
    assert "hook before_execute" not in text
    assert "+2 hook calls" in line(text, "attempt 1  retry after 0.01 s by RetryPolicy.on_failure")
    assert "skip by Gate.before_execute: not needed today" in line(text, "task optional")
    assert "RuntimeError: the input is corrupt" in line(text, "task boom")
    assert "not run: upstream_failed (boom failed)" in line(text, "task after")
    assert "not run: upstream_failed (boom failed)" in line(text, "task later")
    assert "attempt 2 (after 1)" in text


def test_show_hooks_gives_each_hook_call_a_line(two_runs: tuple[Path, list[Any]]) -> None:
    path, _ = two_runs
    out = show(path, "--hooks")
    assert out.returncode == 0, out.stderr
    calls = [x for x in out.stdout.splitlines() if "hook before_execute" in x]
    assert len(calls) == 5  # fetch twice, boom, optional, publish
    assert "python Gate" in calls[0]
    assert "hook on_failure" in out.stdout
    assert "hook call" not in out.stdout


def test_show_failed_keeps_only_the_paths_to_what_failed(
    two_runs: tuple[Path, list[Any]],
) -> None:
    path, _ = two_runs
    out = show(path, "--failed")
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "task boom" in text
    assert "task after" in text
    assert "task later" in text
    for fine in ("task fetch", "task publish", "task optional"):
        assert fine not in text
    assert "run pipeline" in text


def test_show_failed_of_a_run_that_went_well(tmp_path: Path) -> None:
    dag = orchestra.DAG("fine")
    dag.task(lambda: 1, id="only")
    path = tmp_path / "fine.jsonl"
    trace_runs(path, dag, hooks=())
    out = show(path, "--failed")
    assert out.returncode == 0, out.stderr
    assert "nothing failed" in out.stdout
    assert "task only" not in out.stdout


def test_show_run_picks_a_run_by_id_or_prefix(two_runs: tuple[Path, list[Any]]) -> None:
    path, (first, last) = two_runs
    for given in (first.run_id, first.run_id[:12]):
        out = show(path, "--run", given)
        assert out.returncode == 0, out.stderr
        assert out.stdout.startswith(f"run first  ·  {first.run_id}")
        assert "earlier run" not in out.stdout
    out = show(path, "--run", "nope")
    assert out.returncode == 2
    assert "no run 'nope'" in out.stderr
    assert f"{first.run_id} (first)" in out.stderr
    assert f"{last.run_id} (pipeline)" in out.stderr
    out = show(path, "--run", "")  # a prefix of both
    assert out.returncode == 2
    assert "several runs start with ''" in out.stderr


def test_show_run_on_a_file_without_runs(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    write_trace(path)
    out = show(path, "--run", "abc")
    assert out.returncode == 2
    assert "no DAG run in the file" in out.stderr


def test_show_reports_bad_files(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"resourceSpans": []}\nnot json\n')
    out = show(bad)
    assert out.returncode == 2
    assert "bad.jsonl:2: not JSON" in out.stderr
    old = tmp_path / "old.jsonl"
    old.write_text('{"name": "a span per line"}\n')
    out = show(old)
    assert out.returncode == 2
    assert "old.jsonl:1: not an OTLP JSON trace request" in out.stderr
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    out = show(empty)
    assert out.returncode == 0
    assert "no spans" in out.stdout
    out = show(tmp_path / "missing.jsonl")
    assert out.returncode == 2
    assert "does not exist" in out.stderr


def test_report_writes_one_self_contained_page(
    two_runs: tuple[Path, list[Any]], tmp_path: Path
) -> None:
    require("dot")  # the task names are checked in the graph's SVG
    path, (first, last) = two_runs
    page = tmp_path / "run.html"
    out = orchestra_cli("trace", "report", str(path), "-o", str(page))
    assert out.returncode == 0, out.stderr
    assert f"report written to {page}" in out.stdout
    text = page.read_text()
    assert last.run_id in text
    assert first.run_id not in text
    for task in last.states:
        assert f"&gt;{task}&lt;" in text or f">{task}<" in text  # in the graph's SVG
    # nothing to fetch: no external script, style, image or font; a CSP that forbids it
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text)
    assert "@import" not in text
    assert "default-src 'none'" in text
    out = orchestra_cli("trace", "report", str(path), "--run", first.run_id[:8])
    assert out.returncode == 0, out.stderr
    assert first.run_id in path.with_suffix(".html").read_text()


def test_report_without_graphviz_says_so(two_runs: tuple[Path, list[Any]], tmp_path: Path) -> None:
    path, _ = two_runs
    page = tmp_path / "run.html"
    out = orchestra_cli("trace", "report", str(path), "-o", str(page), env={"PATH": str(tmp_path)})
    assert out.returncode == 0, out.stderr
    assert "warning: Graphviz's dot was not found" in out.stderr
    text = page.read_text()
    assert "<svg" not in text
    assert "apt-get install graphviz" in text


def test_report_of_a_file_without_runs(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    write_trace(path)
    out = orchestra_cli("trace", "report", str(path))
    assert out.returncode == 2
    assert "no DAG run in the file" in out.stderr


def test_show_and_report_say_the_runs_budget_use(tmp_path: Path) -> None:
    guarded = orchestra.skills.HookRegistry().guard("search")(lambda q: q)
    dag = orchestra.DAG("spend")

    @dag.task
    def work() -> None:
        for q in "abc":
            with contextlib.suppress(orchestra.ToolDenied):  # the third: over the budget
                guarded(q)

    path = tmp_path / "spend.jsonl"
    trace_runs(path, dag, hooks=[orchestra.Budget(max_tool_calls=2)])
    out = show(path)
    assert out.returncode == 0, out.stderr
    assert "budget: tool calls 2/2" in out.stdout
    page = tmp_path / "run.html"
    done = orchestra_cli("trace", "report", str(path), "-o", str(page))
    assert done.returncode == 0, done.stderr
    assert '"budget":"budget: tool calls 2/2"' in page.read_text()  # the page's run data


def test_show_picks_the_last_outer_run_not_an_agent_run_inside_a_task(tmp_path: Path) -> None:
    path = tmp_path / "nested.jsonl"
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(ot.JsonlSpanExporter(path)))
    tracer = provider.get_tracer("test")
    with (
        tracer.start_as_current_span("run outer", attributes={ot.ATTR_RUN_ID: "outer1"}),
        tracer.start_as_current_span("task agent", attributes={ot.ATTR_TASK_ID: "agent"}),
        tracer.start_as_current_span("invoke_agent ops", attributes={ot.ATTR_RUN_ID: "inner1"}),
    ):
        pass
    provider.shutdown()
    out = show(path)
    assert out.returncode == 0, out.stderr
    assert "outer1" in out.stdout.splitlines()[0]
    assert "(1 earlier run(s) in the file" in out.stdout
    inner = show(path, "--run", "inner1")
    assert "run invoke_agent ops  ·  inner1" in inner.stdout
