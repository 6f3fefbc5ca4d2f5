from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import orchestra.tracing as ot


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    """Spans recorded by a fresh SDK provider, installed through orchestra.tracing."""
    exp = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exp))
    ot.set_tracer_provider(provider)
    try:
        yield exp
    finally:
        ot.set_tracer_provider(None)
        provider.shutdown()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # pydantic-ai runs on asyncio only (its runs need a running asyncio loop)
