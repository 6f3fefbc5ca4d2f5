"""How the hooks of one event run, and which of a registry's hooks an event runs.

The matching hooks are cut into stages (``stages``); the hooks of one stage run at once
on the same input, stages one after the other, each on the input as rewritten before it:

==========================================  ==========================================
hooks                                        stage
==========================================  ==========================================
every hook of an event that cannot modify    one stage: all at once
its input (``Stop``, ``PostToolUse``, ...)
a ``phase: transform`` hook                  its own stage, in config order
the ``phase: guard`` hooks                   one stage, on the input the transforms
                                             left; again, all at once, when a later
                                             hook rewrote the input
consecutive hooks of Claude Code sources     one stage (Claude Code runs every
                                             matching handler at once)
a hook of a source that runs its hooks in    its own stage, in config order, on every
list order (``HookSpec.in_order``: the       event (the first ``block`` ends the chain:
graph executor's)                            ``HookResult.final``)
any other hook (it may rewrite the input)    its own stage, in config order
==========================================  ==========================================

Whatever the timing, ``Combiner`` takes the answers in config order, so the outcome is
deterministic: the first deny or block in config order decides. Once a hook's answer
would end the chain, the hooks after it in its stage are cancelled (their answers could
not count); the stage waits only for the hooks before it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Final, TypeAlias

import anyio
import attrs
from opentelemetry.trace import Tracer

from orchestra._tool_call import qualified_tool_name
from orchestra.skills._firing.merge import Combiner
from orchestra.skills._firing.outcome import HookOutcome, HookRecord
from orchestra.skills._hooks.spec import HookSpec, event_json
from orchestra.skills._protocol.catalog import EVENTS, EventSpec

__all__ = [
    "FiringTable",
    "Only",
    "RunHook",
    "claude_subject_of",
    "combiner_for",
    "firing_table",
    "in_phase_order",
    "matching_hooks",
    "run_hooks",
    "selected",
    "stages",
    "subject_of",
]

RunHook: TypeAlias = Callable[
    [HookSpec, Mapping[str, Any], "Tracer | None", "str | None", "bytes | None"],
    Awaitable[HookRecord],
]
"""Runs one hook on the event data: (hook, data, tracer, subject, body) -> its record."""

_RERUN: Final = "re-run: the input was rewritten after the guards"


FiringTable: TypeAlias = dict[str, tuple[EventSpec, tuple[HookSpec, ...], bool, bool, bool]]
"""Per event with hooks: (the event, its hooks in phase order, whether one runs only once
or in the background, whether every one runs whatever the payload (no matcher, ``if``
rule or filter), whether one filters on the payload (``HookSpec.selects``))."""


def firing_table(by_event: Mapping[str, tuple[HookSpec, ...]]) -> FiringTable:
    """The ``FiringTable`` of a registry's hooks, by event (events without hooks left out)."""
    return {
        name: (
            EVENTS[name],
            hooks,
            any(hook.once or hook.background for hook in hooks),
            all(h.pattern is None and h.condition is None and not h.filters for h in hooks),
            any(hook.filters for hook in hooks),
        )
        for name, hooks in by_event.items()
        if hooks
    }


def combiner_for(spec: EventSpec, payload: Mapping[str, Any]) -> Combiner:
    """A ``Combiner`` for an event, starting from its input (the payload's input field)."""
    field = spec.input_field
    current = payload.get(field) if field else None
    if current is not None and type(current) is not dict and not isinstance(current, Mapping):
        current = None
    return Combiner(spec, current)


def stages(spec: EventSpec, hooks: Sequence[HookSpec]) -> Iterator[tuple[HookSpec, ...]]:
    """The stages of ``hooks`` (in phase order) on ``spec``: see the module docstring."""
    if not spec.can_modify:
        yield from _at_once_but_in_order(hooks)
        return
    guards = tuple(hook for hook in hooks if hook.phase == "guard")
    together: list[HookSpec] = []
    for hook in hooks:
        if hook.claude_code and hook.phase is None:
            together.append(hook)
            continue
        if together:
            yield tuple(together)
            together = []
        if hook.phase == "guard":
            if hook is guards[0]:
                yield guards
        else:
            yield (hook,)
    if together:
        yield tuple(together)


def _at_once_but_in_order(hooks: Sequence[HookSpec]) -> Iterator[tuple[HookSpec, ...]]:
    """One stage of all ``hooks``, but each ``in_order`` hook in a stage of its own."""
    together: list[HookSpec] = []
    for hook in hooks:
        if not hook.in_order:
            together.append(hook)
            continue
        if together:
            yield tuple(together)
            together = []
        yield (hook,)
    if together:
        yield tuple(together)


async def run_hooks(
    hooks: Sequence[HookSpec],
    data: dict[str, Any],
    combiner: Combiner,
    tracer: Tracer | None,
    subject: str | None,
    run: RunHook,
) -> HookOutcome:
    """Run the hooks that matched an event, with ``run``, and combine their answers.

    ``data`` is the event JSON's fields; its input field is rewritten as the hooks
    rewrite the input.
    """
    field = combiner.spec.input_field
    guards = [hook for hook in hooks if hook.phase == "guard"]
    judged: Mapping[str, Any] | None = None
    for stage in stages(combiner.spec, hooks):
        if combiner.modified and field is not None:
            data[field] = combiner.input
        if stage[0].phase == "guard":
            judged = combiner.input
        if await _together(stage, data, combiner, tracer, subject, run):
            return combiner.outcome()
    if guards and combiner.modified and combiner.input != judged:
        # Guards judge the final input: a hook after them rewrote it, so they judge
        # again (a guard cannot rewrite it, so once is enough).
        if field is not None:
            data[field] = combiner.input
        await _together(guards, data, combiner, tracer, subject, run, note=_RERUN)
    return combiner.outcome()


async def _together(
    stage: Sequence[HookSpec],
    data: Mapping[str, Any],
    combiner: Combiner,
    tracer: Tracer | None,
    subject: str | None,
    run: RunHook,
    note: str | None = None,
) -> bool:
    """Run a stage's hooks at once; fold their records in config order.

    Returns whether a record ended the chain; the hooks after the first record that
    would end it are cancelled.
    """
    if len(stage) == 1:
        record = await run(stage[0], data, tracer, subject, None)
        return combiner.add(attrs.evolve(record, note=note) if note else record)
    try:
        body: bytes | None = event_json(data)
    except (TypeError, ValueError):  # each hook records the error itself
        body = None
    records: list[HookRecord | None] = [None] * len(stage)
    scopes = [anyio.CancelScope() for _ in stage]
    folded = 0  # how many records, from the first, the combiner took
    ended = False

    async def run_one(i: int, hook: HookSpec) -> None:
        nonlocal folded, ended
        with scopes[i]:
            record = await run(hook, data, tracer, subject, body)
            records[i] = attrs.evolve(record, note=note) if note else record
        done = records[i]
        if done is None or ended:
            return
        if combiner.ends(done):  # nothing after it can count: stop it
            for scope in scopes[i + 1 :]:
                scope.cancel()
        while folded < len(records) and (next_record := records[folded]) is not None:
            folded += 1
            if combiner.add(next_record):
                ended = True
                for scope in scopes:
                    scope.cancel()
                return

    async with anyio.create_task_group() as group:
        for i, hook in enumerate(stage):
            group.start_soon(run_one, i, hook)
    return ended


_PHASE_RANK: Final = {"transform": 0, "guard": 1, None: 2}


def in_phase_order(hooks: Iterable[HookSpec]) -> tuple[HookSpec, ...]:
    """Transforms first, then guards, then the other hooks, each in config order."""
    return tuple(sorted(hooks, key=lambda hook: _PHASE_RANK[hook.phase]))


def subject_of(spec: EventSpec, payload: Mapping[str, Any]) -> str | None:
    """What the event's matchers are matched against: its matcher field, as a string."""
    field = spec.matcher_field
    raw = payload.get(field) if field else None
    return raw if raw is None or type(raw) is str else str(raw)


def claude_subject_of(spec: EventSpec, payload: Mapping[str, Any]) -> str | None:
    """What a Claude Code source's matchers are matched against (``agent_type``, ...)."""
    field = spec.claude.matcher_field
    raw = payload.get(field) if field else None
    return raw if raw is None or type(raw) is str else str(raw)


def _qualified(subject: str | None, payload: Mapping[str, Any] | None) -> str | None:
    """``identifier/apiName`` of a tool call whose payload has a ``tool_identifier``."""
    identifier = payload.get("tool_identifier") if payload else None
    if subject is None or type(identifier) is not str or not identifier:
        return None
    return qualified_tool_name(identifier, subject)


def matching_hooks(
    hooks: Sequence[HookSpec], subject: str | None, payload: Mapping[str, Any] | None = None
) -> tuple[HookSpec, ...]:
    """The hooks whose matcher matches ``subject``, in order.

    A hook of a Claude Code source matches the field Claude Code reads (FileChanged's
    file name, SubagentStart's ``agent_type``) and its ``if`` rule, read from ``payload``.
    A tool call whose payload names its toolset or MCP server (``tool_identifier``) also
    matches the other hooks by lobehub's ``identifier/apiName``.
    """
    qualified = _qualified(subject, payload)
    if len(hooks) == 1 and not hooks[0].claude_code:  # the most common case
        hook = hooks[0]
        if hook.matches(subject) or (qualified is not None and hook.matches(qualified)):
            return tuple(hooks)
        return ()
    found = []
    for hook in hooks:
        if not hook.claude_code:
            if hook.matches(subject) or (qualified is not None and hook.matches(qualified)):
                found.append(hook)
            continue
        fields = payload or {}
        if hook.matches(claude_subject_of(EVENTS[hook.event], fields)) and hook.admits(fields):
            found.append(hook)
    return tuple(found)


Only: TypeAlias = Callable[[HookSpec], bool] | None
"""Which of an event's matching hooks run (``HookRegistry.fire_only``); None: all."""


def selected(hooks: tuple[HookSpec, ...], payload: Mapping[str, Any]) -> tuple[HookSpec, ...]:
    """The hooks that also select the payload (see ``HookSpec.selects``), in order."""
    return tuple(hook for hook in hooks if not hook.filters or hook.selects(payload))
