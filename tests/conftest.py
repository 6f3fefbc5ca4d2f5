from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from orchestra.tracing.testing import recording


@pytest.fixture(autouse=True, scope="session")
def _journal_key_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The user's journal key in a folder of the session's, never the real one (children too)."""
    mp = pytest.MonkeyPatch()
    mp.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("state")))
    yield
    mp.undo()


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    """orchestra's spans, recorded by a fresh SDK provider into the in-memory exporter."""
    with recording() as exp:
        yield exp


@pytest.fixture
def spans(exporter: InMemorySpanExporter) -> InMemorySpanExporter:
    """The same exporter, under the name the agents and skills tests use."""
    return exporter
