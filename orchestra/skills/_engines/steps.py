"""``StepEvents``: the ``StepStart``/``StepEnd`` events an agent bridge fires (public).

A step is one model turn of an agent run; what counts as one is the bridge's to say (its
docs page does). The bridge finds the turn's fields, this class builds the payloads the
catalog documents and fires them, so every bridge sends the same events.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, final

import attrs

from orchestra._spending import active, charge_model_end, charge_model_start
from orchestra.skills._engines.dag_payloads import safe_serialize
from orchestra.skills._firing.outcome import CriticalHookError

if TYPE_CHECKING:
    from orchestra._errors import HookError
    from orchestra.skills._firing.registry import HookRegistry

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

    The hooks of both events observe: their outcome is not read, and a hook that fails
    or times out is recorded as its ``on_error`` says. A critical hook's
    ``CriticalHookError`` (``on_error: raise``) is logged and handed to ``record``, a
    hook error of the run, never its end. ``StepStart`` and ``StepEnd`` are also where
    the budgets open in the run's context (``orchestra.Budget``) charge model calls:
    ``begin`` raises ``BudgetExceeded`` when a budget has no room for the call (the
    bridge must then not make it, and let the error end the run), ``finish`` when the
    call's usage crossed a limit.

    Args:
        registry: the hooks, or None (nothing listens).
        charge: charge the budgets open here in ``begin`` and ``finish`` (False: the
            bridge charges them itself, ``orchestra.bridge.charge_model_start``, where
            its engine swallows what an async callback raises).

    Attributes:
        start: the registry has ``StepStart`` hooks.
        end: it has ``StepEnd`` hooks.
        hooked: either.
    """

    __slots__ = ("charge", "end", "hooked", "registry", "start")

    def __init__(self, registry: HookRegistry | None, *, charge: bool = True) -> None:
        self.registry = registry
        self.charge = charge
        self.start = registry is not None and registry.has_hooks("StepStart")
        self.end = registry is not None and registry.has_hooks("StepEnd")
        self.hooked = self.start or self.end

    @property
    def watching(self) -> bool:
        """Step hooks, or a budget open here: when False, a bridge need not look at turns."""
        return self.hooked or bool(active())

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

        Raises:
            BudgetExceeded: a budget open here has no room for the call: do not make it.
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
        if self.charge:
            charge_model_start(fields["model"])
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
        content: str | None = None,
        tool_results: Sequence[Mapping[str, Any]] = (),
    ) -> None:
        """Fire ``StepEnd`` (if it has hooks) for ``turn``: its answer, or its error.

        Args:
            turn: what ``begin`` returned.
            record: where a critical hook's error goes.
            tool_calls: the names of the tools the model asked for.
            input_tokens: the turn's input tokens, if known.
            output_tokens: its output tokens, if known.
            error: the error that ended the model call, if it failed.
            content: the text the model answered this turn, if any (lobehub's step
                content).
            tool_results: the tool results the model read this turn (those of the
                calls it asked for the turn before), each ``{"tool_name",
                "tool_call_id", "output"}``; made JSON-safe.

        Raises:
            BudgetExceeded: the call's usage crossed a limit of a budget open here.
        """
        usage = {"input_tokens": input_tokens, "output_tokens": output_tokens}
        if self.end:
            payload = self._end(turn, tool_calls, usage, error)
            payload["content"] = content
            payload["tool_results"] = [safe_serialize(result) for result in tool_results]
            await self._fire("StepEnd", payload, record)
        if error is None and self.charge:
            charge_model_end(turn.fields["model"], usage)

    @staticmethod
    def _end(
        turn: Step,
        tool_calls: Sequence[str],
        usage: dict[str, int | None],
        error: BaseException | None,
    ) -> dict[str, Any]:
        return {
            **turn.fields,
            "tool_calls": list(tool_calls),
            "usage": usage,
            "duration_ms": (time.perf_counter() - turn.started) * 1000.0,
            "error": None if error is None else (str(error) or type(error).__name__),
        }

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
