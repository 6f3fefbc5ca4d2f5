"""``orchestra trace show``, run as a subprocess on trace files."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace import Link

import orchestra.tracing as ot
from orchestra import Delegate, Retry
from orchestra.tracing import _spans

ROOT = Path(__file__).resolve().parent.parent


def show(path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "220"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    return subprocess.run(
        [sys.executable, "-m", "orchestra.cli", "trace", "show", str(path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def write_trace(path: Path) -> None:
    """A run's trace made with the SDK: retries, a hook, a delegation, a denied tool."""
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(ot.JsonlSpanExporter(path)))
    tracer = provider.get_tracer("test")
    with tracer.start_as_current_span(
        "run demo", attributes={ot.ATTR_RUN_OK: False, ot.ATTR_RUN_FAILED: 1}
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
    write_trace(path)
    out = show(path)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    lines = text.splitlines()

    def line(fragment: str) -> str:
        return next(x for x in lines if fragment in x)

    assert "8 spans" in text
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


def test_show_reports_bad_files(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"name": "x"}\nnot json\n')
    out = show(bad)
    assert out.returncode == 1
    assert "bad.jsonl:2" in out.stderr
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    out = show(empty)
    assert out.returncode == 0
    assert "no spans" in out.stdout
    out = show(tmp_path / "missing.jsonl")
    assert out.returncode == 2
