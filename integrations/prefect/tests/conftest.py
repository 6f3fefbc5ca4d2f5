from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(scope="session")
def prefect_api() -> Iterator[str]:
    """Prefect's local API (temporary PREFECT_HOME and database), once per session."""
    from orchestra_prefect.testing import local_api

    with local_api() as url:
        yield url
