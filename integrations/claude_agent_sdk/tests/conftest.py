from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from orchestra.tracing.testing import recording


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    """Spans recorded by a fresh SDK provider, installed through orchestra.tracing."""
    with recording() as exp:
        yield exp


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)  # the SDK runs on anyio: both backends
