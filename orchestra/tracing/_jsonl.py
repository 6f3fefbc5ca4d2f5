"""``JsonlSpanExporter``: spans to a file in the OTLP JSON file format.

This module imports the OpenTelemetry SDK; ``orchestra.tracing`` loads it only when it is
asked for (``configure(jsonl=...)`` or ``orchestra.tracing.JsonlSpanExporter``).
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Final, final

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

from orchestra.tracing._otlp_json import encode_request
from orchestra.tracing._writer import WriterProcess

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
    processor), spans are kept until ``batch_size`` have ended, then written by the
    thread that ended the last one: a run that makes spans faster than they are written
    waits for the file instead of losing spans, and no more than a batch is held back.
    With ``process=True`` too (also ``configure``'s), that thread only encodes the line
    to OTLP protobuf and a writer process (started with the first full line, stopped at
    shutdown) turns it into JSON and writes it, on another core: the JSON half costs
    about as much per span as the run's own work. ``force_flush()`` and ``shutdown()``
    (which the provider calls at exit) write the rest and wait until the file holds
    every span (the SDK's ``SimpleSpanProcessor.force_flush`` does not ask its
    exporter: call the exporter's). A write error is logged with the number of spans
    lost, never raised into the run; if the writer process dies, the exporter logs how
    many spans it may have lost and writes the next lines itself.

    Args:
        path: the file to write.
        append: add to the file instead of truncating it when the exporter is made.
        batch_size: spans per line, kept until that many have come; None writes each
            export at once (behind a ``BatchSpanProcessor``, which batches already).
        process: with a ``batch_size``, have a writer process write the lines.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        append: bool = False,
        batch_size: int | None = None,
        process: bool = False,
    ) -> None:
        if batch_size is not None and (
            isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1
        ):
            raise ValueError(f"batch_size must be an int >= 1 or None, got {batch_size!r}")
        self.path = Path(path)
        self.batch_size = batch_size
        self.process = process
        self._lock = threading.Lock()
        self._pending: list[ReadableSpan] = []
        self._writer: WriterProcess | None = None
        self._writer_gone = False  # once a writer process failed, lines are written here
        self._lost = 0  # spans the writer process said it could not write, logged
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
            writer = self._writer_for_lines()
            if writer is None:
                return self._write(batch)
            return self._hand_over(writer, batch)

    def _writer_for_lines(self) -> WriterProcess | None:
        """The writer process, started on the first full line; None: write here."""
        if not self.process or self._writer_gone:
            return None
        if self._writer is None:
            try:
                self._writer = WriterProcess(self.path)
            except OSError:
                logger.warning("could not start the trace writer process", exc_info=True)
                self._writer_gone = True
        return self._writer

    def _hand_over(self, writer: WriterProcess, batch: Sequence[ReadableSpan]) -> SpanExportResult:
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

        try:
            writer.send(encode_spans(batch).SerializeToString(), len(batch))
        except OSError:
            self._writer_died(writer)
            return self._write(batch)
        return SpanExportResult.SUCCESS

    def _writer_died(self, writer: WriterProcess) -> None:
        unsure = writer.sent - writer.written_before  # sent, never said to be written
        if unsure:
            logger.warning(
                "the trace writer process of %s exited: up to %d spans sent to it may be "
                "lost; the next ones are written by this process",
                self.path,
                unsure,
            )
        else:
            logger.warning(
                "the trace writer process of %s exited; the next spans are written by this process",
                self.path,
            )
        writer.close()
        self._writer, self._writer_gone = None, True

    def _write(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if not spans:
            return SpanExportResult.SUCCESS
        try:
            line = json.dumps(encode_request(spans), separators=(",", ":")) + "\n"
            with open(self.path, "a", encoding="utf-8") as f:
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
        """Write the spans kept so far, and wait until the file holds every span."""
        with self._lock:
            batch, self._pending = self._pending, []
            writer = self._writer
            if writer is None:
                return self._write(batch) is SpanExportResult.SUCCESS
            if batch and self._hand_over(writer, batch) is not SpanExportResult.SUCCESS:
                return False
            if self._writer is None:  # it died while taking the batch, written here
                return True
            try:
                written = writer.written()
            except OSError:
                self._writer_died(writer)
                return False
            return self._count_lost(writer.sent - written)

    def _count_lost(self, lost: int) -> bool:
        if lost > self._lost:
            logger.warning(
                "%d spans could not be written to %s: they are lost", lost - self._lost, self.path
            )
            self._lost = lost
        return lost == 0

    def shutdown(self) -> None:
        """Write the spans kept so far, stop the writer process, stop accepting spans."""
        self.force_flush()
        with self._lock:
            if self._writer is not None:
                self._writer.close()
                self._writer = None
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
