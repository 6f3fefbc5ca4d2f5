"""What a subagent is, the context it runs with, and the result of a dispatch."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final, Protocol, final, runtime_checkable

import anyio
import attrs

from orchestra._errors import HookError
from orchestra._hooks import ExecutionMode
from orchestra._spending import BudgetUse

if TYPE_CHECKING:
    from orchestra.agents._dispatcher import Dispatcher

__all__ = ["AgentContext", "Subagent", "SubagentResult"]

logger: Final = logging.getLogger("orchestra")


@runtime_checkable
class Subagent(Protocol):
    """A subagent: any object with a ``name`` and an ``async run(task, ctx)`` method.

    Use it as a Protocol (any object of that shape is a subagent) or as a base class::

        class Researcher(Subagent):
            name = "researcher"

            async def run(self, task: str, ctx: AgentContext) -> str:
                return f"notes on {task}"

    Attributes:
        name: the name the agent is registered and dispatched under (unique in a
            ``Dispatcher``, non-empty).
    """

    name: str

    async def run(self, task: str, ctx: AgentContext) -> Any:
        """Do the work described by ``task`` and return the output.

        Args:
            task: the text dispatched.
            ctx: the ``AgentContext`` of this attempt (agent name, parent, mode,
                attempt, delegation chain, and a ``state`` dict that lives as long as
                the agent's session).

        Raising ``Exception`` is a failed attempt: the dispatcher's ``on_failure``
        hooks decide what comes next. Any other ``BaseException`` is never retried.
        """
        ...


@final
class _Session:
    """State and close callbacks of one agent session (internal).

    A TEAMMATE session lives from the first dispatch of a parent to an agent until the
    dispatcher closes; any other session lives for the attempts of one agent within one
    dispatch. Both are allocated lazily: a session nobody looks at costs one object.
    """

    __slots__ = ("_callbacks", "_state", "closed", "lock")

    def __init__(self, lock: anyio.Lock | None = None) -> None:
        self._state: dict[str, Any] | None = None
        self._callbacks: list[Callable[[], object]] | None = None
        self.lock = lock
        self.closed = False

    @property
    def state(self) -> dict[str, Any]:
        if self._state is None:
            self._state = {}
        return self._state

    def on_close(self, callback: Callable[[], object]) -> None:
        if not callable(callback):
            raise TypeError(f"on_close needs a callable, got {callback!r}")
        if self._callbacks is None:
            self._callbacks = []
        self._callbacks.append(callback)

    @property
    def needs_closing(self) -> bool:
        return self._callbacks is not None

    async def close(self, owner: str) -> None:
        """Run the close callbacks, last registered first; errors are logged, not raised."""
        self.closed = True
        callbacks, self._callbacks = self._callbacks or [], None
        with anyio.CancelScope(shield=True):
            while callbacks:
                callback = callbacks.pop()
                try:
                    outcome = callback()
                    if inspect.isawaitable(outcome):
                        await outcome
                except Exception:
                    logger.warning("close callback %r of %s raised", callback, owner, exc_info=True)
        self._state = None


@final
class AgentContext:
    """What ``Subagent.run`` gets besides the task text: one per attempt.

    Attributes:
        agent: the name of the agent running (after a delegation, the delegate's).
        parent: the ``parent`` given to ``dispatch`` (the dispatching agent or DAG), or None.
        mode: the ``ExecutionMode`` of the dispatch.
        attempt: the attempt number with this agent, 1-based (restarts on delegation).
        delegated_from: the agents tried before this one in the delegation chain.
        dispatcher: the ``Dispatcher`` running the attempt, so an agent can dispatch work
            of its own (pass ``parent=ctx.agent``).
    """

    __slots__ = ("_session", "agent", "attempt", "delegated_from", "dispatcher", "mode", "parent")

    def __init__(
        self,
        agent: str,
        parent: str | None,
        mode: ExecutionMode,
        attempt: int,
        delegated_from: tuple[str, ...],
        dispatcher: Dispatcher,
        session: _Session,
    ) -> None:
        self.agent = agent
        self.parent = parent
        self.mode = mode
        self.attempt = attempt
        self.delegated_from = delegated_from
        self.dispatcher = dispatcher
        self._session = session

    @property
    def state(self) -> dict[str, Any]:
        """A dict the agent may keep anything in, as long as its session lives.

        For ``TEAMMATE`` the session is the pair (parent, agent): the same dict comes back
        in every dispatch from that parent to that agent until the dispatcher closes. For
        ``SYNC`` and ``FORK`` it is shared by the attempts of this agent within this
        dispatch only (a retry sees what the failed attempt left there).
        """
        return self._session.state

    def on_close(self, callback: Callable[[], Awaitable[object] | object]) -> None:
        """Register ``callback`` (sync or async, no arguments) to run when the session closes.

        A ``TEAMMATE`` session closes with the dispatcher; any other session when this
        agent's part of the dispatch ends (success, failure, delegation or cancellation).
        Callbacks run last registered first, shielded from cancellation; one that raises
        is logged on the ``orchestra`` logger and the others still run.
        """
        self._session.on_close(callback)

    def __repr__(self) -> str:
        return (
            f"AgentContext(agent={self.agent!r}, parent={self.parent!r}, mode={self.mode}, "
            f"attempt={self.attempt}, delegated_from={self.delegated_from!r})"
        )


@final
@attrs.frozen(kw_only=True)
class SubagentResult:
    """The result of a dispatch that succeeded.

    Attributes:
        agent: the agent that answered (after delegations, the last delegate).
        output: what its ``run`` returned.
        attempts: the attempts made by the agent that answered (1 if it answered first time).
        delegated_from: the agents tried before it, in order (empty without delegation).
        hook_errors: the hook errors recorded during the dispatch, in order.
        messages: what hooks added with ``ctx.add_message`` during the attempt that
            answered (``SubagentStart`` and ``SubagentStop`` context, say).
        error: the agent's error, when an ``on_failure`` hook's ``Replace`` recovered it
            with a substitute ``output``; else None.
        budgets: what the dispatch spent of each ``Budget`` among the dispatcher's hooks,
            in order (``BudgetUse``).
    """

    agent: str
    output: Any
    attempts: int
    delegated_from: tuple[str, ...] = ()
    hook_errors: tuple[HookError, ...] = ()
    messages: tuple[str, ...] = ()
    error: BaseException | None = None
    budgets: tuple[BudgetUse, ...] = ()
