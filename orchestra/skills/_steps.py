"""``StepEvents``: the ``StepStart``/``StepEnd`` events an agent bridge fires (public).

A step is one model turn of an agent run; what counts as one is the bridge's to say (its
docs page does). The bridge finds the turn's fields, this class builds the payloads the
catalog documents and fires them, so every bridge sends the same events.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final, final

import attrs

from orchestra.skills._critical import CriticalHookError

if TYPE_CHECKING:
    from orchestra._errors import HookError
    from orchestra.skills._registry import HookRegistry

__all__ = ["Step", "StepEvents"]

logger: Final = logging.getLogger("orchestra")


@final
@attrs.frozen
class Step:
    """A model turn in flight: its ``StepStart`` fields and when the model was called.

    Attributes:
        fields: ``agent_name``, ``step``, ``model``, ``message_count`` and the bridge's
            own fields (LangGraph's ``node``).
        started: ``time.perf_counter()`` once ``StepStart`` was fired.
    """

    fields: dict[str, Any]
    started: float


@final
class StepEvents:
    """Whether a registry has step hooks, and the firing of ``StepStart`` and ``StepEnd``.

    Both events are observe-only: their outcome is not read, and a hook that fails or
    times out is recorded as its ``on_error`` says. A critical hook's
    ``CriticalHookError`` (``on_error: raise``) is logged and handed to ``record``, a
    hook error of the run, never its end.

    Args:
        registry: the hooks, or None (nothing listens).

    Attributes:
        start: the registry has ``StepStart`` hooks.
        end: it has ``StepEnd`` hooks.
        watching: either: when False, a bridge need not look at model turns at all.
    """

    __slots__ = ("end", "registry", "start", "watching")

    def __init__(self, registry: HookRegistry | None) -> None:
        self.registry = registry
        self.start = registry is not None and registry.has_hooks("StepStart")
        self.end = registry is not None and registry.has_hooks("StepEnd")
        self.watching = self.start or self.end

    async def begin(
        self,
        record: Callable[[HookError], object],
        *,
        agent_name: str,
        step: int,
        model: object,
        message_count: int | None,
        **extra: Any,
    ) -> Step:
        """Fire ``StepStart`` (if it has hooks); the turn, for ``finish``.

        Args:
            record: where a critical hook's error goes (the run's hook errors).
            agent_name: the agent (or graph) whose turn it is.
            step: the turn's 1-based index in the run.
            model: the model's name; anything but a str is sent as None.
            message_count: the messages sent to the model this turn, if known.
            **extra: the bridge's own fields.
        """
        fields = {
            "agent_name": agent_name,
            "step": step,
            "model": model if isinstance(model, str) else None,
            "message_count": message_count,
            **extra,
        }
        if self.start:
            await self._fire("StepStart", fields, record)
        return Step(fields, time.perf_counter())

    async def finish(
        self,
        turn: Step,
        record: Callable[[HookError], object],
        *,
        tool_calls: Sequence[str] = (),
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        error: BaseException | None = None,
    ) -> None:
        """Fire ``StepEnd`` (if it has hooks) for ``turn``: its answer, or its error.

        Args:
            turn: what ``begin`` returned.
            record: where a critical hook's error goes.
            tool_calls: the names of the tools the model asked for.
            input_tokens: the turn's input tokens, if known.
            output_tokens: its output tokens, if known.
            error: the error that ended the model call, if it failed.
        """
        if not self.end:
            return
        payload = {
            **turn.fields,
            "tool_calls": list(tool_calls),
            "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
            "duration_ms": (time.perf_counter() - turn.started) * 1000.0,
            "error": None if error is None else (str(error) or type(error).__name__),
        }
        await self._fire("StepEnd", payload, record)

    async def _fire(
        self, event: str, payload: dict[str, Any], record: Callable[[HookError], object]
    ) -> None:
        assert self.registry is not None
        try:
            await self.registry.fire(event, payload)
        except CriticalHookError as error:  # observe-only: a hook error of the run
            for failed in (error, *error.others):  # each critical hook that failed
                logger.warning("%s", failed)
                record(failed)
