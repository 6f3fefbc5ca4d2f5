"""Arc's ``run_complete`` gate: a ``blocking`` hook there that blocks fails the run.

Arc fires ``run_complete`` "after the run finishes successfully", and a blocking hook's
``block`` "stops execution with an error". orchestra's ``after_run`` comes after the
run's result is made and has no answer that changes it (the public contract), so the
gate is judged one step earlier, where a decision still counts: in ``after_execute`` of
the run's last task to succeed, once every other task has ended (or is ending) and none
failed. A block fails that task with ``run_complete hook NAME blocked: REASON``: the run
is not ``ok``, ``raise_for_failures()`` raises, and ``run_failed`` hooks fire at
``RunEnd``. The gate's hooks are then not run again at ``RunEnd``.

When the run's last task to end did not run its body (SKIPPED, or skipped by an Arc
hook), no ``after_execute`` comes after it: the gate runs at ``RunEnd`` as before, and a
block there is a hook error on ``RunResult.hook_errors`` (logged at WARNING).
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final, final

import attrs

from orchestra._errors import HookBlocked
from orchestra._hooks import RunContext, TaskHookContext
from orchestra.skills._engines.dag_payloads import run_end_payload
from orchestra.skills._sources.arc.hooks import ArcHook, GateBlocked

if TYPE_CHECKING:
    from orchestra.skills._firing.outcome import HookOutcome
    from orchestra.skills._hooks.spec import HookSpec

__all__ = ["RunGates", "is_run_gate", "not_run_gate"]

_GOOD: Final = frozenset({"succeeded", "skipped"})


def is_run_gate(hook: HookSpec) -> bool:
    """A ``blocking`` Arc hook at ``run_complete``."""
    return isinstance(hook, ArcHook) and hook.gate and hook.event == "RunEnd"


def not_run_gate(hook: HookSpec) -> bool:
    """Every hook but a run gate (``RunEnd`` once the gate was judged)."""
    return not is_run_gate(hook)


@attrs.define
class _Run:
    ctx: RunContext
    unsettled: set[str]
    states: dict[str, enum.Enum] = attrs.Factory(dict)
    failed: bool = False
    judged: bool = False


@final
class RunGates:
    """The runs under way of one adapter, and whether each one's gate was judged.

    Args:
        fire: fires ``RunEnd`` for the gate's hooks only and reports their errors.
    """

    def __init__(self, fire: Callable[[dict[str, Any], str], Awaitable[HookOutcome]]) -> None:
        self._fire = fire
        self._runs: dict[str, _Run] = {}

    def start(self, ctx: RunContext) -> None:
        """A run starts: every task is unsettled."""
        self._runs[ctx.run_id] = _Run(ctx, set(ctx.task_ids))

    def ended(self, ctx: TaskHookContext, state: enum.Enum) -> None:
        """A task reached its terminal state (``on_end``)."""
        run = self._runs.get(ctx.run_id)
        if run is None:
            return
        run.unsettled.discard(ctx.task.id)
        run.states[ctx.task.id] = state
        if state.value not in _GOOD:
            run.failed = True

    async def settle(self, ctx: TaskHookContext) -> None:
        """A task succeeded (``after_execute``): judge the gate if it is the run's last.

        Raises:
            HookBlocked: the gate blocked: the task, and so the run, fails.
        """
        run = self._runs.get(ctx.run_id)
        if run is None or run.failed or run.judged:
            return
        run.unsettled.discard(ctx.task.id)
        if run.unsettled:
            return
        run.judged = True
        payload = run_end_payload(run.ctx, run.states, True)
        payload["states"] = {**payload["states"], ctx.task.id: "succeeded"}
        outcome = await self._fire(payload, ctx.task.id)
        if type(outcome.output) is GateBlocked:
            by = outcome.decided_by or ""
            raise HookBlocked(outcome.output.message, hook=by, moment="after_execute")

    def finish(self, run_id: str) -> bool:
        """The run ended: forget it; whether its gate was judged already."""
        run = self._runs.pop(run_id, None)
        return run is not None and run.judged
