"""The subagent dispatcher: hooks, retries, delegation and the three execution modes."""

from __future__ import annotations

import enum
import logging
import math
from collections.abc import Iterable, Mapping
from types import MappingProxyType, TracebackType
from typing import Final, Literal, overload

import anyio
import anyio.abc

from orchestra._attempts import DEFAULT_MAX_ATTEMPTS
from orchestra._chain import DEFAULT_HOOK_TIMEOUT, HookChain
from orchestra._errors import DispatchError
from orchestra._hooks import ExecutionMode, SubagentHooks
from orchestra._moments import hook_objects
from orchestra._spending import budgets_of
from orchestra.agents._checks import check_agents, check_count, check_timeout
from orchestra.agents._dispatch import _Dispatch
from orchestra.agents._fork import Fork
from orchestra.agents._types import Subagent, SubagentResult, _Session
from orchestra.tracing._engine import get_tracer

__all__ = ["Dispatcher"]

logger: Final = logging.getLogger("orchestra")

_SYNC: Final = ExecutionMode.SYNC
_FORK: Final = ExecutionMode.FORK
_TEAMMATE: Final = ExecutionMode.TEAMMATE


class _Lifecycle(enum.Enum):
    """Where a dispatcher is in its life: it opens once and closes once."""

    NEW = "new"
    OPEN = "open"
    CLOSED = "closed"


_NEW: Final = _Lifecycle.NEW
_OPEN: Final = _Lifecycle.OPEN
_CLOSED: Final = _Lifecycle.CLOSED


class Dispatcher:
    """Hands work to named subagents, with ``SubagentHooks`` deciding what failures mean.

    A dispatch runs ``before_dispatch`` hooks, then the agent, then ``after_dispatch``
    hooks; when the agent raises an ``Exception``, ``on_failure`` hooks answer, merged by
    precedence (``Fail > Delegate > Retry > Replace > None``):

    - ``Retry(delay)``: the same agent runs again after ``delay`` seconds;
    - ``Delegate(agent)``: the work moves to another registered agent, whose attempt count
      starts again at 1; ``delegated_from`` grows in the contexts and the result;
    - ``Fail(reason)``: ``DispatchError`` with the reason in its message;
    - ``Replace(output)``: the dispatch succeeds with that output (``result.error`` keeps
      the agent's error);
    - None (every hook): ``DispatchError``, the agent's exception as its ``__cause__``.

    ``before_dispatch`` runs before every attempt and may answer ``Fail``, ``Delegate`` or
    ``Replace(text)`` (the text the agent gets); ``after_dispatch`` may ``Replace`` the
    output.
    A ``Delegate`` is refused with ``DispatchError`` naming the agents when its target is
    unknown, is the delegating agent itself or was already tried in this chain, or when it
    would exceed ``max_delegations``. A ``Retry`` past ``max_attempts`` attempts of one
    agent fails the dispatch. A ``BaseException`` from an agent (``KeyboardInterrupt``,
    ``SystemExit``...) is shown to ``on_failure`` hooks, whose answers are ignored, and
    propagates as is; cancellation is never shown to hooks.

    Modes (see ``dispatch``): ``SYNC`` works on any dispatcher, also one never opened
    (e.g. with ``orchestra.run_sync``); ``FORK`` and ``TEAMMATE`` need it open::

        async with Dispatcher([researcher, writer], hooks=[RetryPolicy()]) as d:
            result = await d.dispatch("researcher", "find sources", parent="planner")
            fork = await d.dispatch("writer", "draft", mode=ExecutionMode.FORK)
            draft = await fork

    Leaving the ``async with`` block waits for the forks still running (as a task group
    does), or cancels them if the block raised or was cancelled, then closes the TEAMMATE
    sessions (cancelling teammate dispatches still running elsewhere). A closed dispatcher
    refuses new dispatches. A dispatcher can be opened once.

    Args:
        agents: the subagents; names must be unique.
        hooks: ``SubagentHooks`` objects, called in this order at each moment.
        max_delegations: how many delegations one dispatch may make (>= 0).
        max_attempts: hard cap on the attempts of one agent within one dispatch.
        hook_timeout: seconds each hook call may take, unless the hook object has a
            ``timeout`` attribute of its own (None = no limit); a call past it is
            cancelled and counts as a hook error.

    Raises:
        TypeError: an agent without ``name`` or a callable ``run`` (or a sync ``run``), or
            a hook object that is refused (see ``HookChain``: a ``TaskHooks``-only object,
            a typo such as ``on_fail``, a moment whose signature is wrong).
        ValueError: duplicate agent names, an empty name, ``max_delegations`` < 0,
            ``max_attempts`` < 1 or a ``hook_timeout`` that is not a number > 0 or None.
    """

    def __init__(
        self,
        agents: Iterable[Subagent],
        *,
        hooks: Iterable[object] = (),
        max_delegations: int = 3,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        hook_timeout: float | None = DEFAULT_HOOK_TIMEOUT,
    ) -> None:
        self._agents = check_agents(agents)
        self._max_delegations = check_count("max_delegations", max_delegations, 0)
        self._max_attempts = check_count("max_attempts", max_attempts, 1)
        hooks = tuple(hook_objects(hooks))  # a clear TypeError for H, H()
        self._budgets = budgets_of(hooks)  # each dispatch charges them (see Budget)
        chain = self._chain = HookChain(hooks, SubagentHooks, timeout=hook_timeout)
        # One boolean per hook point: with no hooks, a dispatch does nothing more.
        self._has_before = chain.has("before_dispatch")
        self._has_after = chain.has("after_dispatch")
        self._has_on_failure = chain.has("on_failure")
        self._hooked = (
            self._has_before or self._has_after or self._has_on_failure or bool(self._budgets)
        )
        # Tracing on or off, decided once: a dispatch reads this, not the environment.
        self._tracer = get_tracer()
        self._lifecycle = _NEW
        self._tg: anyio.abc.TaskGroup | None = None
        self._sessions: dict[tuple[str | None, str], _Session] = {}
        self._teammate_scopes: set[anyio.CancelScope] = set()
        self._failed_forks: list[Fork] = []

    @property
    def agents(self) -> Mapping[str, Subagent]:
        """The registered agents by name (read-only)."""
        return MappingProxyType(self._agents)

    @property
    def max_delegations(self) -> int:
        """How many delegations one dispatch may make."""
        return self._max_delegations

    @property
    def max_attempts(self) -> int:
        """Hard cap on the attempts of one agent within one dispatch."""
        return self._max_attempts

    @property
    def closed(self) -> bool:
        """Whether the dispatcher was closed (it then refuses dispatches)."""
        return self._lifecycle is _CLOSED

    def __repr__(self) -> str:
        return f"<Dispatcher agents={list(self._agents)!r} {self._lifecycle.value}>"

    def _known(self) -> str:
        return f" (registered: {', '.join(map(repr, self._agents)) or 'none'})"

    def _session(self, parent: str | None, name: str) -> _Session:
        key = (parent, name)
        session = self._sessions.get(key)
        if session is None:
            session = self._sessions[key] = _Session(anyio.Lock())
        return session

    # -- dispatch -------------------------------------------------------------------------

    @overload
    async def dispatch(
        self,
        name: str,
        task: str,
        *,
        parent: str | None = None,
        mode: Literal[ExecutionMode.SYNC, ExecutionMode.TEAMMATE] = ExecutionMode.SYNC,
        timeout: float | None = None,  # noqa: ASYNC109 -- a per-dispatch deadline is the API
    ) -> SubagentResult: ...

    @overload
    async def dispatch(
        self,
        name: str,
        task: str,
        *,
        parent: str | None = None,
        mode: Literal[ExecutionMode.FORK],
        timeout: float | None = None,  # noqa: ASYNC109 -- a per-dispatch deadline is the API
    ) -> Fork: ...

    @overload
    async def dispatch(
        self,
        name: str,
        task: str,
        *,
        parent: str | None = None,
        mode: ExecutionMode,
        timeout: float | None = None,  # noqa: ASYNC109 -- a per-dispatch deadline is the API
    ) -> SubagentResult | Fork: ...

    async def dispatch(
        self,
        name: str,
        task: str,
        *,
        parent: str | None = None,
        mode: ExecutionMode = ExecutionMode.SYNC,
        timeout: float | None = None,  # noqa: ASYNC109 -- a per-dispatch deadline is the API
    ) -> SubagentResult | Fork:
        """Dispatch ``task`` to the agent ``name``.

        - ``SYNC``: the caller waits; returns the ``SubagentResult``. The work runs in the
          caller's task, so cancelling the caller cancels it.
        - ``FORK``: the work starts in the dispatcher's task group and a ``Fork`` handle
          is returned at once; ``await handle`` gives the result. Forks end with the
          dispatcher (see the class) and with the task awaiting them if it is cancelled.
        - ``TEAMMATE``: like ``SYNC``, but the agent keeps a session per ``parent``: the
          ``AgentContext.state`` dict survives from one dispatch to the next, and
          dispatches to the same session run one at a time, in arrival order. Sessions
          close with the dispatcher.

        Args:
            name: the agent to dispatch to.
            task: the text of the work.
            parent: who dispatches (an agent or DAG name); shown to hooks as
                ``parent_agent`` and keys TEAMMATE sessions.
            mode: the ``ExecutionMode``.
            timeout: seconds the whole dispatch may take (all attempts, delegations, retry
                delays and hooks); past it the dispatch is cancelled, ``on_failure`` hooks
                see a ``TimeoutError`` (their answers are ignored) and ``DispatchError``
                is raised with it as ``__cause__``. None = no limit.

        Returns:
            The ``SubagentResult`` (SYNC, TEAMMATE) or a ``Fork`` handle (FORK).

        Raises:
            DispatchError: an unknown agent, a refused delegation, a hook's ``Fail``, a
                final failure (the agent's exception as ``__cause__``), the attempt cap, a
                timeout, a closed dispatcher, or FORK/TEAMMATE on an unopened one. Its
                message names the agent.
            TypeError: ``task`` is not a ``str`` or ``mode`` not an ``ExecutionMode``.
            ValueError: a ``timeout`` that is not a number > 0.
        """
        if self._lifecycle is _CLOSED:
            raise DispatchError(
                f"cannot dispatch to agent {name!r}: the dispatcher is closed", agent=name
            )
        if type(task) is not str or type(name) is not str:
            if not isinstance(name, str):
                raise TypeError(f"dispatch needs an agent name (a str), got {name!r}")
            if not isinstance(task, str):
                raise TypeError(f"dispatch to agent {name!r}: task must be a str, got {task!r}")
        if mode is _SYNC and timeout is None:
            return await _Dispatch(self, name, task, parent, mode).run()
        if not isinstance(mode, ExecutionMode):
            raise TypeError(
                f"dispatch to agent {name!r}: mode must be an ExecutionMode, got {mode!r}"
            )
        deadline = math.inf
        if timeout is not None:
            deadline = anyio.current_time() + check_timeout(name, timeout)
        if mode is not _SYNC and self._lifecycle is not _OPEN:
            raise DispatchError(
                f"cannot dispatch to agent {name!r} as {mode.name}: open the dispatcher "
                "first (async with Dispatcher(...) as d)",
                agent=name,
            )
        run = _Dispatch(self, name, task, parent, mode)
        if mode is _FORK:
            assert self._tg is not None
            fork = Fork(name, task, parent)
            self._tg.start_soon(self._run_fork, fork, run, deadline, timeout)
            return fork
        return await self._scoped(run, deadline, timeout)

    async def _scoped(
        self, run: _Dispatch, deadline: float, seconds: float | None
    ) -> SubagentResult:
        """Run a dispatch under its deadline; TEAMMATE ones are cancelled at close."""
        scope = anyio.CancelScope(deadline=deadline)
        teammate = run.mode is _TEAMMATE
        if teammate:
            self._teammate_scopes.add(scope)
        try:
            with scope:
                return await run.run()
        finally:
            if teammate:
                self._teammate_scopes.discard(scope)
        # Only reached when this scope caught the cancellation: the deadline, or close().
        if seconds is None or anyio.current_time() < deadline:
            raise run.error(f"dispatch to agent {run.name!r} was cancelled: the dispatcher closed")
        raise await run.timed_out(seconds)

    async def _run_fork(
        self, fork: Fork, run: _Dispatch, deadline: float, seconds: float | None
    ) -> None:
        try:
            with fork._scope:
                fork._result = await self._scoped(run, deadline, seconds)
        except Exception as exc:  # DispatchError, or a bug: kept for whoever awaits
            fork._error = exc
            self._failed_forks.append(fork)
        except BaseException as exc:
            if not isinstance(exc, anyio.get_cancelled_exc_class()):
                fork._error = exc  # KeyboardInterrupt...: kept, and it ends the dispatcher
            raise
        finally:
            fork._done.set()

    # -- lifetime -------------------------------------------------------------------------

    async def __aenter__(self) -> Dispatcher:
        if self._lifecycle is not _NEW:
            raise RuntimeError(f"{self!r} can be opened only once")
        tg = anyio.create_task_group()
        await tg.__aenter__()
        self._tg = tg
        self._lifecycle = _OPEN
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        tg = self._tg
        assert tg is not None
        try:
            if exc is not None:
                tg.cancel_scope.cancel()  # the block failed or was cancelled: so are forks
            fatal: BaseException | None = None
            try:
                await tg.__aexit__(None, None, None)
            except BaseExceptionGroup as group:
                # Forks keep their errors; only a fatal BaseException escapes them.
                if len(group.exceptions) != 1:
                    raise
                fatal = group.exceptions[0]
            if fatal is not None:
                raise fatal
        finally:
            self._lifecycle = _CLOSED
            self._tg = None
            await self._close()

    async def _close(self) -> None:
        for scope in self._teammate_scopes:
            scope.cancel()
        sessions, self._sessions = self._sessions, {}
        for (_parent, name), session in sessions.items():
            await session.close(f"teammate {name!r}")
        for fork in self._failed_forks:
            if not fork._retrieved:
                logger.warning(
                    "fork of %r to agent %r failed and was never awaited: %s",
                    fork.task,
                    fork.agent,
                    fork._error,
                )
        self._failed_forks.clear()
