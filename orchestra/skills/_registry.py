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

import datetime
import json
import math
import os
import re
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, Literal, TypeAlias, final

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
from orchestra.skills._config import HookSpec, load_hooks
from orchestra.skills._result import HookResult, HookRunError
from orchestra.tracing import (
    ATTR_HOOK_OUTPUT,
    ATTR_PROCESS_EXIT_CODE,
    capture_content,
    get_tracer,
    inject_env,
    inject_headers,
    traceparent,
)
from orchestra.tracing._spans import hook_span, record_decision, record_error

__all__ = ["HookDecision", "HookOutcome", "HookRecord", "HookRegistry", "load"]

HookDecision: TypeAlias = Literal["allow", "deny", "ask"]
"""The decision of a fired event."""

# Extra seconds a runner gets past a hook's own timeout before it is cancelled from here
# (the runners enforce the timeout themselves; this only guards against a runner bug).
_RUNNER_GRACE: Final = 5.0
_HEADER_VAR: Final = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")


@final
@attrs.frozen
class HookRecord:
    """What one hook did during a ``fire``: its result or error, and how long it took.

    Attributes:
        hook: the hook that ran.
        result: its result, or None if it failed.
        error: the hook error's message (``"exited 1"``, ``"timed out after 5 s"``, ...),
            or None if it gave a result.
        exit_code: the exit status of a command hook (for an error too, when known).
        stderr: what a command hook wrote on stderr.
        duration: seconds the hook took.
        note: how the answer counted, when not plainly: e.g. ``"error ignored
            (on_error: continue)"`` or ``"deny ignored: PostToolUse cannot block"``.
    """

    hook: HookSpec
    result: HookResult | None
    error: str | None
    exit_code: int | None
    stderr: str
    duration: float
    note: str | None = None


@final
@attrs.frozen
class HookOutcome:
    """The combined answer of the hooks of one fired event.

    Attributes:
        decision: ``"deny"`` (also for a block), ``"ask"``, ``"allow"``, or None when no
            hook gave an opinion.
        blocked: the chain ended in a deny or block: a ``deny``/``block`` decision, exit
            code 2, or a hook error under ``on_error: block``.
        reason: the reason given with the decision, if any.
        modified_input: the input as the hooks modified it (e.g. a tool's arguments), or
            None if no hook modified it (or the event was blocked).
        messages: the hooks' messages, in config order (``message``,
            ``additionalContext``, ``systemMessage``, prompt hooks' text).
        decided_by: where the hook that gave the decision was written, as ``file:line``.
        stop: a hook asked the agent to stop (Claude Code's ``continue: false``).
        stop_reason: the reason given with the first stop request.
        records: what each hook that ran did, in config order.
    """

    decision: HookDecision | None = None
    blocked: bool = False
    reason: str | None = None
    modified_input: Mapping[str, Any] | None = None
    messages: tuple[str, ...] = ()
    decided_by: str | None = None
    stop: bool = False
    stop_reason: str | None = None
    records: tuple[HookRecord, ...] = ()

    @property
    def errors(self) -> tuple[HookRecord, ...]:
        """The records of the hooks that failed (crashed, timed out, bad output)."""
        return tuple(record for record in self.records if record.error is not None)


_EMPTY: Final = HookOutcome()


@attrs.define
class _Combiner:
    """Folds hook results into an outcome, in config order."""

    spec: EventSpec
    input: Mapping[str, Any] | None
    modified: bool = False
    blocked_by: tuple[str | None, str] | None = None
    asked: tuple[str | None, str] | None = None
    allowed: tuple[str | None, str] | None = None
    messages: list[str] = attrs.field(factory=list)
    stop: bool = False
    stop_reason: str | None = None
    records: list[HookRecord] = attrs.field(factory=list)

    def add(self, record: HookRecord) -> bool:
        """Count one hook's record; return True when it ends the chain."""
        hook, result, spec = record.hook, record.result, self.spec
        if result is None:
            if hook.on_error == "block":
                self.blocked_by = (f"hook error: {record.error}", hook.source)
                self.records.append(attrs.evolve(record, note="error blocks (on_error: block)"))
                return True
            self.records.append(attrs.evolve(record, note="error ignored (on_error: continue)"))
            return False
        note: str | None = None
        self.messages.extend(result.messages)
        if result.stop and not self.stop:
            self.stop, self.stop_reason = True, result.stop_reason
        reason = result.reason.strip() if result.reason else None
        verdict = result.decision
        if verdict in ("deny", "block"):
            if spec.can_block:
                self.blocked_by = (reason or None, hook.source)
                self.records.append(record)
                return True
            note = f"{verdict} ignored: {spec.name} cannot block"
            if reason:
                self.messages.append(reason)
        elif verdict == "ask":
            if not spec.can_block:
                note = f"ask ignored: {spec.name} cannot block"
            elif self.asked is None:
                self.asked = (reason or None, hook.source)
        elif verdict == "allow" and self.allowed is None and spec.can_block:
            self.allowed = (reason or None, hook.source)
        if result.modified_input is not None:
            if spec.can_modify:
                self.input = dict(result.modified_input)
                self.modified = True
            else:
                note = (note + "; " if note else "") + (
                    f"modified_input ignored: {spec.name} cannot modify input"
                )
        self.records.append(attrs.evolve(record, note=note) if note else record)
        return False

    def outcome(self) -> HookOutcome:
        decision: HookDecision | None = None
        reason = source = None
        if self.blocked_by is not None:
            decision, (reason, source) = "deny", self.blocked_by
        elif self.asked is not None:
            decision, (reason, source) = "ask", self.asked
        elif self.allowed is not None:
            decision, (reason, source) = "allow", self.allowed
        return HookOutcome(
            decision=decision,
            blocked=self.blocked_by is not None,
            reason=reason,
            modified_input=self.input if self.modified and self.blocked_by is None else None,
            messages=tuple(self.messages),
            decided_by=source,
            stop=self.stop,
            stop_reason=self.stop_reason,
            records=tuple(self.records),
        )


def _json_default(value: Any) -> Any:
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", "replace")
    if isinstance(value, set | frozenset):
        return sorted(value, key=repr)
    if isinstance(value, Mapping):
        return dict(value)
    if attrs.has(type(value)):
        return attrs.asdict(value, recurse=False)
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return str(value)


def event_json(data: Mapping[str, Any]) -> bytes:
    """The event as JSON bytes, the way hooks get it (ASCII-only, any value stringified)."""
    return json.dumps(data, default=_json_default, ensure_ascii=True).encode("ascii")


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

    Attributes:
        hooks: every hook, in the order they run.
        project_dir: the project folder.
        session_id: the default session id.
    """

    def __init__(
        self,
        hooks: Iterable[HookSpec] = (),
        *,
        project_dir: str | os.PathLike[str] | None = None,
        session_id: str | None = None,
    ) -> None:
        self.hooks: tuple[HookSpec, ...] = tuple(hooks)
        unknown = [hook.event for hook in self.hooks if hook.event not in EVENTS]
        if unknown:
            raise ConfigError(f"unknown event {unknown[0]!r}")
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
        return _matching(EVENTS[event], hooks, payload or {}) if hooks else ()

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

        Example:
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
            event: one of the 20 events of the catalog, e.g. ``"PreToolUse"``.
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
            return _EMPTY
        return await self._fire(EVENTS[event], hooks, payload or {})

    async def _fire(
        self, spec: EventSpec, hooks: Sequence[HookSpec], payload: Mapping[str, Any]
    ) -> HookOutcome:
        matching = _matching(spec, hooks, payload)
        if not matching:
            return _EMPTY
        data: dict[str, Any] = {
            "session_id": self.session_id,
            "cwd": self.project_dir,
            "timestamp": datetime.datetime.now(datetime.UTC).isoformat(),
            **payload,
            "hook_event_name": spec.name,
        }
        field = spec.input_field
        current = payload.get(field) if field else None
        combiner = _Combiner(spec, current if isinstance(current, Mapping) else None)
        env = self._environment(spec.name, matching)
        tracer = get_tracer()
        raw = payload.get(spec.matcher_field) if spec.matcher_field else None
        subject = None if raw is None else str(raw)
        if spec.can_block or spec.can_modify or len(matching) == 1:
            for hook in matching:
                if combiner.modified and field is not None:
                    data[field] = combiner.input
                if combiner.add(await self._run(hook, data, env, tracer, subject)):
                    break
        else:
            records: list[HookRecord | None] = [None] * len(matching)
            try:
                body: bytes | None = event_json(data)
            except (TypeError, ValueError):  # each hook records the error itself
                body = None

            async def run(i: int, hook: HookSpec) -> None:
                records[i] = await self._run(hook, data, env, tracer, subject, body)

            async with anyio.create_task_group() as group:
                for i, hook in enumerate(matching):
                    group.start_soon(run, i, hook)
            for record in records:
                assert record is not None
                combiner.add(record)
        return combiner.outcome()

    def _environment(self, event: str, hooks: Sequence[HookSpec]) -> dict[str, str] | None:
        if not any(hook.type in ("command", "mcp_tool") for hook in hooks):
            return None
        env = dict(os.environ)
        env["ORCHESTRA_EVENT"] = event
        env["ORCHESTRA_PROJECT_DIR"] = self.project_dir
        return inject_env(env)

    async def _run(
        self,
        hook: HookSpec,
        data: Mapping[str, Any],
        env: Mapping[str, str] | None,
        tracer: Tracer | None,
        subject: str | None,
        body: bytes | None = None,
    ) -> HookRecord:
        if tracer is None:
            return await self._attempt(hook, data, env, body)
        with hook_span(
            tracer,
            hook.event,
            hook_type=hook.type,
            name=f"{hook.type} {hook.source}",
            source=hook.source,
            subject=subject,
            matcher=hook.matcher,
        ) as span:
            if env is not None:
                env = inject_env(env)  # TRACEPARENT: the hook's own span
            tp = traceparent()
            if tp is not None:  # and in the event JSON, for hooks that read only stdin
                data = {**data, "traceparent": tp}
                body = None
            record = await self._attempt(hook, data, env, body)
            _trace(span, record)
        return record

    async def _attempt(
        self,
        hook: HookSpec,
        data: Mapping[str, Any],
        env: Mapping[str, str] | None,
        body: bytes | None,
    ) -> HookRecord:
        started = time.perf_counter()
        try:
            with anyio.fail_after(hook.timeout + _RUNNER_GRACE):
                result = await self._call(hook, data, env, body)
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

    async def _call(
        self,
        hook: HookSpec,
        data: Mapping[str, Any],
        env: Mapping[str, str] | None,
        body: bytes | None,
    ) -> HookResult:
        if hook.type == "prompt":
            return HookResult(messages=(hook.prompt or "",))
        if hook.type == "permission":
            return HookResult(decision=hook.decision, reason=hook.reason)
        if body is None:
            body = event_json(data)
        if hook.type == "command":
            from orchestra.skills._command import run_command

            assert env is not None
            if hook.skill_dir is not None:
                env = {**env, "SKILL_DIR": hook.skill_dir}
            return await run_command(
                command=hook.command,
                args=hook.args,
                stdin=body,
                env=env,
                cwd=self.project_dir,
                timeout=hook.timeout,
                strict_output=hook.strict_output,
            )
        if hook.type == "http":
            try:
                from orchestra.skills._http import post_http
            except ImportError as exc:
                raise HookRunError(f"http hooks need the http extra: {exc}") from None
            return await post_http(
                url=hook.url or "",
                headers=inject_headers(_expand_headers(hook)),  # W3C traceparent
                body=body,
                timeout=hook.timeout,
                tls=hook.tls,
                strict_output=hook.strict_output,
            )
        try:
            from orchestra.skills._mcp import McpServer, call_mcp_tool
        except ImportError as exc:
            raise HookRunError(f"mcp_tool hooks need the mcp extra: {exc}") from None
        server = hook.server
        assert server is not None
        assert env is not None
        arguments = {**json.loads(body), **hook.arguments}
        return await call_mcp_tool(
            server=McpServer(
                command=server.command,
                args=server.args,  # type: ignore[arg-type]  # attrs converter typing
                env={
                    "ORCHESTRA_EVENT": env["ORCHESTRA_EVENT"],
                    "ORCHESTRA_PROJECT_DIR": self.project_dir,
                    **({"SKILL_DIR": hook.skill_dir} if hook.skill_dir else {}),
                    **dict(server.env),
                },
                cwd=server.cwd or self.project_dir,
            ),
            tool=hook.tool or "",
            arguments=arguments,
            timeout=hook.timeout,
            strict_output=hook.strict_output,
        )


def _trace(span: Span, record: HookRecord) -> None:
    """Put a hook's answer (or error) and a command's exit code on its span."""
    if record.exit_code is not None and record.hook.type == "command":
        span.set_attribute(ATTR_PROCESS_EXIT_CODE, record.exit_code)
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


def _expand_headers(hook: HookSpec) -> dict[str, str]:
    allowed = set(hook.allowed_env_vars)

    def value(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        if name not in allowed:  # validated at load; kept as a second fence
            raise HookRunError(f"header variable ${name} is not in allowed_env_vars")
        return os.environ.get(name, "")

    headers = {name: _HEADER_VAR.sub(value, text) for name, text in hook.headers}
    for name, text in headers.items():
        if "\r" in text or "\n" in text or "\0" in text:
            raise HookRunError(f"header {name} has a line break or NUL after expansion")
    return headers


def _matching(
    spec: EventSpec, hooks: Sequence[HookSpec], payload: Mapping[str, Any]
) -> tuple[HookSpec, ...]:
    field = spec.matcher_field
    raw = payload.get(field) if field is not None else None
    value = None if raw is None else str(raw)
    return tuple(
        hook
        for hook in hooks
        if hook.pattern is None or (value is not None and hook.pattern.fullmatch(value))
    )


def _unknown_event(event: str) -> ValueError:
    return ValueError(f"unknown event {event!r}{did_you_mean(str(event), EVENTS)}")


def load(
    *paths: str | os.PathLike[str],
    project_dir: str | os.PathLike[str] | None = None,
    session_id: str | None = None,
) -> HookRegistry:
    """Load hooks from config files, ``SKILL.md`` files and folders of skills.

    ``orchestra.yaml`` files are read in the order given (pass the global one before
    the project's), then skills (a folder contributes its ``orchestra.yaml`` and every
    ``SKILL.md`` below it); identical hooks are kept once.

    Args:
        *paths: files and folders to read.
        project_dir: the hooks' working directory (see ``HookRegistry``).
        session_id: the default ``session_id`` of the event JSON.

    Returns:
        A registry of every hook, in the order they run.

    Raises:
        ConfigError: every problem found, each naming file:line and the field path.
    """
    hooks = load_hooks([Path(path) for path in paths])
    return HookRegistry(hooks, project_dir=project_dir, session_id=session_id)
