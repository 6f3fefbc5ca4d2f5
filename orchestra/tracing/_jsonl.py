"""``JsonlSpanExporter``: spans to a file, one OTLP-JSON span per line.

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
from typing import Any, Final, final

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.trace import StatusCode

from orchestra.tracing._otlp_json import encode_attributes

__all__ = ["JsonlSpanExporter", "span_to_otlp_json"]

logger: Final = logging.getLogger("orchestra")

# OTLP's SpanKind numbers are the API's enum values plus one (0 is UNSPECIFIED).
_STATUS: Final = {StatusCode.UNSET: 0, StatusCode.OK: 1, StatusCode.ERROR: 2}


def span_to_otlp_json(span: ReadableSpan) -> dict[str, Any]:
    """One finished span as an OTLP-JSON ``Span`` object (plus its resource and scope)."""
    ctx = span.get_span_context()
    assert ctx is not None
    parent = span.parent
    out: dict[str, Any] = {
        "traceId": f"{ctx.trace_id:032x}",
        "spanId": f"{ctx.span_id:016x}",
        "parentSpanId": f"{parent.span_id:016x}" if parent is not None else "",
        "name": span.name,
        "kind": span.kind.value + 1,
        "startTimeUnixNano": str(span.start_time or 0),
        "endTimeUnixNano": str(span.end_time or 0),
        "attributes": encode_attributes(span.attributes),
        "events": [
            {
                "timeUnixNano": str(event.timestamp),
                "name": event.name,
                "attributes": encode_attributes(event.attributes),
            }
            for event in span.events
        ],
        "links": [
            {
                "traceId": f"{link.context.trace_id:032x}",
                "spanId": f"{link.context.span_id:016x}",
                "attributes": encode_attributes(link.attributes),
            }
            for link in span.links
        ],
        "status": {"code": _STATUS[span.status.status_code]},
    }
    if ctx.trace_state:
        out["traceState"] = ctx.trace_state.to_header()
    if span.status.description:
        out["status"]["message"] = span.status.description
    scope = span.instrumentation_scope
    if scope is not None:
        out["scope"] = {"name": scope.name, "version": scope.version or ""}
    if span.resource is not None and span.resource.attributes:
        out["resource"] = {"attributes": encode_attributes(span.resource.attributes)}
    return out


@final
class JsonlSpanExporter(SpanExporter):
    """Write finished spans to a file, one OTLP-JSON span per line.

    The embedded default: no collector or server needed. Read the file with
    ``orchestra trace show FILE`` or ``orchestra.tracing.read_jsonl``. Put it behind a
    ``BatchSpanProcessor`` (``configure(jsonl=...)`` does): writes happen on the
    processor's thread, and a write error is logged, never raised into the run.

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
        """Append the spans to the file, one line each."""
        if self._closed:
            return SpanExportResult.FAILURE
        try:
            lines = "".join(
                json.dumps(span_to_otlp_json(span), separators=(",", ":"), default=str) + "\n"
                for span in spans
            )
            with self._lock, open(self.path, "a", encoding="utf-8") as f:
                f.write(lines)
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
