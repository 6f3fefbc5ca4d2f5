"""Recording orchestra's spans in a test: ``recording()``.

A fresh OpenTelemetry SDK provider with an in-memory exporter, installed through
``orchestra.tracing`` for the length of a ``with`` block; every span the block's runs,
hooks, dispatches and tools make lands in the exporter. A pytest fixture is three
lines::

    @pytest.fixture
    def exporter():
        with recording() as exp:
            yield exp
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from orchestra.tracing._state import set_capture_content, set_enabled, set_tracer_provider

__all__ = ["recording"]


@contextmanager
def recording() -> Iterator[InMemorySpanExporter]:
    """Record every span orchestra makes inside the block; yield the exporter holding them.

    On exit the provider is shut down and orchestra's tracing settings are back to their
    defaults: no provider of orchestra's own, tracing and content capture as the
    environment says (``set_enabled(None)``, ``set_capture_content(None)``), whatever the
    block changed.
    """
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    set_tracer_provider(provider)
    try:
        yield exporter
    finally:
        set_tracer_provider(None)
        set_enabled(None)
        set_capture_content(None)
        provider.shutdown()
