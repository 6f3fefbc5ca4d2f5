from __future__ import annotations

from collections.abc import Iterator

import pytest
from distributed import Client, LocalCluster
from process_cluster import ProcessCluster


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def client() -> Iterator[Client]:
    """A small in-process cluster (one worker, four threads), one per test module.

    Modules that need another cluster define their own ``client`` (worker processes:
    from ``process_cluster``'s two, ``ProcessCluster.up()``).
    """
    with (
        LocalCluster(
            n_workers=1, threads_per_worker=4, processes=False, dashboard_address=":0"
        ) as cluster,
        Client(cluster) as client,
    ):
        yield client


@pytest.fixture(scope="module")
def process_cluster() -> Iterator[ProcessCluster]:
    """A cluster of two worker processes, one per test module that asks for it."""
    made = ProcessCluster()
    try:
        yield made
    finally:
        made.close()
