"""What the driver waits for: an ``Attempt`` to submit, or a fetch (internal)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, final

import anyio
from tornado.platform.asyncio import BaseAsyncIOLoop

if TYPE_CHECKING:
    from distributed import Client, Future

    from orchestra import Task
    from orchestra_dask._bridge import Bridge
    from orchestra_dask._chain import ChainedRun
    from orchestra_dask._worker import Body

__all__ = ["Attempt", "Item", "client_loop"]


class Item:
    """Something the driver waits for: its outcome or error, set on the client's loop."""

    __slots__ = ("cancelled", "done", "error", "future", "outcome")

    def __init__(self, future: Future[Any] | None) -> None:
        self.future: Any = future  # distributed's Future is untyped
        self.done = anyio.Event()
        self.outcome: Any = None
        self.error: BaseException | None = None
        self.cancelled = False


@final
class Attempt(Item):
    """One attempt: what to submit, then its dask future."""

    __slots__ = (
        "adopted",
        "annotations",
        "args",
        "body",
        "chain",
        "gather",
        "held",
        "options",
        "requeues",
        "task",
        "task_id",
    )

    def __init__(
        self,
        task_id: str,
        body: Body | None,
        args: dict[str, Any],
        held: dict[str, Future[Any]],
        options: dict[str, Any],
        annotations: dict[str, Any],
        *,
        gather: bool,
        requeues: int,
        chain: ChainedRun | None = None,
    ) -> None:
        super().__init__(None)
        self.task_id = task_id
        self.body = body
        self.args = args
        self.held = held  # futures the body holds: dask resolves them on the worker
        self.options = options
        self.annotations = annotations
        self.gather = gather  # bring the output to the driver (a task run by an agent)
        self.requeues = requeues
        self.chain = chain  # the run's chaining, if it chains
        self.adopted = False  # a spec (submitted ahead) the driver's attempt took over
        self.task: Task | None = None  # the task to prepare, when ``body`` is None

    @classmethod
    def later(
        cls, task: Task, args: dict[str, Any], chain: ChainedRun, *, requeues: int
    ) -> Attempt:
        """A chained run's attempt, prepared (``prepare``) only if it adopts no spec."""
        attempt = cls(task.id, None, args, {}, {}, {}, gather=False, requeues=requeues, chain=chain)
        attempt.task = task
        return attempt

    def prepare(self, bridge: Bridge) -> None:
        """Pickle the body of an attempt made ``later`` (and read its dask options)."""
        chain = self.chain
        assert chain is not None
        assert self.task is not None
        ready = chain.executor.prepare(self.task, self.args, bridge, {}, chain.annotations, chain)
        self.body = ready.body
        self.held = ready.held
        self.options = ready.options
        self.annotations = ready.annotations


def client_loop(client: Client) -> asyncio.AbstractEventLoop:
    """The asyncio loop ``client`` runs on."""
    loop = client.loop
    if not isinstance(loop, BaseAsyncIOLoop):  # tornado >= 5 loops all are
        raise RuntimeError(f"{client!r} has no asyncio event loop (is it closed?)")
    return loop.asyncio_loop
