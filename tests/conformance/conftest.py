"""The conformance suite's engines: orchestra's scheduler, its Dask executor, Hamilton, Prefect.

Each engine is started at most once per session (a Dask ``LocalCluster`` in this
process, Prefect's local API server) and only when a test asks for it.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from engine_drivers import (
    DaskEngine,
    Engine,
    HamiltonEngine,
    OrchestraEngine,
    PrefectEngine,
)


@pytest.fixture(scope="session")
def dask_engine() -> Iterator[DaskEngine]:
    from dask.distributed import Client, LocalCluster
    from orchestra_dask import DaskExecutor

    with (
        LocalCluster(
            n_workers=1, threads_per_worker=4, processes=False, dashboard_address=":0"
        ) as cluster,
        Client(cluster) as client,
    ):
        yield DaskEngine(DaskExecutor(client))


@pytest.fixture(scope="session")
def prefect_engine() -> Iterator[PrefectEngine]:
    from orchestra_prefect.testing import local_api

    with local_api():
        yield PrefectEngine()


@pytest.fixture(params=["orchestra", "dask", "hamilton", "prefect"])
def engine(request: pytest.FixtureRequest) -> Engine:
    if request.param == "orchestra":
        return OrchestraEngine()
    if request.param == "hamilton":
        return HamiltonEngine()
    fixture: Engine = request.getfixturevalue(f"{request.param}_engine")
    return fixture
