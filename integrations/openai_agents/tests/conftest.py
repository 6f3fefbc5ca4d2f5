from __future__ import annotations

import agents
import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the OpenAI Agents SDK runs on asyncio only


@pytest.fixture(autouse=True)
def offline_sdk(monkeypatch: pytest.MonkeyPatch) -> None:
    # No network: a dummy key for the SDK's client setup, and no export of its own traces.
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")
    agents.set_tracing_disabled(True)
