"""``HookRegistry``: fires loaded hooks at events and combines their answers.

Firing one event:

1. The hooks of each event were sorted out at construction, so an event with no hooks
   returns a shared empty ``HookOutcome`` at once: no subprocess, task or allocation.
2. The hooks whose matcher matches the payload's matcher field (``tool_name`` for tool
   events, ``source`` for ``SessionStart``, ... as the catalog says) run in stages
   (``_firing.chain``): hooks that only judge run at once on the same input (guards, the hooks
   of an event that cannot modify its input, a Claude Code source's handlers), hooks
   that may rewrite it run in config order, each on the input as modified before it.
3. The answers are combined in config order whatever finishes first: the first deny or
   block decides (the hooks after it still running are cancelled); else ``deny > ask >
   allow``. Messages accumulate in config order; ``continue: false`` is a stop request.
4. A hook error follows its ``on_error``: ``block`` ends the chain blocked,
   ``continue`` counts the hook as no opinion.

On events that cannot block, a deny changes nothing but its reason, added to the
messages; on events that cannot modify, a ``modified_input`` is ignored (both noted).
"""

from __future__ import annotations

import functools
import os
import uuid
import warnings
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any, Final

import attrs
from opentelemetry.trace import Tracer

from orchestra._budget import Budget
from orchestra._hooks import SubagentHooks, TaskHooks
from orchestra.skills._engines.adapters import task_hooks
from orchestra.skills._engines.guard import AskCallback, Guard, OutcomeCallback
from orchestra.skills._engines.subagent_adapter import subagent_hooks
from orchestra.skills._firing.background import BackgroundHooks
from orchestra.skills._firing.call import attempt, traced_attempt
from orchestra.skills._firing.chain import (
    Only,
    combiner_for,
    firing_table,
    in_phase_order,
    matching_hooks,
    run_hooks,
    selected,
    subject_of,
)
from orchestra.skills._firing.merge import plain_outcome
from orchestra.skills._firing.outcome import EMPTY, HookOutcome, HookRecord
from orchestra.skills._firing.record import DEFAULT_RECORD_BYTES, EventRecorder, recorded
from orchestra.skills._firing.replay import ReplayChange, ReplayReport, replay
from orchestra.skills._hooks.fixed import refuse_agent_hooks
from orchestra.skills._hooks.judge import Judge
from orchestra.skills._hooks.spec import HookCall, HookSpec, event_data
from orchestra.skills._persistent.pool import HookProcesses
from orchestra.skills._persistent.waiters import ThreadGates
from orchestra.skills._processes.claude_env import env_file
from orchestra.skills._protocol.catalog import EVENTS, unknown_event
from orchestra.tracing._engine import last_tracer

__all__ = ["DEFAULT_MAX_PARALLEL_HOOKS", "HookRegistry"]

DEFAULT_MAX_PARALLEL_HOOKS: Final = 32
"""How many hook processes or requests a registry runs at once by default."""


class HookRegistry:
    """Loaded hooks, ready to fire at events.

    Build one with ``load(...)``; an empty ``HookRegistry()`` fires nothing.

    A registry with persistent hooks (``persistent: true``) keeps their processes
    running between events: whoever made the registry closes it, with
    ``async with registry as r:`` or ``await registry.aclose()`` (the scheduler and the
    dispatcher never close a registry they are handed). A registry garbage-collected
    with processes still running kills them and warns (``ResourceWarning``). After
    ``aclose()`` the registry can fire again: processes start anew, and hooks that
    were broken by repeated failures get a new chance.

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
        max_parallel_hooks: how many hook processes or requests (command, http and
            mcp_tool hooks) may run at once, over every ``fire`` of this registry; the
            rest wait for a slot (the hook's timeout starts once it has one).
        enforce: False puts every hook in audit mode (as ``enforce: false`` on each):
            they run, their decisions go to ``HookOutcome.audited``, and change nothing.
        record: a file to append each fired event to, as one JSON line (see
            ``replay``); None records nothing.
        record_max_bytes: the size at which the record file is rotated to ``PATH.1``.
        record_payload: keep each event's payload in the record (needed to replay it;
            it holds the tools' inputs: commands, file contents, prompts).
        budgets: each file's ``budget:``; it holds in the runs the registry guards.

    Attributes:
        hooks: every hook, in the order they run.
        project_dir: the project folder.
        session_id: the default session id.
        judge: the judge, or None.
        notes: what the load ignored on purpose, one line each (``file:line: ...``).
        max_parallel_hooks: the limit on hook processes or requests at once.

    Raises:
        ValueError: ``max_parallel_hooks`` is less than 1.
    """

    def __init__(
        self,
        hooks: Iterable[HookSpec] = (),
        *,
        project_dir: str | os.PathLike[str] | None = None,
        session_id: str | None = None,
        judge: Judge | None = None,
        notes: Sequence[str] = (),
        max_parallel_hooks: int = DEFAULT_MAX_PARALLEL_HOOKS,
        enforce: bool = True,
        record: str | os.PathLike[str] | None = None,
        record_max_bytes: int = DEFAULT_RECORD_BYTES,
        record_payload: bool = True,
        budgets: Iterable[Budget] = (),
    ) -> None:
        if max_parallel_hooks < 1:
            raise ValueError(f"max_parallel_hooks must be at least 1, got {max_parallel_hooks}")
        self.max_parallel_hooks = max_parallel_hooks
        self.hooks: tuple[HookSpec, ...] = tuple(
            hooks if enforce else (attrs.evolve(h, enforce=False) for h in hooks)
        )
        self._recorder = (
            EventRecorder(record, record_max_bytes, record_payload) if record is not None else None
        )
        self.judge = judge
        self.notes: tuple[str, ...] = tuple(notes)
        self.budgets: tuple[Budget, ...] = tuple(budgets)
        self._ran_once: set[int] = set()  # ids of the `once` hooks that ran
        refuse_agent_hooks(self.hooks, judge)
        self.project_dir = os.path.abspath(project_dir if project_dir is not None else os.curdir)
        self.session_id = session_id or str(uuid.uuid4())
        self._by_event: dict[str, tuple[HookSpec, ...]] = {
            name: in_phase_order(hook for hook in self.hooks if hook.event == name)
            for name in EVENTS
        }
        self._firing = firing_table(self._by_event)
        self._slots = ThreadGates(max_parallel_hooks)
        self._processes = HookProcesses()
        self._background = BackgroundHooks(max_parallel_hooks)

    def __repr__(self) -> str:
        return f"<HookRegistry {len(self.hooks)} hooks>"

    async def __aenter__(self) -> HookRegistry:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Stop the processes of persistent hooks (each gets EOF, then its group is killed).

        Events still waiting for one of them fail (``on_error`` applies). Never
        cancelled part-way; closing a registry with nothing running does nothing.
        """
        await self._processes.aclose()
        await self._background.aclose()

    @property
    def record_failures(self) -> int:
        """How many fired events ``record=`` could not keep (each logged; outcomes stand)."""
        return self._recorder.failures if self._recorder is not None else 0

    def env_file(self, session_id: str | None = None) -> str:
        """The ``CLAUDE_ENV_FILE`` of a session (default: the registry's ``session_id``).

        orchestra applies none of its ``export`` lines: source it before your agent's
        shell commands, as Claude Code does before each Bash command.
        """
        return env_file(session_id if session_id is not None else self.session_id)

    def __del__(self) -> None:
        background = getattr(self, "_background", None)  # __init__ may not have run
        if background is not None:
            background.kill()
        processes = getattr(self, "_processes", None)
        if processes is not None and len(processes):
            count = processes.kill()
            warnings.warn(
                f"{self!r} was not closed: {count} persistent hook process(es) killed; "
                "use 'async with registry:' or 'await registry.aclose()'",
                ResourceWarning,
                source=self,
                stacklevel=2,
            )

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
        payload = payload or {}
        return selected(matching_hooks(hooks, subject_of(EVENTS[event], payload), payload), payload)

    def _hooks(self, event: str) -> tuple[HookSpec, ...]:
        try:
            return self._by_event[event]
        except KeyError:
            raise unknown_event(event) from None

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

        With ``record=``, the event and its outcome are then appended to the record
        file (also when no hook matched).

        Args:
            event: one of the events of the catalog, e.g. ``"PreToolUse"``.
            payload: the event's fields (``tool_name``, ``tool_input``, ...); they go to
                the hooks as JSON with ``hook_event_name``, ``session_id``, ``cwd`` and
                ``timestamp`` added.

        Returns:
            The combined outcome; hook errors are in it (``records``), not raised.

        Raises:
            ValueError: for an event the catalog does not know.
            CriticalHookError: a hook with ``on_error: raise`` failed; raised once every
                other hook of the event ran, with their outcome on it.
        """
        return await self.fire_only(event, payload, None)

    async def replay(
        self,
        path: str | os.PathLike[str],
        on_change: Callable[[ReplayChange], Awaitable[None] | None] | None = None,
    ) -> ReplayReport:
        """Fire every recorded event of ``path`` (see ``record=``) through these hooks.

        The hooks run for real. Every line is checked before any hook runs, and the
        file is read a line at a time (bounded memory). ``on_change`` (``def`` or
        ``async def``) is called with each change as it is found.

        Returns:
            The events replayed and those whose decision would change.

        Raises:
            ConfigError: a line is not a recorded event (corrupt, truncated, recorded
                without its payload), naming the line.
        """
        return await replay(self, path, on_change)

    async def fire_only(
        self, event: str, payload: Mapping[str, Any] | None, only: Only
    ) -> HookOutcome:
        """``fire``, running only the matching hooks ``only`` keeps (all: None)."""
        fire = self._fire if only is None else functools.partial(self._fire, only=only)
        if self._background.waiting or self._recorder is not None:
            bg = self._background if self._background.waiting else None  # words to deliver
            return await recorded(fire, event, payload, bg, self._recorder, self.session_id)
        return await fire(event, payload)

    async def _fire(
        self, event: str, payload: Mapping[str, Any] | None, only: Only = None
    ) -> HookOutcome:
        try:
            spec, hooks, special, unmatched, filters = self._firing[event]
        except KeyError:
            if event not in EVENTS:
                raise unknown_event(event) from None
            return EMPTY  # no hooks for it
        if payload is None:
            payload = {}
        if unmatched:  # the subject only goes on spans: read below, when tracing
            subject, matching = None, hooks
        else:
            subject = subject_of(spec, payload)
            matching = matching_hooks(hooks, subject, payload)
            if filters:
                matching = selected(matching, payload)
        if only is not None:  # Arc's run gate: some hooks only
            matching = tuple(hook for hook in matching if only(hook))
        if special:
            matching = self._special(event, payload, matching)
        if not matching:
            return EMPTY
        data = event_data(event, payload, self.session_id, self.project_dir)
        tracer = last_tracer()
        if tracer is not None and unmatched:
            subject = subject_of(spec, payload)
        if len(matching) == 1:  # the most common case, run here (one coroutine less)
            record = await self._run(matching[0], data, tracer, subject, None)
            outcome = plain_outcome(spec, record)
            if outcome is None:
                combiner = combiner_for(spec, payload)
                combiner.add(record)
                outcome = combiner.outcome()
            return outcome
        combiner = combiner_for(spec, payload)
        return await run_hooks(matching, data, combiner, tracer, subject, self._run)

    def _special(
        self, event: str, payload: Mapping[str, Any], matching: tuple[HookSpec, ...]
    ) -> tuple[HookSpec, ...]:
        """``matching`` less the ``once`` hooks that ran and the background hooks (started)."""
        matching = tuple(h for h in matching if not (h.once and id(h) in self._ran_once))
        self._ran_once.update(id(h) for h in matching if h.once)
        data = event_data(event, payload, self.session_id, self.project_dir)
        call = HookCall(event, data, self.project_dir, None, self.judge, None)
        return self._background.start(matching, call)

    def _run(
        self,
        hook: HookSpec,
        data: Mapping[str, Any],
        tracer: Tracer | None,
        subject: str | None,
        body: bytes | None = None,
    ) -> Coroutine[Any, Any, HookRecord]:
        """Run one hook (see ``RunHook``): in a slot if it is a process or a request."""
        slots = self._slots.gate if hook.external else None
        if tracer is None:  # the attempt's own coroutine, not one more around it
            call = HookCall(hook.event, data, self.project_dir, body, self.judge, self._processes)
            return attempt(hook, call, slots)
        return traced_attempt(
            hook, data, self.project_dir, tracer, subject, body, self.judge, self._processes, slots
        )
