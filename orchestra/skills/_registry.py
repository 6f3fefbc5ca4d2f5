"""``HookRegistry``: fires loaded hooks at events and combines their answers.

Firing one event:

1. The hooks of the event were sorted out at construction (one tuple per event), so an
   event with no hooks returns a shared empty ``HookOutcome`` at once: no subprocess, no
   task, no allocation.
2. The hooks whose matcher fully matches the payload's matcher field (the catalog says
   which: ``tool_name`` for tool events, ``source`` for ``SessionStart``, ...) run in
   config order. Each sees the event JSON (the payload's fields plus
   ``hook_event_name``, ``session_id``, ``cwd``, ``timestamp``) with the input as
   modified by the hooks before it.
3. The first deny or block ends the chain. Otherwise ``deny > ask > allow``: the outcome
   is ``ask`` if any hook asked, ``allow`` if any allowed, else None (no opinion).
   Messages accumulate in config order; a ``continue: false`` becomes a stop request.
4. A hook error (crash, timeout, bad output) follows its ``on_error``: ``block`` ends
   the chain blocked, ``continue`` counts the hook as no opinion.

Events whose hooks can neither block nor modify (``PostToolUse``, ``SessionStart``, ...)
run their hooks concurrently; their results are still combined in config order. On such
events a hook's deny or block changes nothing but its reason, which is added to the
messages, and a ``modified_input`` is ignored; both are noted in the hook's record.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import anyio
import attrs
from opentelemetry.trace import Span, Tracer

from orchestra._errors import ConfigError, did_you_mean
from orchestra._hooks import SubagentHooks, TaskHooks
from orchestra.skills._adapters import (
    AskCallback,
    Guard,
    OutcomeCallback,
    subagent_hooks,
    task_hooks,
)
from orchestra.skills._catalog import EVENTS, EventSpec
from orchestra.skills._fixed_hooks import AgentHook
from orchestra.skills._hook import HookCall, HookSpec, event_data, event_json
from orchestra.skills._judge import Judge, supports_agent
from orchestra.skills._load import load_hooks
from orchestra.skills._outcome import EMPTY, Combiner, HookOutcome, HookRecord
from orchestra.skills._result import HookRunError
from orchestra.tracing import capture_content, get_tracer, traceparent
from orchestra.tracing._engine import hook_span, record_decision, record_error
from orchestra.tracing.names import ATTR_HOOK_OUTPUT

__all__ = ["HookRegistry", "load"]

# Extra seconds a runner gets past a hook's own timeout before it is cancelled from here
# (the runners enforce the timeout themselves; this only guards against a runner bug).
_RUNNER_GRACE: Final = 5.0


class HookRegistry:
    """Loaded hooks, ready to fire at events.

    Build one with ``load(...)``; an empty ``HookRegistry()`` fires nothing.

    Args:
        hooks: the hooks, in the order they run.
        project_dir: the project folder: the hooks' working directory, exported as
            ``ORCHESTRA_PROJECT_DIR`` and the default ``cwd`` of the event JSON
            (default: the current directory).
        session_id: the ``session_id`` of the event JSON when the payload has none
            (default: a new random id).
        judge: what prompt hooks with a ``model`` (and Claude Code's prompt and agent
            hooks) ask; see ``OpenAICompatibleJudge``.
        notes: what the load ignored on purpose (see ``load``).

    Attributes:
        hooks: every hook, in the order they run.
        project_dir: the project folder.
        session_id: the default session id.
        judge: the judge, or None.
        notes: what the load ignored on purpose, one line each (``file:line: ...``).
    """

    def __init__(
        self,
        hooks: Iterable[HookSpec] = (),
        *,
        project_dir: str | os.PathLike[str] | None = None,
        session_id: str | None = None,
        judge: Judge | None = None,
        notes: Sequence[str] = (),
    ) -> None:
        self.hooks: tuple[HookSpec, ...] = tuple(hooks)
        self.judge = judge
        self.notes: tuple[str, ...] = tuple(notes)
        self._ran_once: set[int] = set()  # ids of the `once` hooks that ran
        if judge is not None and not supports_agent(judge):
            for hook in self.hooks:
                if isinstance(hook, AgentHook):
                    raise ConfigError(
                        f"{hook.source}: agent hook: the judge {judge!r} takes one turn; "
                        "agent hooks need one with supports_agent = True",
                        file=hook.file,
                        line=hook.line,
                        field="type",
                    )
        self.project_dir = os.path.abspath(project_dir if project_dir is not None else os.curdir)
        self.session_id = session_id or str(uuid.uuid4())
        self._by_event: dict[str, tuple[HookSpec, ...]] = {
            name: tuple(hook for hook in self.hooks if hook.event == name) for name in EVENTS
        }

    def __repr__(self) -> str:
        return f"<HookRegistry {len(self.hooks)} hooks>"

    def has_hooks(self, event: str) -> bool:
        """Whether any hook is registered for ``event`` (whatever its matcher)."""
        return bool(self._by_event.get(event))

    def hooks_for(
        self, event: str, payload: Mapping[str, Any] | None = None
    ) -> tuple[HookSpec, ...]:
        """The hooks that ``fire(event, payload)`` would run, in order.

        Raises:
            ValueError: for an event the catalog does not know.
        """
        hooks = self._hooks(event)
        if not hooks:
            return ()
        return _matching(hooks, _subject(EVENTS[event], payload or {}))

    def _hooks(self, event: str) -> tuple[HookSpec, ...]:
        try:
            return self._by_event[event]
        except KeyError:
            raise _unknown_event(event) from None

    def as_task_hooks(self) -> TaskHooks:
        """``TaskHooks`` firing ``TaskCreated`` and ``TaskCompleted`` (see ``RegistryTaskHooks``).

        Pass it to ``orchestra.run(dag, hooks=[...])``. Moments whose events have no hooks
        are not overridden, so they cost the scheduler nothing.
        """
        return task_hooks(self)

    def as_subagent_hooks(self) -> SubagentHooks:
        """``SubagentHooks`` firing ``SubagentStart`` and ``SubagentStop``.

        Pass it to ``Dispatcher(agents, hooks=[...])``; a ``SubagentStart`` deny fails the
        dispatch with the hook's reason (see ``RegistrySubagentHooks``).
        """
        return subagent_hooks(self)

    def guard(
        self,
        tool: str,
        *,
        ask: AskCallback | None = None,
        on_outcome: OutcomeCallback | None = None,
    ) -> Guard:
        """Decorate a tool function (``def`` or ``async def``) with the tool events.

        A guarded ``async def`` tool is awaited as before. A guarded ``def`` tool stays
        callable from sync code (its events fire in a private event loop and the tool
        runs in a worker thread); called on an event loop it returns an awaitable. Each call
        fires ``PreToolUse`` with ``tool_name`` and ``tool_input`` (the call's arguments
        by name): a deny or block raises ``ToolDenied`` with the reason, a
        ``modified_input`` is what the tool gets. Then ``PostToolUse`` with
        ``tool_response``, or ``PostToolUseFailure`` with ``error`` before the tool's
        exception propagates.

        Examples:
            >>> registry = HookRegistry()
            >>> @registry.guard("Bash")
            ... def bash(command: str) -> str:
            ...     return command

        Args:
            tool: the tool's name, matched by the hooks' matchers.
            ask: called as ``ask(tool, tool_input, reason)`` when the hooks answer
                ``ask``; a true answer lets the call go on. Without it, ``ask`` is
                refused (``ToolDenied``): there is nobody to ask.
            on_outcome: called as ``on_outcome(event, outcome)`` (``def`` or ``async
                def``) after each of the call's events that ran hooks, e.g. to pass
                the outcome's ``messages`` or ``stop`` request on to the agent.
        """
        return Guard(self, tool, ask, on_outcome)

    async def fire(self, event: str, payload: Mapping[str, Any] | None = None) -> HookOutcome:
        """Run the hooks of ``event`` that match ``payload`` and combine their answers.

        Args:
            event: one of the events of the catalog, e.g. ``"PreToolUse"``.
            payload: the event's fields (``tool_name``, ``tool_input``, ...); they go to
                the hooks as JSON with ``hook_event_name``, ``session_id``, ``cwd`` and
                ``timestamp`` added.

        Returns:
            The combined outcome; hook errors are in it (``records``), never raised.

        Raises:
            ValueError: for an event the catalog does not know.
        """
        try:
            hooks = self._by_event[event]
        except KeyError:
            raise _unknown_event(event) from None
        if not hooks:
            return EMPTY
        return await self._fire(EVENTS[event], hooks, payload or {})

    async def _fire(
        self, spec: EventSpec, hooks: Sequence[HookSpec], payload: Mapping[str, Any]
    ) -> HookOutcome:
        subject = _subject(spec, payload)
        matching = _matching(hooks, subject)
        if any(hook.once for hook in matching):
            matching = tuple(h for h in matching if not (h.once and id(h) in self._ran_once))
            self._ran_once.update(id(h) for h in matching if h.once)
        if not matching:
            return EMPTY
        data = event_data(spec.name, payload, self.session_id, self.project_dir)
        field = spec.input_field
        current = payload.get(field) if field else None
        combiner = Combiner(spec, current if isinstance(current, Mapping) else None)
        tracer = get_tracer()
        if spec.can_block or spec.can_modify or len(matching) == 1:
            for hook in matching:
                if combiner.modified and field is not None:
                    data[field] = combiner.input
                if combiner.add(await self._run(hook, data, tracer, subject)):
                    break
        else:
            records: list[HookRecord | None] = [None] * len(matching)
            try:
                body: bytes | None = event_json(data)
            except (TypeError, ValueError):  # each hook records the error itself
                body = None

            async def run(i: int, hook: HookSpec) -> None:
                records[i] = await self._run(hook, data, tracer, subject, body)

            async with anyio.create_task_group() as group:
                for i, hook in enumerate(matching):
                    group.start_soon(run, i, hook)
            for record in records:
                assert record is not None
                combiner.add(record)
        return combiner.outcome()

    async def _run(
        self,
        hook: HookSpec,
        data: Mapping[str, Any],
        tracer: Tracer | None,
        subject: str | None,
        body: bytes | None = None,
    ) -> HookRecord:
        if tracer is None:
            call = HookCall(hook.event, data, self.project_dir, body, self.judge)
            return _background(await _attempt(hook, call))
        with hook_span(
            tracer,
            hook.event,
            hook_type=hook.type,
            name=f"{hook.type} {hook.source}",
            source=hook.source,
            subject=subject,
            matcher=hook.matcher,
        ) as span:
            tp = traceparent()
            if tp is not None:  # the hook's own span, for hooks that read only stdin
                data = {**data, "traceparent": tp}
                body = None
            call = HookCall(hook.event, data, self.project_dir, body, self.judge)
            record = await _attempt(hook, call)
            _trace(span, record)
        return _background(record)


def _background(record: HookRecord) -> HookRecord:
    """A background (``async``) hook's record: its answer may not block nor modify."""
    result = record.result
    if not record.hook.background or result is None:
        return record
    if result.decision is None and result.modified_input is None:
        return record
    return attrs.evolve(
        record,
        result=attrs.evolve(result, decision=None, modified_input=None),
        note="async hook: its decision and input change count as none",
    )


async def _attempt(hook: HookSpec, call: HookCall) -> HookRecord:
    """Run one hook under its timeout (plus a grace), recording its answer or error."""
    started = time.perf_counter()
    try:
        with anyio.fail_after(hook.timeout + _RUNNER_GRACE):
            result = await hook.run(call)
    except HookRunError as exc:
        return HookRecord(
            hook, None, str(exc), exc.exit_code, exc.stderr, time.perf_counter() - started
        )
    except TimeoutError:
        error = f"timed out after {hook.timeout:g} s"
        return HookRecord(hook, None, error, None, "", time.perf_counter() - started)
    except Exception as exc:  # a hook never crashes the caller; its error is recorded
        error = f"{type(exc).__name__}: {exc}"
        return HookRecord(hook, None, error, None, "", time.perf_counter() - started)
    return HookRecord(
        hook, result, None, result.exit_code, result.stderr, time.perf_counter() - started
    )


def _trace(span: Span, record: HookRecord) -> None:
    """Put a hook's answer (or error) and a command's exit code on its span."""
    attribute = record.hook.exit_code_attribute
    if record.exit_code is not None and attribute is not None:
        span.set_attribute(attribute, record.exit_code)
    if record.error is not None:
        record_error(span, HookRunError(record.error, exit_code=record.exit_code))
    elif record.result is not None and record.result.decision is not None:
        result = record.result
        record_decision(span, result.decision, record.hook.source, reason=result.reason)
    if record.result is not None and capture_content():  # content: only when opted in
        result = record.result
        output = {
            "decision": result.decision,
            "reason": result.reason,
            "modified_input": result.modified_input,
            "messages": list(result.messages),
            "stderr": record.stderr,
        }
        span.set_attribute(ATTR_HOOK_OUTPUT, json.dumps(output, default=str))


def _subject(spec: EventSpec, payload: Mapping[str, Any]) -> str | None:
    """What the event's matchers are matched against: its matcher field, as a string."""
    raw = payload.get(spec.matcher_field) if spec.matcher_field else None
    return None if raw is None else str(raw)


def _matching(hooks: Sequence[HookSpec], subject: str | None) -> tuple[HookSpec, ...]:
    return tuple(hook for hook in hooks if hook.matches(subject))


def _unknown_event(event: str) -> ValueError:
    return ValueError(f"unknown event {event!r}{did_you_mean(str(event), EVENTS)}")


def load(
    *paths: str | os.PathLike[str],
    project_dir: str | os.PathLike[str] | None = None,
    session_id: str | None = None,
    judge: Judge | None = None,
) -> HookRegistry:
    """Load hooks from config files, ``SKILL.md`` files and folders of skills.

    ``orchestra.yaml`` files are read in the order given (pass the global one before
    the project's), then skills (a folder contributes its ``orchestra.yaml`` and every
    ``SKILL.md`` below it); identical hooks are kept once.

    Args:
        *paths: files and folders to read.
        project_dir: the hooks' working directory (see ``HookRegistry``).
        session_id: the default ``session_id`` of the event JSON.
        judge: what prompt hooks with a ``model`` and Claude Code's prompt and agent
            hooks ask (any async callable; see ``OpenAICompatibleJudge``).

    Returns:
        A registry of every hook, in the order they run.

    Raises:
        ConfigError: every problem found, each naming file:line and the field path.
    """
    notes: list[str] = []
    hooks = load_hooks([Path(path) for path in paths], notes)
    return HookRegistry(
        hooks, project_dir=project_dir, session_id=session_id, judge=judge, notes=notes
    )
