"""orchestra-hooks-hamilton: orchestra ``TaskHooks`` around every node of a Hamilton driver.

Add one adapter to the driver; every node becomes a task your hooks see and decide::

    from hamilton import driver
    import orchestra
    from orchestra_hamilton import HookAdapter

    class Retry503(orchestra.TaskHooks):
        def on_failure(self, ctx, error):
            if isinstance(error, ConnectionError) and ctx.attempt < 3:
                return orchestra.Retry(delay=0.5)
            return None

    dr = driver.Builder().with_modules(my_dataflow).with_adapters(HookAdapter(Retry503())).build()
    dr.execute(["report"])

What the decisions do in Hamilton:

- ``Retry(delay)`` runs the node again (its whole lifecycle: other adapters see every
  attempt) after ``delay`` seconds;
- ``Skip`` gives the node the value None: its dependents run with None, as Hamilton
  lets optional values flow;
- ``Fail`` raises: ``orchestra.TaskFailed`` from ``before_execute``; the node's own error,
  with a note naming the hook, from ``on_failure``;
- ``Replace`` changes the node's keyword arguments in
  ``before_execute``, its output in ``after_execute``, and recovers a failure with a
  substitute output in ``on_failure``.

The task id is the node's name and ``task.metadata`` its tags. The adapter works with the
synchronous driver and with ``hamilton.async_driver`` (hooks may be ``def`` or
``async def`` in both). It uses Hamilton's ``do_remote_execute`` method, so it cannot be
combined with another adapter that implements it (Ray, the thread pool adapter).
"""

from __future__ import annotations

from hamilton import version as _hamilton_version

_SUPPORTED = ((1, 80), (2, 0))
"""Hamilton versions this adapter supports: >= 1.80, < 2."""


def _check_version(found: tuple[int, ...]) -> None:
    low, high = _SUPPORTED
    if not (low <= tuple(found[:2]) < high):
        raise ImportError(
            f"orchestra-hooks-hamilton supports apache-hamilton >=1.80,<2; "
            f"found {'.'.join(map(str, found))}"
        )


_check_version(tuple(_hamilton_version.VERSION))

from orchestra_hamilton._adapter import HookAdapter as HookAdapter  # noqa: E402

__version__ = "0.1.0"

__all__ = ["HookAdapter"]

HookAdapter.__module__ = __name__
