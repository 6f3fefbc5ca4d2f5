"""``configure(jsonl=...)`` keeps every span of a run, however large; nothing is lost quietly."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

import orchestra.tracing as ot
from orchestra.tracing._jsonl import SyncSpanProcessor

ROOT = Path(__file__).resolve().parent.parent
TASKS = 20_000  # ten times the default span queue (2,048): the loss showed at 10,000


def test_a_20000_task_traced_run_keeps_every_span_in_the_file(tmp_path: Path) -> None:
    # A run makes spans far faster than they are encoded: the file must still hold every
    # one (the default BatchSpanProcessor wrote 6,135 of 10,001 for 10,000 tasks). The
    # script ends without flushing: the provider's own exit hook writes the last line.
    out = tmp_path / "run.jsonl"
    script = textwrap.dedent(
        f"""
        import orchestra, orchestra.tracing as ot

        ot.configure(jsonl={str(out)!r})

        async def noop() -> None:
            return None

        dag = orchestra.DAG("big")
        for i in range({TASKS}):
            dag.add(orchestra.Task(id=f"t{{i}}", fn=noop))
        assert orchestra.run_sync(dag, max_concurrency=64).ok
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "Queue full" not in done.stderr
    spans = ot.read_jsonl(out)
    names = [span["name"] for span in spans]
    assert len(names) == TASKS + 1
    assert names.count("run big") == 1
    assert {name for name in names if name != "run big"} == {f"task t{i}" for i in range(TASKS)}
    assert len({span["spanId"] for span in spans}) == TASKS + 1


def _spans(provider: TracerProvider, n: int) -> None:
    tracer = provider.get_tracer("t")
    for i in range(n):
        with tracer.start_as_current_span(f"s{i}"):
            pass


def test_a_batched_file_writes_a_line_per_batch_and_the_rest_on_flush(tmp_path: Path) -> None:
    path = tmp_path / "spans.jsonl"
    jsonl = ot.JsonlSpanExporter(path, batch_size=3)
    provider = TracerProvider()
    provider.add_span_processor(SyncSpanProcessor(jsonl))
    _spans(provider, 7)
    lines = path.read_text().splitlines()
    assert [len(list(ot.read_jsonl(path)))] == [6]
    assert len(lines) == 2  # two full batches written, one span kept
    assert provider.force_flush()
    assert [s["name"] for s in ot.read_jsonl(path)] == [f"s{i}" for i in range(7)]
    _spans(provider, 1)
    provider.shutdown()  # writes what it kept, as the exit hook does
    assert len(ot.read_jsonl(path)) == 8
    assert json.loads(path.read_text().splitlines()[-1])["resourceSpans"]


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "10"])
def test_a_bad_batch_size_is_refused(tmp_path: Path, bad: object) -> None:
    with pytest.raises(ValueError, match="batch_size must be an int >= 1 or None"):
        ot.JsonlSpanExporter(tmp_path / "x.jsonl", batch_size=bad)  # type: ignore[arg-type]


def test_spans_that_cannot_be_written_are_counted_in_the_log(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "spans.jsonl"
    jsonl = ot.JsonlSpanExporter(path, batch_size=2)
    path.unlink()
    path.mkdir()  # now the path cannot be written
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(jsonl))
    with caplog.at_level(logging.WARNING, logger="orchestra"):
        _spans(provider, 3)
        provider.shutdown()
        jsonl.export(())  # after shutdown: nothing to say
        assert jsonl.export([]).name == "FAILURE"
    lost = [r.getMessage() for r in caplog.records if "lost" in r.getMessage()]
    assert lost == [
        f"could not write 2 spans to {path}: they are lost",
        f"could not write 1 spans to {path}: they are lost",
    ]


def test_configure_keeps_spans_made_faster_than_they_are_written(tmp_path: Path) -> None:
    # 10,000 spans in a tight loop: more than OpenTelemetry's default queue (2,048) holds
    # while its thread encodes; configure's file keeps them all.
    path = tmp_path / "fast.jsonl"
    provider = ot.configure(jsonl=path, provider=TracerProvider(), set_global=False)
    assert provider is not None
    try:
        _spans(provider, 10_000)
        provider.force_flush()
        assert len(ot.read_jsonl(path)) == 10_000
    finally:
        ot.set_tracer_provider(None)
        provider.shutdown()


def test_spans_an_unreachable_otlp_backend_never_got_are_counted_at_shutdown(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http")
    import socket

    with socket.socket() as s:  # a local port that nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    endpoint = f"http://127.0.0.1:{port}"
    provider = ot.configure(
        otlp=endpoint, provider=TracerProvider(), set_global=False, otlp_timeout=0.2
    )
    assert provider is not None
    try:
        _spans(provider, 5)
        with caplog.at_level(logging.WARNING, logger="orchestra"):
            provider.shutdown()
    finally:
        ot.set_tracer_provider(None)
    said = [r.getMessage() for r in caplog.records if r.name == "orchestra"]
    assert said == [f"5 of the 5 spans of this process were not exported to {endpoint}"]


def test_nothing_is_said_when_every_queued_span_was_exported(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from orchestra.tracing._queued import QueuedSpanProcessor

    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(QueuedSpanProcessor(memory, max_queue_size=1024, name="memory"))
    _spans(provider, 20)
    with caplog.at_level(logging.WARNING, logger="orchestra"):
        provider.shutdown()
        provider.shutdown()  # once is enough
    assert len(memory.get_finished_spans()) == 20
    assert [r.getMessage() for r in caplog.records if r.name == "orchestra"] == []


def test_configure_s_resource_is_the_sdk_s_own_hashed_once(tmp_path: Path) -> None:
    # configure's provider resource caches its hash (issue 46: the SDK's JSON-encodes the
    # attributes at each call, once per span encoded): it must still equal and hash as
    # the SDK's Resource of the same attributes, so spans group by it as before.
    from opentelemetry.sdk.resources import Resource

    provider = ot.configure(jsonl=tmp_path / "r.jsonl", service_name="svc", set_global=False)
    assert provider is not None
    try:
        mine = provider.resource
        sdk = Resource(mine.attributes, mine.schema_url)  # the SDK's own, same attributes
        assert type(mine) is not Resource
        assert mine.attributes["service.name"] == "svc"
        assert (hash(mine), hash(mine)) == (hash(sdk), hash(sdk))
        assert mine == sdk
        assert {sdk: "found"}[mine] == "found"
        assert mine != Resource.create({"service.name": "other"})
    finally:
        ot.set_tracer_provider(None)
        provider.shutdown()
