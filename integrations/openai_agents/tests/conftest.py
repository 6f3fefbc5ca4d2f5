from __future__ import annotations

from collections.abc import Iterator

import agents
import pytest
from bridge_helpers import SpanLedger
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import orchestra.tracing


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the OpenAI Agents SDK runs on asyncio only


@pytest.fixture(autouse=True)
def offline_sdk(monkeypatch: pytest.MonkeyPatch) -> None:
    # No network: a dummy key for the SDK's client setup, and no export of its own traces.
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")
    agents.set_tracing_disabled(True)


@pytest.fixture(params=["run", "streamed"])
def mode(request: pytest.FixtureRequest) -> str:
    """Each test drives the bridge through ``run`` and through ``run_streamed``."""
    return str(request.param)


@pytest.fixture
def spans() -> Iterator[SpanLedger]:
    """orchestra's spans, finished or not, from an in-memory OpenTelemetry SDK."""
    exporter = InMemorySpanExporter()
    ledger = SpanLedger(exporter)
    provider = TracerProvider()
    provider.add_span_processor(ledger)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    orchestra.tracing.set_tracer_provider(provider)
    try:
        yield ledger
    finally:
        orchestra.tracing.set_tracer_provider(None)
        provider.shutdown()
