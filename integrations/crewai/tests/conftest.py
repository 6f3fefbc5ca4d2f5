from __future__ import annotations

import os
from collections.abc import Iterator

# CrewAI would send telemetry and traces to its servers: never from the tests
os.environ["CREWAI_DISABLE_TELEMETRY"] = "true"
os.environ["CREWAI_TRACING_ENABLED"] = "false"
os.environ["CREWAI_DISABLE_TRACKING"] = "true"

import warnings

with warnings.catch_warnings():  # CrewAI's import warns (crewai.rag's lazy modules)
    warnings.simplefilter("ignore", ImportWarning)
    import crewai  # noqa: F401

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)

from orchestra.tracing.testing import recording


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    """Spans recorded by a fresh SDK provider, installed through orchestra.tracing."""
    with recording() as exp:
        yield exp


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # CrewAI's async paths run on asyncio only
