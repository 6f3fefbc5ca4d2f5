"""orchestra-hooks-prefect: orchestra ``TaskHooks`` deciding what Prefect 3 does with a task.

Stack ``hooked`` above Prefect's ``@task``; the hooks decide retries (and their delay),
skips and failures, while Prefect keeps its states, retry counts, logs and UI::

    from prefect import flow, task
    import orchestra
    import orchestra_prefect

    class RetryTimeouts(orchestra.TaskHooks):
        def on_failure(self, ctx, error):
            if isinstance(error, TimeoutError) and ctx.attempt < 4:
                return orchestra.Retry(delay=2.0 * ctx.attempt)
            return None

    @orchestra_prefect.hooked(RetryTimeouts())
    @task
    def fetch(url: str) -> bytes: ...

What the decisions become in Prefect:

- ``Retry(delay)``: Prefect retries the run (``AwaitingRetry`` for ``delay`` seconds, then
  ``Retrying``; ``run_count`` goes up as for its own retries);
- ``Skip``: the run ends ``Completed`` with the name ``"Skipped"`` and no data (None
  downstream), the reason in the state's message;
- ``Fail``: the run ends ``Failed`` and is not retried (``orchestra.TaskFailed`` when no
  exception was raised, the task's own exception otherwise);
- ``Replace``: new keyword arguments (``before_execute``), a new
  return value (``after_execute``), or a substitute value that recovers a failure;
- no opinion: the task's own ``retries``, ``retry_delay_seconds`` and
  ``retry_condition_fn`` apply, as without hooks.

The task id in hook contexts is the Prefect task's name, ``ctx.run_id`` the flow run's id
and ``ctx.task.metadata`` holds the task run's id, name, flow run id and tags.
"""

from __future__ import annotations

from importlib.metadata import version as _dist_version

_SUPPORTED = ((3, 4), (4, 0))
"""Prefect versions this integration supports: >= 3.4, < 4."""


def _check_version(found: str) -> None:
    parts = tuple(int(p) for p in found.split(".")[:2] if p.isdigit())
    low, high = _SUPPORTED
    if not (low <= parts < high):
        raise ImportError(f"orchestra-hooks-prefect supports prefect >=3.4,<4; found {found}")


_check_version(_dist_version("prefect"))

from orchestra_prefect._hooked import DEFAULT_MAX_RETRIES as DEFAULT_MAX_RETRIES  # noqa: E402
from orchestra_prefect._hooked import hooked as hooked  # noqa: E402
from orchestra_prefect._states import SKIPPED as SKIPPED  # noqa: E402
from orchestra_prefect._states import task_state as task_state  # noqa: E402

__version__ = "0.1.0"

__all__ = ["DEFAULT_MAX_RETRIES", "SKIPPED", "hooked", "task_state"]

hooked.__module__ = task_state.__module__ = __name__
