"""``QueuedSpanProcessor``: OpenTelemetry's batch processor, and a count of what it lost.

``configure()`` puts the console and OTLP exporters behind it: spans are exported on the
processor's own thread, so a slow backend does not slow a run. A span can still be lost
there: its export fails (an unreachable backend), the queue overflows, or the exit comes
before the queue is drained. OpenTelemetry logs the first two as they happen; this
processor counts the spans it was given and those exported, and says at shutdown (the
provider's exit hook) how many never reached the exporter's backend.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Sequence
from typing import Final, final

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

__all__ = ["QueuedSpanProcessor"]

logger: Final = logging.getLogger("orchestra")


@final
class _Counted(SpanExporter):
    """An exporter that counts the spans its wrapped exporter took (internal)."""

    def __init__(self, exporter: SpanExporter) -> None:
        self.exporter = exporter
        self.exported = 0  # written by the processor's one export thread at a time

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        result = self.exporter.export(spans)
        if result is SpanExportResult.SUCCESS:
            self.exported += len(spans)
        return result

    def shutdown(self) -> None:
        self.exporter.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.exporter.force_flush(timeout_millis)


@final
class QueuedSpanProcessor(BatchSpanProcessor):
    """A ``BatchSpanProcessor`` that logs, at shutdown, how many spans were not exported.

    Args:
        exporter: the exporter to feed.
        max_queue_size: spans the queue holds (beyond it OpenTelemetry drops and logs).
        name: what the exporter writes to, for the message (an endpoint, "the console").
    """

    def __init__(self, exporter: SpanExporter, *, max_queue_size: int, name: str) -> None:
        self._counted = _Counted(exporter)
        self._ended = itertools.count()  # next() is atomic: spans end on any thread
        self._name = name
        self._done = False
        super().__init__(self._counted, max_queue_size=max_queue_size)

    def on_end(self, span: ReadableSpan) -> None:
        """Queue the span for export, and count it."""
        if span.context is not None and span.context.trace_flags.sampled:
            next(self._ended)
        super().on_end(span)

    def shutdown(self) -> None:
        """Export what is queued (within OpenTelemetry's 30 s), then say what was lost."""
        if self._done:
            return
        self._done = True
        super().shutdown()  # type: ignore[no-untyped-call]  # the SDK leaves it untyped
        ended = next(self._ended)  # how many were counted before this call
        lost = ended - self._counted.exported
        if lost > 0:
            logger.warning(
                "%d of the %d spans of this process were not exported to %s",
                lost,
                ended,
                self._name,
            )
