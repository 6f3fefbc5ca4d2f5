"""One node of a Hamilton run: its attempts, driven by ``orchestra.bridge`` (internal).

The body Hamilton gives ``do_remote_execute`` (the node's lifecycle) is the body of
``TaskAttempts``: the synchronous driver drives it with ``run_sync`` (no coroutine, no
event loop; an ``async def`` hook gets a loop of its own, a retry's delay blocks), the
async driver with ``run_async`` (the asyncio task Hamilton awaits). What a decision means
is the driver's; in Hamilton's terms ``DoGive`` is the node's value downstream,
``DoSkip`` is None downstream and ``DoFail`` raises (``orchestra.TaskFailed`` before or
after the node, the node's own error after it failed).

A moment no hook implements costs one boolean; spans exist only when tracing is on.
"""

from __future__ import annotations

import weakref
from collections.abc import Awaitable, Callable
from types import MappingProxyType
from typing import Any, final

import orchestra
from orchestra import HookChain, TaskState
from orchestra.bridge import AttemptDriver, TaskAttempts, carry
from orchestra_hamilton._run import Run

__all__ = ["Nodes", "reason"]


@final
class Nodes:
    """The node moments of one adapter's chain (its attempt driver), and each node's task.

    Attributes:
        hooked: whether any hook implements a node moment.
        tasks: by ``id(node)``: a weak reference to the Hamilton node and the
            ``orchestra.Task`` standing for it, made once per node (across runs; a node's
            ``name`` is a property Hamilton joins anew each time).
    """

    __slots__ = ("awaiting", "driver", "has_end", "hooked", "tasks")

    def __init__(self, chain: HookChain, max_attempts: int) -> None:
        self.driver = AttemptDriver(chain, max_attempts=max_attempts)
        self.hooked = self.driver.hooked
        self.has_end = self.driver.has["on_end"]
        self.awaiting = self.driver.awaiting
        self.tasks: dict[int, tuple[weakref.ref[Any], orchestra.Task]] = {}

    def task(self, node: Any) -> orchestra.Task:
        """The ``orchestra.Task`` standing for a node: id its name, metadata its tags."""
        known = self.tasks.get(id(node))
        if known is not None and known[0]() is node:
            return known[1]
        task = orchestra.Task(
            id=node.name,
            fn=node.callable,
            deps=[d.name for d in node.dependencies],
            metadata=MappingProxyType(dict(node.tags)),
        )
        key = id(node)
        self.tasks[key] = (weakref.ref(node, lambda _: self.tasks.pop(key, None)), task)
        return task

    def run_sync(self, run: Run, node: Any, body: Callable[..., Any], kwargs: Any) -> Any:
        """Every attempt of one node under the synchronous driver."""
        attempts = self.begin(run, self.task(node), kwargs)
        return carry(attempts.run_sync(lambda k: body(**k), spans=run.spans(attempts.task.id)))

    async def run_async(self, run: Run, node: Any, body: Callable[..., Any], kwargs: Any) -> Any:
        """Every attempt of one node under the async driver."""
        # upstream nodes are asyncio tasks under the async driver
        kwargs = {k: (await v) if isinstance(v, Awaitable) else v for k, v in kwargs.items()}
        attempts = self.begin(run, self.task(node), kwargs)

        async def attempt(k: Any) -> Any:
            result = body(**k)
            return (await result) if isinstance(result, Awaitable) else result

        return carry(await attempts.run_async(attempt, spans=run.spans(attempts.task.id)))

    def begin(self, run: Run, task: orchestra.Task, kwargs: Any) -> TaskAttempts:
        """The attempts of one node, settled into ``run``."""
        return self.driver.begin(
            task,
            kwargs,
            context=run.attempt_context,
            on_error=run.record,
            tracer=run.tracer,
            settle=run.settled,
        )

    async def ended(self, run: Run, task: orchestra.Task, state: TaskState) -> None:
        """Call the ``on_end`` hooks of a node the run never reached (attempt 0)."""
        await self.begin(run, task, {}).anever_ran(state)


def reason(decision: object) -> str:
    """``": reason"`` of a decision that gives one, else ``""``."""
    why = getattr(decision, "reason", None)
    return f": {why}" if why else ""
