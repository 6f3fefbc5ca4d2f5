"""orchestra-hooks-dask: run orchestra DAG task bodies on a dask.distributed cluster.

Pass a ``DaskExecutor`` to ``orchestra.run`` (or ``run_sync``). Task bodies run on the
cluster's workers; the scheduler, ``TaskHooks``, YAML hooks and every decision (retry,
skip, fail) stay in the driver process::

    from dask.distributed import Client, LocalCluster
    import orchestra
    from orchestra_dask import DaskExecutor

    dag = orchestra.DAG("etl")

    @dag.task
    def extract() -> list[int]:
        return list(range(10))

    @dag.task(deps=[extract], retries=2)
    def total(extract: list[int]) -> int:
        return sum(extract)

    with LocalCluster(n_workers=2, dashboard_address=":0") as cluster, Client(cluster) as client:
        result = orchestra.run_sync(dag, executor=DaskExecutor(client))
        assert result.outputs["total"] == 45

What to know:

- Outputs stay on the cluster: a task gets its upstream outputs as dask futures, resolved
  on its worker. The driver fetches an output only for ``after_execute`` hooks (unless
  they set ``needs_outputs = False``) and for ``RunResult.outputs`` (``outputs=``:
  ``"leaves"`` by default); each is released once its dependents have ended.
- ``timeout=`` is the body's running time on the worker, not time in dask's queues.
- With ``max_concurrency=None`` and no ``before_execute``/``after_execute`` hooks, tracing,
  ``fail_fast`` or journal, dependents are submitted before their upstreams end (chained):
  dask starts them on the cluster, and the driver adopts those submissions as attempts.
- Each attempt is a fresh dask task (key ``"{task id}-{32 hex digits}"``): a ``Retry`` runs the
  body again, even after a worker died (dask raises ``KilledWorker`` once
  ``distributed.scheduler.allowed-failures`` is spent; your ``on_failure`` sees it).
- Cancelling the run (an outer cancel scope, ``fail_fast``, a task ``timeout``) cancels
  the task's dask future. A body already running in a worker thread cannot be
  interrupted: dask drops its result when it ends.
- ``async def`` bodies run with ``anyio.run`` in a worker thread, on the driver's backend
  (``async_backend=`` to choose).
- The OpenTelemetry context of the task attempt is propagated (W3C ``traceparent``) and
  attached on the worker: give the workers a tracer provider (a ``WorkerPlugin``, say)
  and the spans started by the body join the run's trace.
- Works on both anyio backends (asyncio and trio) with a normal synchronous ``Client``,
  which runs its own event loop in a thread; the driver's loop never blocks on it. On
  asyncio, an asynchronous ``Client`` (``await Client(cluster, asynchronous=True)``)
  created on the driver's loop is awaited directly.
- Per task, ``metadata={"dask": {"resources": {"GPU": 1}}}`` (or ``options=`` for all)
  passes ``workers``, ``resources``, ``priority``, ``allow_other_workers`` or
  ``annotations`` to dask; ``retries`` is refused: orchestra decides retries.
"""

from orchestra_dask._executor import SUBMIT_OPTIONS as SUBMIT_OPTIONS
from orchestra_dask._executor import DaskExecutor as DaskExecutor
from orchestra_dask._output import RemoteOutput as RemoteOutput

__version__ = "0.1.0"

__all__ = ["SUBMIT_OPTIONS", "DaskExecutor", "RemoteOutput"]

DaskExecutor.__module__ = __name__
RemoteOutput.__module__ = __name__
