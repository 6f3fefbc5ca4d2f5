"""How the hooks of one event run, and which of a registry's hooks an event runs.

The hooks that match run in a chain, one after the other, when the event can block or
modify (or only one matched), each seeing the input as rewritten before it; else
concurrently. Either way ``Combiner`` takes their answers in config order.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, Final, TypeAlias

import anyio
import attrs
from opentelemetry.trace import Tracer

from orchestra.skills._catalog import EventSpec
from orchestra.skills._hook import HookSpec, event_json
from orchestra.skills._outcome import Combiner, HookOutcome, HookRecord

__all__ = [
    "RunHook",
    "combiner_for",
    "in_phase_order",
    "matching_hooks",
    "run_hooks",
    "subject_of",
]

RunHook: TypeAlias = Callable[
    [HookSpec, Mapping[str, Any], "Tracer | None", "str | None", "bytes | None"],
    Awaitable[HookRecord],
]
"""Runs one hook on the event data: (hook, data, tracer, subject, body) -> its record."""

_RERUN: Final = "re-run: the input was rewritten after the guards"


def combiner_for(spec: EventSpec, payload: Mapping[str, Any]) -> Combiner:
    """A ``Combiner`` for an event, starting from its input (the payload's input field)."""
    field = spec.input_field
    current = payload.get(field) if field else None
    if current is not None and type(current) is not dict and not isinstance(current, Mapping):
        current = None
    return Combiner(spec, current)


async def run_hooks(
    hooks: Sequence[HookSpec],
    data: dict[str, Any],
    combiner: Combiner,
    tracer: Tracer | None,
    subject: str | None,
    run: RunHook,
) -> HookOutcome:
    """Run the hooks that matched an event, with ``run``, and combine their answers.

    The caller runs a single hook itself (no guard to run again, nothing to gather).
    """
    spec = combiner.spec
    if spec.can_block or spec.can_modify:
        await _chain(hooks, data, combiner, tracer, subject, run)
    else:
        records: list[HookRecord | None] = [None] * len(hooks)
        try:
            body: bytes | None = event_json(data)
        except (TypeError, ValueError):  # each hook records the error itself
            body = None

        async def run_one(i: int, hook: HookSpec) -> None:
            records[i] = await run(hook, data, tracer, subject, body)

        async with anyio.create_task_group() as group:
            for i, hook in enumerate(hooks):
                group.start_soon(run_one, i, hook)
        for record in records:
            assert record is not None
            combiner.add(record)
    return combiner.outcome()


async def _chain(
    hooks: Sequence[HookSpec],
    data: dict[str, Any],
    combiner: Combiner,
    tracer: Tracer | None,
    subject: str | None,
    run: RunHook,
) -> None:
    """Run hooks one after the other, each on the input as rewritten before it.

    Guards judge the final input: when a hook after them rewrote it, every guard
    runs again on it (a guard cannot rewrite it, so once is enough).
    """
    field = combiner.spec.input_field
    guards = [hook for hook in hooks if hook.phase == "guard"]
    judged: Mapping[str, Any] | None = None
    for hook in hooks:
        if combiner.modified and field is not None:
            data[field] = combiner.input
        if hook.phase == "guard":
            judged = combiner.input
        if combiner.add(await run(hook, data, tracer, subject, None)):
            return
    if not guards or not combiner.modified or combiner.input == judged:
        return
    if field is not None:
        data[field] = combiner.input
    for hook in guards:
        record = await run(hook, data, tracer, subject, None)
        if combiner.add(attrs.evolve(record, note=_RERUN)):
            return


_PHASE_RANK: Final = {"transform": 0, "guard": 1, None: 2}


def in_phase_order(hooks: Iterable[HookSpec]) -> tuple[HookSpec, ...]:
    """Transforms first, then guards, then the other hooks, each in config order."""
    return tuple(sorted(hooks, key=lambda hook: _PHASE_RANK[hook.phase]))


def subject_of(spec: EventSpec, payload: Mapping[str, Any]) -> str | None:
    """What the event's matchers are matched against: its matcher field, as a string."""
    field = spec.matcher_field
    raw = payload.get(field) if field else None
    return raw if raw is None or type(raw) is str else str(raw)


def matching_hooks(hooks: Sequence[HookSpec], subject: str | None) -> tuple[HookSpec, ...]:
    """The hooks whose matcher matches ``subject``, in order."""
    if len(hooks) == 1:  # the most common case, without a generator
        return tuple(hooks) if hooks[0].matches(subject) else ()
    return tuple(hook for hook in hooks if hook.matches(subject))
