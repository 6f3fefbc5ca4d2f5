"""``configure()``: an OpenTelemetry SDK set up for scripts and the CLI, on request."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Final
from urllib.parse import urlsplit

from opentelemetry import trace

from orchestra.tracing._state import (
    forget_tracer,
    set_capture_content,
    set_enabled,
    set_tracer_provider,
)

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter

__all__ = ["JSONL_BATCH", "QUEUE_SIZE", "configure"]

logger: Final = logging.getLogger("orchestra")

JSONL_BATCH: Final = 16
"""Spans per line of a ``configure(jsonl=...)`` file.

Few enough that what encoding a line allocates dies young: with 256 spans a line, Python's
garbage collector walked the whole run for it, and the file cost about 15% more CPU.
"""

QUEUE_SIZE: Final = 1 << 20
"""Spans the console and OTLP exporters' queues hold (OpenTelemetry's default: 2,048)."""


def _otlp_exporter(otlp: str | bool, timeout: float | None) -> SpanExporter:
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    except ImportError as exc:  # pragma: no cover - depends on the installed extras
        raise ImportError(
            "configure(otlp=...) needs the OTLP exporter: pip install 'orchestra-hooks[otlp]'"
        ) from exc
    if otlp is True:
        return OTLPSpanExporter(timeout=timeout)
    endpoint = str(otlp)
    if urlsplit(endpoint).path in ("", "/"):
        endpoint = endpoint.rstrip("/") + "/v1/traces"
    return OTLPSpanExporter(endpoint=endpoint, timeout=timeout)


def configure(
    console: bool = False,
    jsonl: str | os.PathLike[str] | None = None,
    otlp: str | bool | None = None,
    capture_content: bool | None = None,
    *,
    enabled: bool | None = None,
    service_name: str = "orchestra",
    provider: TracerProvider | None = None,
    set_global: bool = True,
    otlp_timeout: float | None = 5.0,
) -> TracerProvider | None:
    """Set up an OpenTelemetry SDK tracer provider with the exporters asked for.

    The library itself never installs a provider; this helper does, for scripts and the
    ``orchestra`` CLI. No span of a run is dropped, however large the run: the trace
    file is written in lines of ``JSONL_BATCH`` spans, each encoded with
    OpenTelemetry's own OTLP/JSON encoder and written by the thread that ends its last
    span (a run that makes spans faster than they are written waits for the file); the
    console and OTLP exporters sit behind a ``BatchSpanProcessor`` whose queue holds
    ``QUEUE_SIZE`` spans, so a slow backend does not slow a run. A span is lost only
    when its exporter fails (an unreachable backend, a file that cannot be written),
    more than ``QUEUE_SIZE`` spans wait for a backend, or the exit comes before the
    queue is sent; each loss is logged on the ``orchestra`` or ``opentelemetry`` logger
    (at shutdown, with the number of spans not exported). Spans still buffered are written at exit
    (or call ``provider.shutdown()`` or ``provider.force_flush()``).

    Args:
        console: print finished spans to stdout (the SDK's console exporter).
        jsonl: write spans to this file in the OTLP JSON file format, one
            ``ExportTraceServiceRequest`` per line (the file is truncated first). Read it
            with ``orchestra trace show``.
        otlp: send spans to an OTLP/HTTP endpoint, e.g. ``http://localhost:4318``
            (``/v1/traces`` is added to a URL without a path); True uses the
            ``OTEL_EXPORTER_OTLP_*`` environment variables. Needs ``orchestra-hooks[otlp]``.
        capture_content: put payload content (tool inputs, prompts, outputs, hook
            output) on spans; None leaves the ``ORCHESTRA_CAPTURE_CONTENT`` setting.
        enabled: switch orchestra's tracing on or off (see ``set_enabled``); with
            False and nothing else asked for, no provider is made.
        service_name: the ``service.name`` resource attribute of a new provider.
        provider: add the exporters to this SDK provider instead of a new one (or the
            global SDK provider already installed).
        set_global: install the provider as OpenTelemetry's global tracer provider
            (default); False makes it orchestra's own (``set_tracer_provider``) and
            leaves the global one alone.
        otlp_timeout: seconds the OTLP exporter waits for the backend per export.

    Returns:
        The SDK tracer provider, or None when no provider was asked for.
    """
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import ConsoleSpanExporter

    from orchestra.tracing._queued import QueuedSpanProcessor
    from orchestra.tracing._resource import provider_resource

    if enabled is not None:
        set_enabled(enabled)
    if capture_content is not None:
        set_capture_content(capture_content)
    if not (console or jsonl or otlp) and provider is None and enabled is False:
        return None
    if provider is None:
        current = trace.get_tracer_provider() if set_global else None
        if isinstance(current, TracerProvider):
            provider = current
        else:
            provider = TracerProvider(resource=provider_resource(service_name))
    exporters: list[tuple[SpanExporter, str]] = []
    if console:
        exporters.append((ConsoleSpanExporter(), "the console"))
    if otlp:
        where = "the OTEL_EXPORTER_OTLP_* endpoint" if otlp is True else str(otlp)
        exporters.append((_otlp_exporter(otlp, otlp_timeout), where))
    for exporter, name in exporters:
        processor = QueuedSpanProcessor(exporter, max_queue_size=QUEUE_SIZE, name=name)
        provider.add_span_processor(processor)
    if jsonl:
        from orchestra.tracing._jsonl import JsonlSpanExporter, SyncSpanProcessor

        file = JsonlSpanExporter(Path(jsonl), batch_size=JSONL_BATCH)
        provider.add_span_processor(SyncSpanProcessor(file))
    if set_global:
        if trace.get_tracer_provider() is not provider:
            trace.set_tracer_provider(provider)
            forget_tracer()
    else:
        set_tracer_provider(provider)
    return provider
