"""The SDK's default agent runner, wrapped so a plain nested ``Runner.run`` is guarded (internal).

``Runner.run``, ``Runner.run_sync`` and ``Runner.run_streamed`` hand each call to the
SDK's default runner (``agents.run.get_default_agent_runner()``), its one process-wide
seam, which the SDK documents as experimental, not part of its public API. ``install``
(the first time the bridge guards an agent or a tool) puts an ``AmbientRunner`` there,
once per process, wrapping the runner it finds (it does not subclass ``AgentRunner``).

Outside guarded work (no ambient policy) it hands every call on unchanged. Inside it (a
guarded tool's body, where the tool's policy is the ambient one) a run of an agent no
bridge guards, given no bridge as ``hooks=``, is run as ``OrchestraRunHooks().run`` runs
it (no registry: the ambient policy's): the caller's own ``RunHooks`` are called after
the bridge's, as ``hooks=`` of ``bridge.run`` are, so they add to the policy and cannot
take it away. An agent a bridge or ``guard_agent`` guarded, or a bridge given as
``hooks=``, is a policy of its own: unchanged. ``Runner.run_streamed`` is synchronous,
so a plain nested one gets the bridge as its hooks and the guarded agent (every tool
call, handoff and agent hook) without the run's own events (``SessionStart``,
``UserPromptSubmit``, ``Stop``, ``SessionEnd``), which are awaited before a run starts.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Final, cast, final

from agents import run as sdk_run

from orchestra.bridge import current_policy
from orchestra_openai_agents._invoker import is_guarded
from orchestra_openai_agents._lifecycle import prepare

if TYPE_CHECKING:
    from agents import Agent
    from agents.result import RunResult, RunResultStreaming

    from orchestra_openai_agents._hooks import OrchestraRunHooks

__all__ = ["AmbientRunner", "install"]

_lock: Final = threading.Lock()
_installed: list[AmbientRunner] = []  # the one runner this process installed, once


def _bridge_type() -> type[OrchestraRunHooks]:
    # here, not at the top: _hooks imports _graph, which imports this module
    from orchestra_openai_agents._hooks import OrchestraRunHooks

    return OrchestraRunHooks


def _bridge_for(agent: Any, kwargs: dict[str, Any]) -> OrchestraRunHooks | None:
    """The bridge a plain run inside guarded work takes (None: hand it on unchanged)."""
    if current_policy().empty or is_guarded(agent):  # outside guarded work, or guarded
        return None
    bridge = _bridge_type()
    if isinstance(kwargs.get("hooks"), bridge):  # a bridge of the caller's own: its policy
        return None
    return bridge()  # no registry, no hooks: the ambient policy's


@final
class AmbientRunner:
    """The SDK's default runner, guarding a plain run started inside guarded work.

    Attributes:
        inner: the default runner it found (the SDK's ``AgentRunner``, or one set before).
    """

    __slots__ = ("inner",)

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    async def run(self, starting_agent: Agent[Any], input: Any, **kwargs: Any) -> RunResult:
        """``inner.run``, or inside guarded work ``OrchestraRunHooks().run``."""
        bridge = _bridge_for(starting_agent, kwargs)
        if bridge is None:
            return cast("RunResult", await self.inner.run(starting_agent, input, **kwargs))
        return await bridge.run(starting_agent, input, **kwargs)

    def run_sync(self, starting_agent: Agent[Any], input: Any, **kwargs: Any) -> RunResult:
        """``inner.run_sync``, or inside guarded work ``OrchestraRunHooks().run_sync``."""
        bridge = _bridge_for(starting_agent, kwargs)
        if bridge is None:
            return cast("RunResult", self.inner.run_sync(starting_agent, input, **kwargs))
        return bridge.run_sync(starting_agent, input, **kwargs)

    def run_streamed(
        self, starting_agent: Agent[Any], input: Any, **kwargs: Any
    ) -> RunResultStreaming:
        """``inner.run_streamed``; inside guarded work, of the guarded agent, hooked by a bridge."""
        bridge = _bridge_for(starting_agent, kwargs)
        if bridge is not None:
            starting_agent, kwargs, _ = prepare(bridge, starting_agent, input, kwargs)
        return cast("RunResultStreaming", self.inner.run_streamed(starting_agent, input, **kwargs))

    def __getattr__(self, name: str) -> Any:  # anything else of the runner it wraps
        return getattr(self.inner, name)


def install() -> None:
    """Make an ``AmbientRunner`` the SDK's default runner, once per process (idempotent).

    Later calls do nothing, even when the default runner was replaced since: whoever
    replaced it chose it.
    """
    if _installed:
        return
    with _lock:
        if _installed:
            return
        runner = AmbientRunner(sdk_run.get_default_agent_runner())
        # duck-typed: Runner calls only run, run_sync and run_streamed on its default runner
        sdk_run.set_default_agent_runner(cast("sdk_run.AgentRunner", runner))
        _installed.append(runner)
