"""``JsonlSpanExporter``: spans to a file in the OTLP JSON file format.

This module imports the OpenTelemetry SDK; ``orchestra.tracing`` loads it only when it is
asked for (``configure(jsonl=...)`` or ``orchestra.tracing.JsonlSpanExporter``).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Final, final

import orjson
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

from orchestra.tracing._otlp_json import encode_request

__all__ = ["JsonlSpanExporter", "SyncSpanProcessor"]

logger: Final = logging.getLogger("orchestra")


@final
class JsonlSpanExporter(SpanExporter):
    """Write finished spans to a file in the OTLP JSON file format.

    Each write is one line: an ``ExportTraceServiceRequest`` in OTLP/JSON, as the
    OpenTelemetry Collector's file exporter writes and its ``otlpjsonfile`` receiver
    reads, so the file can be replayed into any OTLP backend later. The embedded
    default: no collector or server needed. Read the file with ``orchestra trace show
    FILE``, ``orchestra trace report FILE`` or ``orchestra.tracing.read_jsonl``.

    With a ``batch_size`` (what ``configure(jsonl=...)`` sets up, behind a synchronous
    processor), spans are kept until ``batch_size`` have ended, then encoded with
    OpenTelemetry's own OTLP/JSON encoder and written by the thread that ended the last
    one: a run that makes spans faster than they are written waits for the file instead
    of losing spans, no more than a batch is held back, and no other process or thread
    is involved (the encoding is cheaper than handing the spans to one).
    ``force_flush()`` and ``shutdown()`` (which the provider calls at exit) write the
    rest (the SDK's ``SimpleSpanProcessor.force_flush`` does not ask its exporter: call
    the exporter's). A write error is logged with the number of spans lost, never
    raised into the run.

    Args:
        path: the file to write.
        append: add to the file instead of truncating it when the exporter is made.
        batch_size: spans per line, kept until that many have come; None writes each
            export at once (behind a ``BatchSpanProcessor``, which batches already).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        append: bool = False,
        batch_size: int | None = None,
    ) -> None:
        if batch_size is not None and (
            isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1
        ):
            raise ValueError(f"batch_size must be an int >= 1 or None, got {batch_size!r}")
        self.path = Path(path)
        self.batch_size = batch_size
        self._lock = threading.Lock()
        self._pending: list[ReadableSpan] = []
        self._closed = False
        if not append:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_text("", encoding="utf-8")

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        """Write the spans as one line, or keep them until ``batch_size`` have come."""
        if self._closed:
            if spans:
                logger.warning(
                    "%d spans ended after the trace file %s was closed: not written",
                    len(spans),
                    self.path,
                )
            return SpanExportResult.FAILURE
        with self._lock:
            if self.batch_size is None:
                return self._write(spans)
            self._pending.extend(spans)
            if len(self._pending) < self.batch_size:
                return SpanExportResult.SUCCESS
            batch, self._pending = self._pending, []
            return self._write(batch)

    def _write(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if not spans:
            return SpanExportResult.SUCCESS
        try:
            # orjson: json.dumps took a fifth of a span's encoding (bench/tracing.py)
            line = orjson.dumps(encode_request(spans), option=orjson.OPT_APPEND_NEWLINE)
            with open(self.path, "ab") as f:
                f.write(line)
        except Exception:  # an exporter never raises into the run
            logger.warning(
                "could not write %d spans to %s: they are lost",
                len(spans),
                self.path,
                exc_info=True,
            )
            return SpanExportResult.FAILURE
        return SpanExportResult.SUCCESS

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Write the spans kept so far; False when they could not be written."""
        with self._lock:
            batch, self._pending = self._pending, []
            return self._write(batch) is SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        """Write the spans kept so far, stop accepting spans."""
        with self._lock:
            batch, self._pending = self._pending, []
            self._write(batch)
            self._closed = True


@final
class SyncSpanProcessor(SimpleSpanProcessor):
    """OpenTelemetry's ``SimpleSpanProcessor``, whose ``force_flush`` flushes its exporter.

    The SDK's own answers True without asking the exporter, which holds up to a batch
    of spans here (internal: ``configure(jsonl=...)`` puts the file behind it).
    """

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Write the spans the exporter keeps."""
        return self.span_exporter.force_flush(timeout_millis)
