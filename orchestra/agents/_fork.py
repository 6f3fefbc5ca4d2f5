"""``Fork``: the handle of a ``FORK`` dispatch."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any, final

import anyio

from orchestra._errors import DispatchError
from orchestra.agents._types import SubagentResult

__all__ = ["Fork"]


@final
class Fork:
    """The handle of a ``FORK`` dispatch: await it for the ``SubagentResult``, or cancel it.

    ``await fork`` (or ``await fork.wait()``) returns the result once the dispatch ends,
    or raises its ``DispatchError`` (a ``BaseException`` such as ``KeyboardInterrupt``
    is raised as is). Awaiting a fork that was cancelled raises ``DispatchError``. A
    handle can be awaited any number of times, also after the dispatcher closed. If the
    task awaiting a fork is cancelled, the fork is cancelled too: nobody is left to take
    its result.

    Attributes:
        agent: the agent the work was dispatched to (before any delegation).
        task: the text dispatched.
        parent: the ``parent`` given to ``dispatch``.
    """

    __slots__ = ("_done", "_error", "_result", "_retrieved", "_scope", "agent", "parent", "task")

    def __init__(self, agent: str, task: str, parent: str | None) -> None:
        self.agent = agent
        self.task = task
        self.parent = parent
        self._scope = anyio.CancelScope()
        self._done = anyio.Event()
        self._result: SubagentResult | None = None
        self._error: BaseException | None = None
        self._retrieved = False

    def cancel(self) -> None:
        """Cancel the dispatch if it is still running (no effect once it ended)."""
        self._scope.cancel()

    def done(self) -> bool:
        """Whether the dispatch ended (answered, failed or was cancelled)."""
        return self._done.is_set()

    @property
    def cancelled(self) -> bool:
        """Whether the dispatch ended by cancellation (``cancel()`` or the dispatcher's)."""
        return self._done.is_set() and self._result is None and self._error is None

    async def wait(self) -> SubagentResult:
        """Wait for the dispatch to end and return its result (or raise its error).

        Raises:
            DispatchError: the dispatch failed, or was cancelled.
        """
        if not self._done.is_set():
            try:
                await self._done.wait()
            except anyio.get_cancelled_exc_class():
                self._scope.cancel()
                raise
        self._retrieved = True
        if self._result is not None:
            return self._result
        if self._error is not None:
            raise self._error
        raise DispatchError(
            f"fork of {self.task!r} to agent {self.agent!r} was cancelled", agent=self.agent
        )

    def __await__(self) -> Generator[Any, None, SubagentResult]:
        return self.wait().__await__()

    def __repr__(self) -> str:
        state = (
            "running"
            if not self.done()
            else "cancelled"
            if self.cancelled
            else "failed"
            if self._error is not None
            else "done"
        )
        return f"<Fork agent={self.agent!r} parent={self.parent!r} {state}>"
