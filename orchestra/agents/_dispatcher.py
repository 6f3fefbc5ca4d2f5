"""The subagent dispatcher: hooks, retries, delegation and the three execution modes."""

from __future__ import annotations

import inspect
import logging
import math
import time
from collections.abc import Generator, Iterable, Mapping
from types import MappingProxyType, TracebackType
from typing import Any, Final, Literal, TypeAlias, final, overload

import anyio
import anyio.abc
from opentelemetry.trace import Span

from orchestra._decisions import Decision, Delegate, Fail, Retry
from orchestra._errors import DispatchError, HookError
from orchestra._hooks import (
    SUBAGENT_ANSWERS,
    ExecutionMode,
    HookImpl,
    SubagentHookContext,
    SubagentHooks,
    call_hooks,
    compile_hooks,
)
from orchestra.agents._types import RunContext, Subagent, SubagentResult, _Session
from orchestra.tracing._spans import (
    agent_span,
    record_decision,
    record_error,
    record_hook_error,
    set_agent_output,
)
from orchestra.tracing._state import get_tracer

__all__ = ["DEFAULT_MAX_ATTEMPTS", "Dispatcher", "Fork"]

logger: Final = logging.getLogger("orchestra")

DEFAULT_MAX_ATTEMPTS: Final = 100
"""Hard cap on the attempts of one agent within one dispatch, whatever hooks answer.

With ``max_delegations`` it bounds a whole dispatch: at most
``(max_delegations + 1) * max_attempts`` runs, so a hook that always answers ``Retry`` or
``Delegate`` cannot keep a dispatch going forever.
"""

_SYNC: Final = ExecutionMode.SYNC
_FORK: Final = ExecutionMode.FORK
_TEAMMATE: Final = ExecutionMode.TEAMMATE

# Lifecycle of a dispatcher.
_NEW: Final = 0
_OPEN: Final = 1
_CLOSED: Final = 2

# What one agent's part of a dispatch ends with when it does not answer: a delegation,
# the hook that asked for it, and the error that led to it (if any).
_Delegation: TypeAlias = tuple[Delegate, "HookImpl | None", "BaseException | None"]


def _check_agents(agents: Iterable[Subagent]) -> dict[str, Subagent]:
    if isinstance(agents, str | bytes | Mapping):
        raise TypeError(
            f"Dispatcher takes an iterable of agents (objects with name and run), got {agents!r}"
        )
    registry: dict[str, Subagent] = {}
    for agent in agents:
        name = getattr(agent, "name", None)
        if name is None:
            raise TypeError(
                f"{agent!r} is not a subagent: it has no 'name' "
                "(a subagent needs name: str and async run(task, ctx))"
            )
        if not isinstance(name, str) or not name:
            raise ValueError(f"agent {agent!r} needs a non-empty str name, got {name!r}")
        run = getattr(agent, "run", None)
        if not callable(run):
            raise TypeError(
                f"agent {name!r} ({agent!r}) is not a subagent: it has no callable 'run' "
                "(a subagent needs name: str and async run(task, ctx))"
            )
        if inspect.isroutine(run) and not inspect.iscoroutinefunction(run):
            raise TypeError(
                f"agent {name!r}: run must be a coroutine function (async def run(self, task, "
                f"ctx)), got {run!r}"
            )
        if name in registry:
            raise ValueError(
                f"duplicate agent name {name!r}: {registry[name]!r} and {agent!r}; "
                "agent names must be unique"
            )
        registry[name] = agent
    return registry


def _check_count(what: str, value: object, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{what} must be an int >= {minimum}, got {value!r}")
    return value


@final
class Fork:
    """The handle of a ``FORK`` dispatch: await it for the ``SubagentResult``, or cancel it.

    ``await fork`` (or ``await fork.wait()``) returns the result once the dispatch ends,
    or raises its ``DispatchError`` (a ``BaseException`` such as ``KeyboardInterrupt``
    is raised as is). Awaiting a fork that was cancelled raises ``DispatchError``. A
    handle can be awaited any number of times, also after the dispatcher closed. If the
    task awaiting a fork is cancelled, the fork is cancelled too: nobody is left to take
    its result.

    Attributes:
        agent: the agent the work was dispatched to (before any delegation).
        task: the text dispatched.
        parent: the ``parent`` given to ``dispatch``.
    """

    __slots__ = ("_done", "_error", "_result", "_retrieved", "_scope", "agent", "parent", "task")

    def __init__(self, agent: str, task: str, parent: str | None) -> None:
        self.agent = agent
        self.task = task
        self.parent = parent
        self._scope = anyio.CancelScope()
        self._done = anyio.Event()
        self._result: SubagentResult | None = None
        self._error: BaseException | None = None
        self._retrieved = False

    def cancel(self) -> None:
        """Cancel the dispatch if it is still running (no effect once it ended)."""
        self._scope.cancel()

    def done(self) -> bool:
        """Whether the dispatch ended (answered, failed or was cancelled)."""
        return self._done.is_set()

    @property
    def cancelled(self) -> bool:
        """Whether the dispatch ended by cancellation (``cancel()`` or the dispatcher's)."""
        return self._done.is_set() and self._result is None and self._error is None

    async def wait(self) -> SubagentResult:
        """Wait for the dispatch to end and return its result (or raise its error).

        Raises:
            DispatchError: the dispatch failed, or was cancelled.
        """
        if not self._done.is_set():
            try:
                await self._done.wait()
            except anyio.get_cancelled_exc_class():
                self._scope.cancel()
                raise
        self._retrieved = True
        if self._result is not None:
            return self._result
        if self._error is not None:
            raise self._error
        raise DispatchError(
            f"fork of {self.task!r} to agent {self.agent!r} was cancelled", agent=self.agent
        )

    def __await__(self) -> Generator[Any, None, SubagentResult]:
        return self.wait().__await__()

    def __repr__(self) -> str:
        state = (
            "running"
            if not self.done()
            else "cancelled"
            if self.cancelled
            else "failed"
            if self._error is not None
            else "done"
        )
        return f"<Fork agent={self.agent!r} parent={self.parent!r} {state}>"


@final
class _Dispatch:
    """One dispatch: the delegation chain and the attempts of each agent (internal)."""

    __slots__ = (
        "attempt",
        "d",
        "delegated_from",
        "errors",
        "hook_errors",
        "mode",
        "name",
        "parent",
        "span",
        "started",
        "task",
        "tracer",
    )

    def __init__(
        self, d: Dispatcher, name: str, task: str, parent: str | None, mode: ExecutionMode
    ) -> None:
        self.d = d
        self.name = name
        self.task = task
        self.parent = parent
        self.mode = mode
        self.attempt = 0
        self.delegated_from: tuple[str, ...] = ()
        self.errors: list[BaseException] = []
        self.hook_errors: list[HookError] | None = None
        self.started = time.monotonic() if d._hooked else 0.0
        self.tracer = get_tracer()
        self.span: Span | None = None

    # -- errors ---------------------------------------------------------------------------

    def record(self, error: HookError) -> None:
        if self.hook_errors is None:
            self.hook_errors = []
        self.hook_errors.append(error)
        if self.span is not None:
            record_hook_error(self.span, error, error.hook)

    def error(self, message: str, reason: str | None = None) -> DispatchError:
        return DispatchError(
            message,
            agent=self.name,
            delegated_from=self.delegated_from,
            attempts=self.attempt,
            reason=reason,
            hook_errors=tuple(self.hook_errors or ()),
        )

    def failed(self, decision: Decision, impl: HookImpl | None) -> DispatchError:
        """The error of a dispatch that a hook's ``Fail`` ended."""
        reason = getattr(decision, "reason", None)
        who = f" by {impl.name}.{impl.moment}" if impl is not None else ""
        return self.error(
            f"dispatch to agent {self.name!r} failed{who}: {reason or 'failed by a hook'}",
            reason,
        )

    def context(self) -> SubagentHookContext:
        return SubagentHookContext(
            self.parent,
            self.name,
            self.mode,
            self.task,
            self.attempt,
            self.delegated_from,
            tuple(self.errors),
            self.started,
        )

    # -- the chain ------------------------------------------------------------------------

    async def run(self) -> SubagentResult:
        """Run the dispatch to its end: a result, a ``DispatchError``, or a BaseException."""
        d = self.d
        agent = d._agents.get(self.name)
        if agent is None:
            raise self.error(f"no agent named {self.name!r}{d._known()}")
        while True:
            if self.mode is _TEAMMATE:
                session = d._session(self.parent, self.name)
                assert session.lock is not None
                async with session.lock:
                    if session.closed:
                        raise self.error(f"the session of teammate {self.name!r} is closed")
                    step = await self.run_agent(agent, session)
            else:
                session = _Session()
                try:
                    step = await self.run_agent(agent, session)
                finally:
                    if session.needs_closing:
                        await session.close(f"agent {self.name!r}")
            if type(step) is SubagentResult:
                return step
            assert isinstance(step, tuple)
            agent = self.delegate(*step)

    async def run_agent(self, agent: Subagent, session: _Session) -> SubagentResult | _Delegation:
        """All the attempts of one agent: its result, or a delegation to another agent."""
        tracer = self.tracer
        while True:
            self.attempt += 1
            if tracer is None:
                outcome = await self.attempt_once(agent, session)
            else:
                with agent_span(
                    tracer,
                    self.name,
                    task=self.task,
                    mode=self.mode.value,
                    parent=self.parent,
                    attempt=self.attempt,
                    delegated_from=self.delegated_from,
                ) as span:
                    self.span = span
                    try:
                        outcome = await self.attempt_once(agent, session)
                    finally:
                        self.span = None
            if type(outcome) is Retry:
                if outcome.delay:
                    await anyio.sleep(outcome.delay)
                continue
            assert not isinstance(outcome, Retry)
            return outcome

    async def attempt_once(
        self, agent: Subagent, session: _Session
    ) -> SubagentResult | _Delegation | Retry:
        """One attempt: hooks around one run; what comes next, or DispatchError."""
        d = self.d
        name = self.name
        errors = self.errors
        if d._before:
            decision, impl = await call_hooks(
                d._before, (self.context(),), name, self.record, self.tracer
            )
            if decision is not None:
                self.decided(decision, impl)
                if type(decision) is Delegate:
                    return decision, impl, errors[-1] if errors else None
                raise self.failed(decision, impl) from (errors[-1] if errors else None)
        ctx = RunContext(
            name, self.parent, self.mode, self.attempt, self.delegated_from, d, session
        )
        try:
            output = await agent.run(self.task, ctx)
        except Exception as exc:
            errors.append(exc)
            if self.span is not None:
                record_error(self.span, exc)
            decision = impl = None
            if d._on_failure:
                decision, impl = await call_hooks(
                    d._on_failure, (self.context(), exc), name, self.record, self.tracer
                )
            if decision is None:
                raise self.error(
                    f"agent {name!r} failed on attempt {self.attempt}: {type(exc).__name__}: {exc}"
                ) from exc
            if type(decision) is Retry and self.attempt >= d._max_attempts:
                reason = f"attempt cap of {d._max_attempts} reached"
                self.decided(Fail(reason), None)
                raise self.error(
                    f"agent {name!r} reached the attempt cap of {d._max_attempts} "
                    f"(last error: {type(exc).__name__}: {exc})",
                    reason,
                ) from exc
            self.decided(decision, impl)
            if type(decision) is Retry:
                return decision
            if type(decision) is Delegate:
                return decision, impl, exc
            raise self.failed(decision, impl) from exc
        except BaseException as exc:
            # Cancellation is not the agent's failure; anything else (KeyboardInterrupt,
            # SystemExit...) is shown to the hooks, never retried, and propagates.
            if d._on_failure and not isinstance(exc, anyio.get_cancelled_exc_class()):
                errors.append(exc)
                await call_hooks(
                    d._on_failure, (self.context(), exc), name, self.record, self.tracer
                )
            raise
        if self.span is not None:
            set_agent_output(self.span, output)
        result = SubagentResult(
            name,
            output,
            self.attempt,
            self.delegated_from,
            tuple(self.hook_errors) if self.hook_errors else (),
        )
        if d._after:
            recorded = len(self.hook_errors or ())
            decision, impl = await call_hooks(
                d._after, (self.context(), result), name, self.record, self.tracer
            )
            if decision is not None:  # only a fail-closed hook error answers here
                self.decided(decision, impl)
                raise self.failed(decision, impl)
            if self.hook_errors and len(self.hook_errors) > recorded:
                result = SubagentResult(
                    name, output, self.attempt, self.delegated_from, tuple(self.hook_errors)
                )
        return result

    def decided(self, decision: Decision, impl: HookImpl | None) -> None:
        """Put a decision on the attempt's span, when tracing."""
        if self.span is not None:
            by = f"{impl.name}.{impl.moment}" if impl is not None else "orchestra"
            record_decision(self.span, decision, by, attempt=self.attempt)

    def delegate(
        self, decision: Delegate, impl: HookImpl | None, cause: BaseException | None
    ) -> Subagent:
        """Move the dispatch to the agent ``decision`` names, or refuse with DispatchError."""
        d = self.d
        name = self.name
        target = decision.agent
        who = f" (asked by {impl.name}.{impl.moment})" if impl is not None else ""
        chain = (*self.delegated_from, name)
        if target == name:
            raise self.error(f"agent {name!r} cannot delegate to itself{who}") from cause
        if target in self.delegated_from:
            raise self.error(
                f"cannot delegate from {name!r} to {target!r}{who}: {target!r} was already "
                f"tried in this chain ({' -> '.join(chain)})"
            ) from cause
        agent = d._agents.get(target)
        if agent is None:
            raise self.error(
                f"cannot delegate from {name!r} to unknown agent {target!r}{who}{d._known()}"
            ) from cause
        if len(chain) > d._max_delegations:
            raise self.error(
                f"cannot delegate from {name!r} to {target!r}{who}: max_delegations="
                f"{d._max_delegations} reached (chain: {' -> '.join(chain)})"
            ) from cause
        self.delegated_from = chain
        self.name = target
        self.attempt = 0
        self.errors = []
        return agent

    async def timed_out(self, seconds: float) -> DispatchError:
        """Show the timeout to ``on_failure`` hooks (answers ignored); return the error."""
        error = TimeoutError(f"dispatch timed out after {seconds:g} s")
        on_failure = self.d._on_failure
        if on_failure and self.attempt > 0:
            self.errors.append(error)
            await call_hooks(
                on_failure, (self.context(), error), self.name, self.record, self.tracer
            )
        dispatch_error = self.error(
            f"dispatch of {self.task!r} to agent {self.name!r} timed out after {seconds:g} s "
            f"(attempt {self.attempt})"
        )
        dispatch_error.__cause__ = error
        return dispatch_error


class Dispatcher:
    """Hands work to named subagents, with ``SubagentHooks`` deciding what failures mean.

    A dispatch runs ``before_dispatch`` hooks, then the agent, then ``after_dispatch``
    hooks; when the agent raises an ``Exception``, ``on_failure`` hooks answer, merged by
    precedence (``Fail > Delegate > Retry > None``):

    - ``Retry(delay)``: the same agent runs again after ``delay`` seconds;
    - ``Delegate(agent)``: the work moves to another registered agent, whose attempt count
      starts again at 1; ``delegated_from`` grows in the contexts and the result;
    - ``Fail(reason)``: ``DispatchError`` with the reason in its message;
    - None (every hook): ``DispatchError``, the agent's exception as its ``__cause__``.

    ``before_dispatch`` runs before every attempt and may answer ``Fail`` or ``Delegate``.
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

    Raises:
        TypeError: an agent without ``name`` or a callable ``run`` (or a sync ``run``), or
            a hook object that implements no ``SubagentHooks`` moment.
        ValueError: duplicate agent names, an empty name, ``max_delegations`` < 0 or
            ``max_attempts`` < 1.
    """

    def __init__(
        self,
        agents: Iterable[Subagent],
        *,
        hooks: Iterable[object] = (),
        max_delegations: int = 3,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
    ) -> None:
        self._agents = _check_agents(agents)
        self._max_delegations = _check_count("max_delegations", max_delegations, 0)
        self._max_attempts = _check_count("max_attempts", max_attempts, 1)
        compiled = compile_hooks(hooks, SubagentHooks, SUBAGENT_ANSWERS)
        self._before = compiled["before_dispatch"]
        self._after = compiled["after_dispatch"]
        self._on_failure = compiled["on_failure"]
        self._hooked = bool(self._before or self._after or self._on_failure)
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
        return self._lifecycle == _CLOSED

    def __repr__(self) -> str:
        state = ("new", "open", "closed")[self._lifecycle]
        return f"<Dispatcher agents={list(self._agents)!r} {state}>"

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
          ``RunContext.state`` dict survives from one dispatch to the next, and
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
        if self._lifecycle == _CLOSED:
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
            if (
                isinstance(timeout, bool)
                or not isinstance(timeout, int | float)
                or not timeout > 0  # NaN too
            ):
                raise ValueError(
                    f"dispatch to agent {name!r}: timeout must be a number > 0 or None, "
                    f"got {timeout!r}"
                )
            deadline = anyio.current_time() + timeout
        if mode is not _SYNC and self._lifecycle != _OPEN:
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
        if self._lifecycle != _NEW:
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
