"""The step events of a hooked graph run: ``StepStart``/``StepEnd`` (internal).

A step is one chat-model call made inside the run: LangChain's ``on_chat_model_start``
opens it and ``on_llm_end`` (or ``on_llm_error``) closes it. The bridge hears them
through a callback handler it adds to the run's config, for the run only, when the
registry has step hooks; the config reaches every node, subgraph and model the run
calls. ``agent_name`` is the graph's name (``create_agent(name=...)`` sets it), ``node``
the node that called the model, ``step`` the call's 1-based rank in the run. Both events
are observe-only: their outcome is not read; a hook that fails or times out is recorded
as its ``on_error`` says, and the run goes on; a critical hook's ``CriticalHookError``
(``on_error: raise``) is a hook error of the run (``after_run``'s
``RunResult.hook_errors``), never the end of the run.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, final
from uuid import UUID

from langchain_core.callbacks import AsyncCallbackHandler, BaseCallbackHandler
from langchain_core.runnables.config import merge_configs

from orchestra import HookError
from orchestra.bridge import charge_model_end, charge_model_start

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage
    from langchain_core.outputs import LLMResult

    from orchestra.skills import Step, StepEvents
    from orchestra_langgraph._run import Run
    from orchestra_langgraph._tree import TreeGuard

__all__ = ["configured"]


def configured(
    steps: StepEvents | None,
    run: Run,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    guard: TreeGuard | None = None,
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The run's ``(args, kwargs)`` with handlers of its own added to its config.

    ``steps``: the model calls' (None: none watched); ``guard``: the tools' (``_tree``).
    """
    handlers: list[BaseCallbackHandler] = []
    if steps is not None and guard is not None and guard.run_inline:
        # one handler, not two: LangChain's cost is per handler, in each child run (bridges bench)
        handlers.append(_BudgetHandler(guard))
    else:
        if guard is not None:
            handlers.append(guard)
        if steps is not None:
            handlers.append(_BudgetHandler())
    if steps is not None and steps.hooked:
        handlers.append(_StepHandler(steps, run.name, run.record))
    if len(args) > 1:
        config = merge_configs(args[1], {"callbacks": handlers})
        return (args[0], config, *args[2:]), kwargs
    kwargs = {**kwargs, "config": merge_configs(kwargs.get("config"), {"callbacks": handlers})}
    return args, kwargs


def _model(metadata: dict[str, Any] | None, kwargs: dict[str, Any]) -> str | None:
    """The model's name, as LangChain reports it."""
    name = (metadata or {}).get("ls_model_name") or (kwargs.get("invocation_params") or {}).get(
        "model"
    )
    return name if isinstance(name, str) else None


class _ModelCallsOnly:
    """A handler of model calls alone: LangChain skips it for every other event.

    Without these flags each node's and each channel write's chain events reach it too.
    """

    ignore_chain = True
    ignore_agent = True  # the tools' events too
    ignore_retriever = True
    ignore_retry = True
    ignore_custom_event = True


@final
class _BudgetHandler(_ModelCallsOnly, BaseCallbackHandler):
    """Charges each chat-model call to the budgets open in the run (``orchestra.Budget``).

    A sync handler that raises: LangChain swallows what an async handler raises on the
    sync path, and a ``BudgetExceeded`` must stop the model call before it is made (or
    end the run after the call that crossed a limit).

    Given the run's ``TreeGuard`` (one that never blocks: ``run_inline``), it also hears
    the tools' starts and hands them to it.
    """

    raise_error = True  # BudgetExceeded is all it raises (and the guard's ToolRefused)
    run_inline = True

    def __init__(self, guard: TreeGuard | None = None) -> None:
        self.models: dict[UUID, str | None] = {}
        self.guard = guard
        self.ignore_agent = guard is None  # the tools' events: only for the guard

    def on_tool_start(self, serialized: Any, input_str: str, **kwargs: Any) -> None:
        if self.guard is not None:
            self.guard.on_tool_start(serialized, input_str, **kwargs)

    def on_chat_model_start(self, serialized: Any, messages: Any, **kwargs: Any) -> None:
        model = self.models[kwargs["run_id"]] = _model(kwargs.get("metadata"), kwargs)
        charge_model_start(model)

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        if run_id not in self.models:  # not a chat-model call, or one a budget refused
            return
        usage = getattr(_message(response), "usage_metadata", None) or {}
        charge_model_end(self.models.pop(run_id), usage)

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self.models.pop(run_id, None)


@final
class _StepHandler(_ModelCallsOnly, AsyncCallbackHandler):
    """One run's steps: their count, the ones in flight (parallel nodes may overlap).

    An async handler serves both kinds of run: under ``ainvoke``/``astream`` LangChain
    awaits it on the graph's loop; under ``invoke``/``stream`` it runs it to its end in the
    node's worker thread, on a loop of its own.
    """

    raise_error = False  # a failure here is LangChain's warning, never the run's error
    run_inline = True  # StepStart is heard before the model is called, in order

    def __init__(self, events: StepEvents, graph: str, record: Callable[[HookError], None]) -> None:
        self.events = events
        self.graph = graph
        self.record = record
        self.count = itertools.count(1)
        self.open: dict[UUID, Step] = {}
        self.lock = threading.Lock()

    async def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        turn = await self.events.begin(
            self.record,
            agent_name=self.graph,
            step=next(self.count),
            model=_model(metadata, kwargs),
            message_count=len(messages[0]) if messages else 0,
            node=(metadata or {}).get("langgraph_node"),
        )
        with self.lock:
            self.open[run_id] = turn

    async def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        await self._finish(run_id, response, None)

    async def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        await self._finish(run_id, None, error)

    async def _finish(
        self, run_id: UUID, response: LLMResult | None, error: BaseException | None
    ) -> None:
        with self.lock:
            turn = self.open.pop(run_id, None)
        if turn is None:  # not a chat-model step of this run
            return
        message = _message(response)
        usage = getattr(message, "usage_metadata", None) or {}
        await self.events.finish(
            turn,
            self.record,
            tool_calls=[call["name"] for call in getattr(message, "tool_calls", None) or ()],
            input_tokens=usage.get("input_tokens"),
            output_tokens=usage.get("output_tokens"),
            error=error,
        )


def _message(response: LLMResult | None) -> Any:
    """The chat message a model call answered, if any."""
    if response is None or not response.generations or not response.generations[0]:
        return None
    return getattr(response.generations[0][0], "message", None)
