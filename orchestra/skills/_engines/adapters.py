"""Adapters that fire a ``HookRegistry`` at the moments of orchestra's engines.

- ``registry.as_task_hooks()``: a ``TaskHooks`` firing ``TaskCreated`` before a task's
  attempts (a deny fails the task) and ``TaskCompleted`` when it ended, with its state
  and error; and the DAG's own events (``RunStart``, ``AttemptStart``, ``AttemptEnd``,
  ``AttemptRetry``, ``EdgeSelected``, ``RunEnd``), which the graph-executor and Arc
  files' hooks fire at too.
- ``registry.as_subagent_hooks()`` is in ``subagent_adapter``.

An adapter only overrides the moments whose events have hooks, so the engines skip the
others at no cost. The tool events (``@registry.guard("Tool")``) are in ``_engines.guard``.
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Mapping
from typing import TYPE_CHECKING, Any, Final

from orchestra._decisions import Fail, GiveOutput, Replace, Skip
from orchestra._errors import HookBlocked, HookError
from orchestra._hooks import (
    RunContext,
    TaskHookContext,
    TaskHooks,
)
from orchestra._reporting import report_hook_error
from orchestra._tool_flow import blocked_reason, error_fields
from orchestra.skills._engines.dag_payloads import (
    end_payload,
    run_end_payload,
    run_payload,
    safe_serialize,
    task_payload,
)
from orchestra.skills._engines.run_gate import RunGates, is_run_gate, not_run_gate
from orchestra.skills._firing.chain import Only
from orchestra.skills._firing.outcome import CriticalHookError
from orchestra.skills._sources.arc.hooks import ArcHook, GateBlocked, StageSkipped

if TYPE_CHECKING:
    from orchestra.skills._firing.outcome import HookOutcome, HookRecord
    from orchestra.skills._firing.registry import HookRegistry

DAG_EVENTS: Final = (
    "RunStart",
    "AttemptStart",
    "AttemptEnd",
    "AttemptRetry",
    "EdgeSelected",
    "RunEnd",
)
"""The DAG's own events, fired by ``registry.as_task_hooks()``."""

__all__ = [
    "DAG_EVENTS",
    "RegistryTaskHooks",
    "fire_reported",
    "task_hooks",
    "trim_moments",
    "yaml_hook_error",
]


def trim_moments(cls: type, base: type, keep: Mapping[str, bool]) -> type:
    """A subclass of ``cls`` with the moments not in ``keep`` reset to ``base``'s."""
    reset = {moment: getattr(base, moment) for moment, wanted in keep.items() if not wanted}
    return type(cls.__name__, (cls,), reset) if reset else cls


class RegistryTaskHooks(TaskHooks):
    """``TaskHooks`` that fire a registry's DAG events at the run's own moments.

    ``TaskCreated`` fires before every attempt of a task (``attempt`` in the event); a
    deny or block fails the task with the hook's reason. ``TaskCompleted`` fires once
    per task when it reached its terminal state, whatever it is (``state``:
    ``succeeded``, ``failed``, ``skipped``, ``upstream_failed`` or ``cancelled``, also
    for tasks that never started), with the last error (``error``, ``error_type``) or
    a ``TaskCreated`` deny's reason. The hooks' messages (``additionalContext``) are
    passed on with ``ctx.add_message``: later hooks see them, a task run by an agent gets
    them after its text, and ``RunResult.messages`` keeps them.

    The DAG's own events (their fields: ``orchestra.skills._engines.dag_payloads``):

    - ``RunStart`` before any task; a block ends the run before it starts (``Fail``).
    - ``AttemptRetry`` before each attempt after the first, with the last error.
    - ``AttemptStart`` before each attempt, with the inputs: a block fails the task, a
      skip skips it, a ``modified_input`` merges into its keyword arguments (the keys
      whose values the hooks changed or added), an ``output`` is its result: the body
      does not run and the task SUCCEEDED.
    - ``AttemptEnd`` after each attempt, with the output (``state: succeeded``; an
      ``output`` replaces the task's) or the error (``state: failed``). An Arc verify
      gate's block (``GateBlocked``) fails the task with its message: the object is then
      fail-closed and raises ``HookBlocked``, the task's reason.
    - ``EdgeSelected`` after a branch task (``@dag.task(branch=True)``) chose, with the
      ids it chose (``selected``): an ``output`` (one id or a list) redirects the choice,
      a block follows no edge.
    - ``RunEnd`` when the run ended, ``state`` ``succeeded`` or ``failed``. An Arc
      ``run_complete`` gate runs in the last task's ``after_execute`` instead, where its
      block fails that task (``run_gate``); only when that task never ran its body is
      it fired here, its block a hook error (``after_run`` cannot fail a run).

    Every hook error (a command that exits 1, a timeout, bad output) is logged once at
    WARNING with the hook's ``file:line`` and listed on ``RunResult.hook_errors``.

    Args:
        registry: the hooks to fire.
    """

    def __init__(self, registry: HookRegistry) -> None:
        self.registry = registry
        self.budgets = registry.budgets  # the files' budget: keys, opened by the run
        # (run id, task id) -> the reason a TaskCreated hook denied the task, for its
        # TaskCompleted event
        self._denied: dict[tuple[str, str], str] = {}
        self._dags: dict[str, str] = {}  # run id -> the DAG's name, for the task events
        gates = any(is_run_gate(hook) for hook in registry.hooks)
        self._gates = RunGates(self._fire_gate) if gates else None  # Arc's run_complete gate

    def _fire_gate(self, payload: dict[str, Any], task_id: str) -> Awaitable[HookOutcome]:
        """``RunEnd`` for the run gate's hooks only, in a task's ``after_execute``."""
        return fire_reported(
            self.registry, "RunEnd", payload, "after_execute", task_id, is_run_gate
        )

    @staticmethod
    def payload(ctx: TaskHookContext) -> dict[str, Any]:
        """The event fields for a task: ``task_id``, ``task_subject``, ``run_id``, ..."""
        return {
            "task_id": ctx.task.id,
            "task_subject": ctx.task.id,  # the reference's title of a task: a DAG task's id
            "run_id": ctx.run_id,
            "attempt": ctx.attempt,
            "executor": ctx.executor,
            "metadata": dict(ctx.task.metadata),
        }

    def _listens(self, event: str, ctx: TaskHookContext, state: str | None = None) -> bool:
        """Whether a hook of ``event`` matches the task: its payload is built only then."""
        kind = ctx.task.metadata.get("type")
        probe = {"task_id": ctx.task.id, "type": kind, "state": state}
        return bool(self.registry.hooks_for(event, probe))

    def _fire(
        self, event: str, payload: Mapping[str, Any], moment: str, subject: str | None
    ) -> Awaitable[HookOutcome]:
        return fire_reported(self.registry, event, payload, moment, subject)

    async def before_run(self, ctx: RunContext) -> Fail | None:
        """Fire ``RunStart``; a block answers ``Fail``: no task starts."""
        self._dags[ctx.run_id] = ctx.dag
        if self._gates is not None:
            self._gates.start(ctx)
        if not self.registry.has_hooks("RunStart"):
            return None
        outcome = await self._fire("RunStart", run_payload(ctx), "before_run", ctx.dag)
        return Fail(blocked_reason("RunStart", outcome)) if outcome.blocked else None

    async def before_execute(self, ctx: TaskHookContext) -> Fail | Skip | Replace | None:
        """Fire ``TaskCreated``, ``AttemptRetry`` and ``AttemptStart`` before each attempt."""
        registry = self.registry
        tid = ctx.task.id
        if registry.has_hooks("TaskCreated"):
            outcome = await self._fire("TaskCreated", self.payload(ctx), "before_execute", tid)
            for message in outcome.messages:
                ctx.add_message(message)
            if outcome.blocked:
                reason = blocked_reason("TaskCreated", outcome)
                if registry.has_hooks("TaskCompleted"):
                    self._denied[(ctx.run_id, tid)] = reason
                return Fail(reason)
        dag = self._dags.get(ctx.run_id)
        if ctx.attempt > 1 and ctx.errors and self._listens("AttemptRetry", ctx):
            retry = {**task_payload(ctx, dag), **error_fields(ctx.errors[-1])}
            await self._fire("AttemptRetry", retry, "before_execute", tid)
        if not self._listens("AttemptStart", ctx):
            return None
        sent = safe_serialize(ctx.inputs)
        outcome = await self._fire(
            "AttemptStart", {**task_payload(ctx, dag), "inputs": sent}, "before_execute", tid
        )
        for message in outcome.messages:
            ctx.add_message(message)
        return _start_decision(ctx, outcome, sent)

    async def after_execute(self, ctx: TaskHookContext, result: Any) -> Replace | None:
        """Fire ``AttemptEnd`` (``succeeded``), then ``EdgeSelected`` for a branch task."""
        dag = self._dags.get(ctx.run_id)
        tid = ctx.task.id
        replaced: Replace | None = None
        if self._listens("AttemptEnd", ctx, "succeeded"):
            payload = end_payload(ctx, dag, result, None)
            outcome = await self._fire("AttemptEnd", payload, "after_execute", tid)
            if type(outcome.output) is GateBlocked:  # fails the task: see task_hooks
                blocked = outcome.output.message
                raise HookBlocked(blocked, hook=outcome.decided_by or "", moment="after_execute")
            if outcome.output is not None:
                replaced = Replace(outcome.output)
                result = outcome.output
        if ctx.task.branch and self.registry.has_hooks("EdgeSelected"):
            many = isinstance(result, list | tuple | set | frozenset)
            chosen = [result] if isinstance(result, str) else list(result) if many else []
            payload = {
                **task_payload(ctx, dag),
                "selected": [str(c) for c in chosen],
                "edge_from": tid,
                "edge_to": str(chosen[0]) if chosen else None,
            }
            outcome = await self._fire("EdgeSelected", payload, "after_execute", tid)
            if outcome.blocked:  # follow no edge: every direct downstream task is SKIPPED
                replaced = Replace([])
            elif outcome.output is not None:
                replaced = Replace(outcome.output)
        if self._gates is not None:  # the run's last task: Arc's run_complete gate
            await self._gates.settle(ctx)
        return replaced

    async def on_failure(self, ctx: TaskHookContext, error: BaseException) -> None:
        """Fire ``AttemptEnd`` with ``state: "failed"`` and the error."""
        if not self._listens("AttemptEnd", ctx, "failed"):
            return
        payload = end_payload(ctx, self._dags.get(ctx.run_id), None, error)
        await self._fire("AttemptEnd", payload, "on_failure", ctx.task.id)

    async def on_end(self, ctx: TaskHookContext, state: enum.Enum) -> None:
        """Fire ``TaskCompleted`` with the task's terminal ``state`` and its last error."""
        if self._gates is not None:
            self._gates.ended(ctx, state)
            if not self.registry.has_hooks("TaskCompleted"):
                return
        denied = self._denied.pop((ctx.run_id, ctx.task.id), None)
        if denied is not None:
            fields = {"error": denied, "error_type": "TaskFailed"}
        else:
            fields = error_fields(ctx.errors[-1] if ctx.errors else None)
        payload = {**self.payload(ctx), "state": state.value, **fields}
        outcome = await self._fire("TaskCompleted", payload, "on_end", ctx.task.id)
        for message in outcome.messages:
            ctx.add_message(message)

    async def after_run(self, ctx: RunContext, result: Any) -> None:
        """Fire ``RunEnd`` with the run's state (``succeeded`` or ``failed``)."""
        self._dags.pop(ctx.run_id, None)
        judged = self._gates is not None and self._gates.finish(ctx.run_id)
        if self.registry.has_hooks("RunEnd"):
            payload = run_end_payload(ctx, result.states, result.ok)
            only = not_run_gate if judged else None  # the gate ran in the last task's hooks
            outcome = await fire_reported(
                self.registry, "RunEnd", payload, "after_run", ctx.dag, only
            )
            if type(outcome.output) is GateBlocked:  # after_run cannot fail the run: see run_gate
                blocked = outcome.output.message
                by = outcome.decided_by or ""
                report_hook_error(HookError(blocked, hook=by, moment="after_run", subject=ctx.dag))


def _start_decision(
    ctx: TaskHookContext, outcome: HookOutcome, sent: Mapping[str, Any]
) -> Fail | Skip | Replace | None:
    """What ``AttemptStart``'s outcome means for the attempt."""
    if outcome.blocked:
        return Fail(blocked_reason("AttemptStart", outcome))
    if outcome.skip:
        return Skip(outcome.reason or f"skipped by an AttemptStart hook at {outcome.decided_by}")
    if type(outcome.output) is StageSkipped:  # Arc's skip: that stage only, no output
        ctx.add_message(f"stage skipped: {outcome.output.reason}")
        return Replace(GiveOutput(None))
    if outcome.output is not None:
        return Replace(GiveOutput(outcome.output))
    modified = outcome.modified_input
    if modified is None:
        return None
    changed = {k: v for k, v in modified.items() if k not in sent or sent[k] != v}
    return Replace({**ctx.inputs, **changed}) if changed else None


async def fire_reported(
    registry: HookRegistry,
    event: str,
    payload: Mapping[str, Any],
    moment: str,
    subject: str | None,
    only: Only = None,
) -> HookOutcome:
    """Fire ``event``; report each hook error of it (logged once, on the run's result).

    A critical hook's failure (``CriticalHookError``) is reported too, as the
    ``CriticalHookError`` itself, and the outcome of the event's other hooks is returned:
    their answers stand (a sibling's deny still denies). Raising it on would hand it to
    the engine's hook isolation, which turns an exception into no opinion: a deny lost
    because another hook failed.
    """
    try:
        outcome = await registry.fire_only(event, payload, only)
    except CriticalHookError as exc:
        for record in exc.outcome.errors:
            if record.hook.on_error != "raise":
                report_hook_error(yaml_hook_error(record, moment, subject))
        for critical in (exc, *exc.others):
            report_hook_error(critical)
        return exc.outcome
    if outcome.records:
        for record in outcome.errors:
            report_hook_error(yaml_hook_error(record, moment, subject))
    return outcome


def yaml_hook_error(record: HookRecord, moment: str, subject: str | None) -> HookError:
    """A YAML hook's error as a ``HookError``, named by where the hook was written."""
    hook = record.hook
    message = f"{hook.source}: {hook.event} {hook.type} hook: {record.error}"
    if record.note:
        message += f"; {record.note}"
    return HookError(message, hook=hook.source, moment=moment, subject=subject)


def task_hooks(registry: HookRegistry) -> TaskHooks:
    """The ``TaskHooks`` of a registry, overriding only the moments with hooks.

    A registry without the DAG's events adds nothing per task: the scheduler skips the
    moments this class does not override.
    """
    has = registry.has_hooks
    dag_events = any(has(event) for event in DAG_EVENTS)
    gates = any(is_run_gate(hook) for hook in registry.hooks)
    keep = {
        "before_run": dag_events,
        "before_execute": has("TaskCreated") or has("AttemptStart") or has("AttemptRetry"),
        "after_execute": has("AttemptEnd") or has("EdgeSelected") or gates,
        "on_failure": has("AttemptEnd"),
        "on_end": has("TaskCompleted") or gates,
        "after_run": dag_events,
    }
    cls: type[RegistryTaskHooks] = trim_moments(RegistryTaskHooks, TaskHooks, keep)
    if any(isinstance(hook, ArcHook) and hook.gate for hook in registry.hooks):
        # an Arc verify gate (blocking stage_complete) raises HookBlocked to fail the task
        cls = type(cls.__name__, (cls,), {"fail_closed": True})
    return cls(registry)
