"""The trace file's writer process: every span written, nothing lost quietly, no orphan.

``configure(jsonl=...)`` hands each full line of spans to a writer process
(``orchestra.tracing._writer``), which does the JSON half of the encoding on another core.
These tests run the real process: they kill it, kill its parent, interrupt the run with
Ctrl-C, and give it a disk that is full.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider

import orchestra.tracing as ot
from orchestra.tracing._configure import JSONL_BATCH
from orchestra.tracing._jsonl import SyncSpanProcessor

ROOT = Path(__file__).resolve().parent.parent


def _children(pid: int) -> set[int]:
    """The live child processes of ``pid`` (Linux's /proc)."""
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        found.update(int(c) for c in (task / "children").read_text().split())
    return found


def _gone(pid: int, within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        stat = Path(f"/proc/{pid}/stat")
        if stat.exists() and stat.read_text().split(") ")[-1].startswith("Z"):
            return True  # exited, only its parent has not read its status yet
        time.sleep(0.05)
    return False


def _file(tmp_path: Path, batch: int = 10) -> tuple[TracerProvider, ot.JsonlSpanExporter]:
    exporter = ot.JsonlSpanExporter(tmp_path / "spans.jsonl", batch_size=batch, process=True)
    provider = TracerProvider()
    provider.add_span_processor(SyncSpanProcessor(exporter))
    return provider, exporter


def _spans(provider: TracerProvider, n: int, start: int = 0) -> None:
    tracer = provider.get_tracer("t")
    for i in range(start, start + n):
        with tracer.start_as_current_span(f"s{i}"):
            pass


def _started(tmp_path: Path, spans: int) -> tuple[TracerProvider, ot.JsonlSpanExporter, int]:
    """A file whose writer process has written ``spans`` spans; its pid."""
    before = _children(os.getpid())
    provider, exporter = _file(tmp_path)
    _spans(provider, spans)
    assert provider.force_flush()
    (writer,) = _children(os.getpid()) - before
    return provider, exporter, writer


def _names(path: Path) -> list[str]:
    return [span["name"] for span in ot.read_jsonl(path)]


def test_the_writer_starts_with_the_first_full_line_and_stops_at_shutdown(
    tmp_path: Path,
) -> None:
    before = _children(os.getpid())
    provider, exporter = _file(tmp_path)
    _spans(provider, 9)  # not yet a line: no process
    assert _children(os.getpid()) == before
    _spans(provider, 16, start=9)
    writers = _children(os.getpid()) - before
    assert len(writers) == 1
    assert provider.force_flush()
    assert _names(exporter.path) == [f"s{i}" for i in range(25)]
    provider.shutdown()
    (writer,) = writers
    assert _gone(writer)
    assert _children(os.getpid()) == before


def test_a_run_below_one_line_is_written_without_a_process(tmp_path: Path) -> None:
    before = _children(os.getpid())
    provider, exporter = _file(tmp_path)
    _spans(provider, 3)
    provider.shutdown()
    assert _names(exporter.path) == ["s0", "s1", "s2"]
    assert _children(os.getpid()) == before


def test_a_killed_writer_is_reported_and_the_next_lines_are_written_here(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    provider, exporter, writer = _started(tmp_path, 20)
    os.kill(writer, signal.SIGKILL)
    assert _gone(writer)
    with caplog.at_level(logging.WARNING, logger="orchestra"):
        _spans(provider, 35, start=20)  # the first line finds it gone: written here
        provider.shutdown()
    said = [r.getMessage() for r in caplog.records if r.name == "orchestra"]
    assert said == [
        f"the trace writer process of {exporter.path} exited; the next spans are written "
        "by this process"
    ]
    assert _names(exporter.path) == [f"s{i}" for i in range(55)]
    assert _gone(writer)


def test_lines_a_dying_writer_was_sent_but_never_wrote_are_counted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    provider, exporter, writer = _started(tmp_path, 10)
    os.kill(writer, signal.SIGSTOP)  # it takes nothing from the pipe now
    _spans(provider, 20, start=10)  # two lines wait in the pipe
    os.kill(writer, signal.SIGKILL)  # and are lost with it
    assert _gone(writer)
    with caplog.at_level(logging.WARNING, logger="orchestra"):
        _spans(provider, 15, start=30)
        provider.shutdown()
    said = [r.getMessage() for r in caplog.records if r.name == "orchestra"]
    assert said == [
        f"the trace writer process of {exporter.path} exited: up to 20 spans sent to it "
        "may be lost; the next ones are written by this process"
    ]
    names = _names(exporter.path)
    assert names == [f"s{i}" for i in [*range(10), *range(30, 45)]]
    assert writer not in _children(os.getpid())


def test_spans_the_writer_cannot_write_are_counted_in_the_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    exporter = ot.JsonlSpanExporter("/dev/full", batch_size=10, process=True)
    provider = TracerProvider()
    provider.add_span_processor(SyncSpanProcessor(exporter))
    _spans(provider, 25)
    with caplog.at_level(logging.WARNING, logger="orchestra"):
        assert provider.force_flush() is False
        provider.shutdown()
    said = [r.getMessage() for r in caplog.records if r.name == "orchestra"]
    assert said == ["25 spans could not be written to /dev/full: they are lost"]


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


def _ran(out: Path, tasks: int) -> tuple[subprocess.Popen[str], int]:
    """A script that ran a traced DAG and now sleeps (its own process group); its writer."""
    code = textwrap.dedent(_SCRIPT).format(out=str(out), tasks=tasks)
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, as a terminal's job is
    )
    assert proc.stdout is not None
    assert proc.stdout.readline() == "ran\n"
    (writer,) = _children(proc.pid)
    return proc, writer


def test_the_writer_outlives_a_killed_parent_only_to_write_what_it_got(tmp_path: Path) -> None:
    # The parent dies without any exit hook (SIGKILL): the writer writes every line it
    # was sent, sees its input end, and exits: no orphan is left behind.
    out = tmp_path / "run.jsonl"
    proc, writer = _ran(out, 2000)
    proc.kill()
    proc.communicate(timeout=10)
    assert _gone(writer)
    spans = ot.read_jsonl(out)  # every line whole
    assert len(spans) == 2001 - 2001 % JSONL_BATCH  # the full lines it was handed


def test_ctrl_c_does_not_cut_the_trace_file_short(tmp_path: Path) -> None:
    # A Ctrl-C reaches the whole foreground process group; the writer is in its own
    # session and ignores it, so the exit hook still finds it and every span is written.
    out = tmp_path / "run.jsonl"
    proc, writer = _ran(out, 3000)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGINT  # Python exits "by" the signal, after its exit hooks
    assert "KeyboardInterrupt" in err
    assert _gone(writer)
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
