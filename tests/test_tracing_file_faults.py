"""The trace file under faults: every span written, nothing lost quietly, no process started.

``configure(jsonl=...)`` encodes and writes each full line of spans in the thread that
ended its last span (no writer process: handing spans to one cost more than encoding
them, issue 46). These tests run real processes: they kill the traced script, interrupt
it with Ctrl-C, and give the file a disk that is full.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers.procs import children
from opentelemetry.sdk.trace import TracerProvider

import orchestra.tracing as ot
from orchestra.tracing._configure import JSONL_BATCH
from orchestra.tracing._jsonl import SyncSpanProcessor

ROOT = Path(__file__).resolve().parent.parent


def _file(tmp_path: Path, batch: int = 10) -> tuple[TracerProvider, ot.JsonlSpanExporter]:
    exporter = ot.JsonlSpanExporter(tmp_path / "spans.jsonl", batch_size=batch)
    provider = TracerProvider()
    provider.add_span_processor(SyncSpanProcessor(exporter))
    return provider, exporter


def _spans(provider: TracerProvider, n: int, start: int = 0) -> None:
    tracer = provider.get_tracer("t")
    for i in range(start, start + n):
        with tracer.start_as_current_span(f"s{i}"):
            pass


def _names(path: Path) -> list[str]:
    return [span["name"] for span in ot.read_jsonl(path)]


def test_a_traced_run_starts_no_process(tmp_path: Path) -> None:
    before = children(os.getpid())
    provider, exporter = _file(tmp_path)
    _spans(provider, 25)  # two full lines, written as they fill
    assert len(exporter.path.read_text().splitlines()) == 2
    assert children(os.getpid()) == before
    provider.shutdown()
    assert _names(exporter.path) == [f"s{i}" for i in range(25)]
    assert children(os.getpid()) == before


def test_spans_a_full_disk_refuses_are_counted_in_the_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    exporter = ot.JsonlSpanExporter("/dev/full", batch_size=10, append=True)
    provider = TracerProvider()
    provider.add_span_processor(SyncSpanProcessor(exporter))
    with caplog.at_level(logging.WARNING, logger="orchestra"):
        _spans(provider, 25)  # two full lines: each write fails
        assert provider.force_flush() is False  # and so does the rest's
        provider.shutdown()
    said = [r.getMessage() for r in caplog.records if r.name == "orchestra"]
    assert said == [
        "could not write 10 spans to /dev/full: they are lost",
        "could not write 10 spans to /dev/full: they are lost",
        "could not write 5 spans to /dev/full: they are lost",
    ]


_SCRIPT = """
import os, sys, time
import orchestra, orchestra.tracing as ot

ot.configure(jsonl={out!r})

async def noop() -> None:
    return None

dag = orchestra.DAG("d")
for i in range({tasks}):
    dag.add(orchestra.Task(id=f"t{{i}}", fn=noop))
assert orchestra.run_sync(dag, max_concurrency=64).ok
print("ran", flush=True)
time.sleep(60)
"""


def _ran(out: Path, tasks: int) -> subprocess.Popen[str]:
    """A script that ran a traced DAG and now sleeps (its own process group)."""
    code = textwrap.dedent(_SCRIPT).format(out=str(out), tasks=tasks)
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, as a terminal's job is
        # a SIGINT ignored by whatever started the tests (a background job) is not inherited
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert proc.stdout is not None
    assert proc.stdout.readline() == "ran\n"
    assert children(proc.pid) == set()  # the file is written by the script alone
    return proc


def test_a_killed_run_leaves_every_full_line_whole(tmp_path: Path) -> None:
    # The script dies without any exit hook (SIGKILL): each full line was written as it
    # filled, so the file holds all of them, whole; only the last partial line is lost.
    out = tmp_path / "run.jsonl"
    proc = _ran(out, 2000)
    proc.kill()
    proc.communicate(timeout=10)
    spans = ot.read_jsonl(out)  # every line whole
    assert len(spans) == 2001 - 2001 % JSONL_BATCH


def test_ctrl_c_does_not_cut_the_trace_file_short(tmp_path: Path) -> None:
    # A Ctrl-C reaches the whole foreground process group; the provider's exit hook
    # still writes the spans kept since the last full line.
    out = tmp_path / "run.jsonl"
    proc = _ran(out, 3000)
    os.killpg(proc.pid, signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()  # no orphan left behind if it did not end
        proc.communicate()
    assert proc.returncode == -signal.SIGINT  # Python exits "by" the signal, after its exit hooks
    assert "KeyboardInterrupt" in err
    names = [span["name"] for span in ot.read_jsonl(out)]
    assert len(names) == 3001
    assert names.count("run d") == 1


def test_a_file_line_is_the_otlp_json_the_collector_reads(tmp_path: Path) -> None:
    provider, exporter = _file(tmp_path, batch=4)
    _spans(provider, 4)
    provider.shutdown()
    (line,) = exporter.path.read_text().splitlines()
    request = json.loads(line)
    (resource,) = request["resourceSpans"]
    (scope,) = resource["scopeSpans"]
    assert scope["scope"]["name"] == "t"
    span = scope["spans"][0]
    assert len(span["traceId"]) == 32  # hex, not base64
    assert len(span["spanId"]) == 16
    assert span["kind"] == 1  # enums as integers
