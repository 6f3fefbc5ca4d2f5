"""A cluster of worker processes for the tests that need real ones (``process_cluster``)."""

from __future__ import annotations

import contextlib

import dask
from distributed import Client, LocalCluster


class ProcessCluster:
    """A LocalCluster of two worker processes, made anew when a killed worker stays away.

    No second chance from dask itself: the first death of a worker running the task
    raises KilledWorker, so the decision is orchestra's. On a loaded machine a nanny may
    take minutes to bring a killed worker back, or never does (runs saw "Only 1/2 workers
    arrived after 240" even after a restart): then the cluster is closed and a new one made.
    """

    def __init__(self) -> None:
        self._stack: contextlib.ExitStack | None = None
        self._client: Client | None = None

    def up(self) -> Client:
        """The client of a cluster whose two workers are up."""
        if self._client is not None:
            try:
                self._client.wait_for_workers(2, timeout=120)
                return self._client
            except TimeoutError:
                self.close()
        with contextlib.ExitStack() as stack:
            # no stealing: a task queued behind another on a worker stays there (without
            # it, a test's queued tasks moved to the other worker as soon as it was idle)
            stack.enter_context(
                dask.config.set(
                    {
                        "distributed.scheduler.allowed-failures": 0,
                        "distributed.scheduler.work-stealing": False,
                    }
                )
            )
            cluster = stack.enter_context(
                LocalCluster(
                    n_workers=2,
                    threads_per_worker=1,
                    processes=True,
                    dashboard_address=":0",
                    memory_limit="1GiB",
                )
            )
            client = stack.enter_context(Client(cluster))
            client.wait_for_workers(2, timeout=240)
            self._stack, self._client = stack.pop_all(), client
        return client

    def close(self) -> None:
        """Close the cluster, its workers and the client."""
        stack, self._stack, self._client = self._stack, None, None
        if stack is not None:
            stack.close()
