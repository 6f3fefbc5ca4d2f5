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
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from orchestra.tracing._otlp_json import encode_request

__all__ = ["JsonlSpanExporter"]

logger: Final = logging.getLogger("orchestra")


@final
class JsonlSpanExporter(SpanExporter):
    """Write finished spans to a file in the OTLP JSON file format.

    Each export is one line: an ``ExportTraceServiceRequest`` in OTLP/JSON, as the
    OpenTelemetry Collector's file exporter writes and its ``otlpjsonfile`` receiver
    reads, so the file can be replayed into any OTLP backend later. The embedded
    default: no collector or server needed. Read the file with ``orchestra trace show
    FILE``, ``orchestra trace report FILE`` or ``orchestra.tracing.read_jsonl``. Put it
    behind a ``BatchSpanProcessor`` (``configure(jsonl=...)`` does): writes happen on
    the processor's thread, and a write error is logged, never raised into the run.

    Args:
        path: the file to write.
        append: add to the file instead of truncating it when the exporter is made.
    """

    def __init__(self, path: str | os.PathLike[str], *, append: bool = False) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._closed = False
        if not append:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_text("", encoding="utf-8")

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        """Append the spans to the file: one line, one ``ExportTraceServiceRequest``."""
        if self._closed:
            return SpanExportResult.FAILURE
        if not spans:
            return SpanExportResult.SUCCESS
        try:
            line = json.dumps(encode_request(spans), separators=(",", ":")) + "\n"
            with self._lock, open(self.path, "a", encoding="utf-8") as f:
                f.write(line)
        except Exception:  # an exporter never raises into the run
            logger.warning("could not write spans to %s", self.path, exc_info=True)
            return SpanExportResult.FAILURE
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        """Stop accepting spans."""
        self._closed = True

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Nothing is buffered here: every export is written at once."""
        return True
