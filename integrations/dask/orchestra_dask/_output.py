"""``RemoteOutput``: a task's output kept on the cluster as a dask future."""

from __future__ import annotations

from typing import Any, final

from distributed import Future

__all__ = ["RemoteOutput"]


@final
class RemoteOutput:
    """A task's output, kept on the cluster as a dask future.

    What dependents receive (as the future, resolved to the value on the worker), what
    ``after_execute`` hooks that set ``needs_outputs = False`` see, and never what
    ``RunResult.outputs`` holds (the executor fetches the kept outputs when the run ends).

    Attributes:
        task_id: the task that computed it.
        future: the ``distributed.Future`` holding it; released once no dependent needs it.
    """

    __slots__ = ("future", "task_id")

    def __init__(self, task_id: str, future: Future[Any]) -> None:
        self.task_id = task_id
        self.future = future

    @property
    def key(self) -> str:
        """The dask key of the attempt that computed it: ``"{task id}-{32 hex digits}"``."""
        return str(self.future.key)

    def __repr__(self) -> str:
        kind = self.future.type
        of = f" type={kind.__name__}" if isinstance(kind, type) else ""
        return f"<RemoteOutput task={self.task_id!r} key={self.key!r}{of}>"
