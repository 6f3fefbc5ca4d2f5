"""One node of a hooked graph: its attempts, driven by ``orchestra.bridge`` (internal).

The node's runnable is the body of ``TaskAttempts``: ``invoke``/``stream`` drive it with
``run_sync`` (worker threads, no event loop: ``def`` hooks are called inline),
``ainvoke``/``astream`` with ``run_async`` (awaited on the graph's loop). What a decision
means is the driver's; here is only what its answers are in LangGraph's terms:
``DoSkip`` leaves the state unchanged (the node's update is None), ``DoFail`` raises
(``orchestra.TaskFailed`` before the node, the node's own error after it), ``DoGive``
is the node's update (the runnable's, a hook's replacement, or a given output such as
a graph executor's ``block``: ``{}``), ``DoRun`` runs the runnable on the state as
``before_execute`` replaced it. Interrupts and ``Command(graph=PARENT)`` (LangGraph's
``GraphBubbleUp``) are not failures: they pass through untouched.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, Final, final

from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda
from langgraph.errors import GraphBubbleUp

import orchestra
from orchestra.bridge import AttemptDriver, TaskAttempts, carry
from orchestra_langgraph._run import Run, current

__all__ = ["HookedNode", "node_runnable", "reason"]

_PASS: Final = (GraphBubbleUp,)


@final
class HookedNode:
    """A node's runnable with the node moments around it."""

    __slots__ = ("driver", "inner", "task")

    def __init__(
        self, name: str, inner: Runnable[Any, Any], driver: AttemptDriver, metadata: Any
    ) -> None:
        self.inner = inner
        self.driver = driver
        self.task = orchestra.Task(
            id=name, fn=inner.invoke, metadata=MappingProxyType(dict(metadata or {}))
        )

    def invoke(self, state: Any, config: RunnableConfig) -> Any:
        """Every attempt of one node run under ``invoke``/``stream``."""
        run = current.get()
        if run is None:  # the node runs outside a hooked run (a graph invoked unhooked)
            return self.inner.invoke(state, config)
        attempts = self.begin(run, state)
        end = attempts.run_sync(
            lambda s: self.inner.invoke(s, config),
            spans=run.spans(self.task.id, nest=True),
            passthrough=_PASS,
        )
        return carry(end)

    async def ainvoke(self, state: Any, config: RunnableConfig) -> Any:
        """Every attempt of one node run under ``ainvoke``/``astream``."""
        run = current.get()
        if run is None:
            return await self.inner.ainvoke(state, config)
        attempts = self.begin(run, state)
        end = await attempts.run_async(
            lambda s: self.inner.ainvoke(s, config),
            spans=run.spans(self.task.id, nest=True),
            passthrough=_PASS,
        )
        return carry(end)

    def begin(self, run: Run, state: Any) -> TaskAttempts:
        """The attempts of one node run, settled into ``run``."""
        return self.driver.begin(
            self.task,
            state,
            context=run.attempt_context,
            on_error=run.record,
            tracer=run.tracer,
            settle=run.settled,
        )


def node_runnable(node: HookedNode, name: str) -> Runnable[Any, Any]:
    """The runnable LangGraph runs for a hooked node (sync and async)."""
    return RunnableLambda(node.invoke, node.ainvoke, name=name)


def reason(decision: object) -> str:
    """``": reason"`` of a decision that gives one, else ``""``."""
    why = getattr(decision, "reason", None)
    return f": {why}" if why else ""
