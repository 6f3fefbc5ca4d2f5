"""Run hooked flows in tests: Prefect's ephemeral local API, started once per process.

::

    import pytest
    from orchestra_prefect.testing import local_api

    @pytest.fixture(scope="session", autouse=True)
    def prefect_api():
        with local_api():
            yield

``local_api()`` points Prefect at a temporary ``PREFECT_HOME``, turns the server's
anonymous analytics off (no network), and starts Prefect's local API server (a
subprocess on 127.0.0.1, with a temporary SQLite database) through
``prefect.testing.utilities.prefect_test_harness``. Entered again while active (two
session fixtures, say), it reuses the running server.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

from prefect.settings import (
    PREFECT_API_URL,
    PREFECT_HOME,
    PREFECT_SERVER_ANALYTICS_ENABLED,
    temporary_settings,
)
from prefect.testing.utilities import prefect_test_harness

__all__ = ["local_api"]

_active: list[str] = []


@contextmanager
def local_api(startup_timeout: int = 120) -> Iterator[str]:
    """Run the enclosed code against a temporary local Prefect API; yields its URL.

    Args:
        startup_timeout: seconds to wait for the server to answer (it takes a few
            seconds, more on a busy machine).
    """
    if _active:
        yield _active[-1]
        return
    home = tempfile.mkdtemp(prefix="orchestra-prefect-")
    try:
        with (
            temporary_settings(
                updates={PREFECT_HOME: home, PREFECT_SERVER_ANALYTICS_ENABLED: False},
                restore_defaults={PREFECT_API_URL},
            ),
            prefect_test_harness(server_startup_timeout=startup_timeout),
        ):
            _active.append(str(PREFECT_API_URL.value()))
            try:
                yield _active[-1]
            finally:
                _active.pop()
    finally:
        shutil.rmtree(home, ignore_errors=True)
