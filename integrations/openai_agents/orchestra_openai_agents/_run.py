"""The bridge's entry points: ``run``, ``run_sync``, ``run_streamed`` (internal).

They add what the SDK has no callback for: the run's span (so one run is one trace),
``SessionStart``/``UserPromptSubmit`` before the run, the end of a paused run, failures
(``on_failure``, ``SubagentStop``, ``StopFailure``) and a safe whole-run ``Retry``,
``Stop`` after the final output, and ``SessionEnd``. Model calls are retried through the
SDK's own model retry, so a model error never replays a tool call.
"""

from __future__ import annotations

import asyncio
import contextlib
import warnings
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any, NoReturn

import anyio
from agents import Runner

from orchestra.bridge import RunAttempts, RunBudgets, open_budgets
from orchestra_openai_agents import _failures
from orchestra_openai_agents._lifecycle import (
    Lifecycle,
    continuation,
    prepare,
    rollback_session,
    session_size,
    unwrap,
    why_not_rerun,
)
from orchestra_openai_agents._spans import current
from orchestra_openai_agents._state import RunState as BridgeState
from orchestra_openai_agents._state import claim_var

if TYPE_CHECKING:
    from agents import Agent
    from agents.result import RunResult, RunResultStreaming

    from orchestra.bridge import Again
    from orchestra_openai_agents._hooks import OrchestraRunHooks

__all__ = ["run", "run_streamed", "run_sync"]


async def run(
    bridge: OrchestraRunHooks, agent: Agent[Any], input: Any, kwargs: dict[str, Any]
) -> RunResult:
    """The run, its model and tool calls charged to the bridge's own budgets.

    A run that ends in no other way (cancelled from outside) is abandoned: ``after_run``
    sees it once, and the cancellation goes on.
    """
    with open_budgets(bridge.own_budgets) as budgets:
        guarded, kwargs, life = _prepared(bridge, agent, input, kwargs, budgets)
        try:
            return await _run(life, guarded, await life.start(input), kwargs)
        except BaseException as exc:
            await life.abandon(exc)  # nothing when the run ended already
            raise


async def _run(
    life: Lifecycle, guarded: Agent[Any], input: Any, kwargs: dict[str, Any]
) -> RunResult:
    bridge = life.bridge
    session = kwargs.get("session")
    rollback = session is not None and bridge._agents.has("on_failure")
    flow = RunAttempts(bridge.max_attempts)  # the attempt number, errors, cap and segments
    current_agent: Agent[Any] = guarded
    stop_active = False
    for attempt in flow:
        claim = life.claim(attempt, flow.errors)
        token = claim_var.set(claim)
        try:
            size = await session_size(session) if rollback else None
            with current(life.span):
                result = await Runner.run(current_agent, input, **kwargs)
        except Exception as exc:
            state = claim.state
            error, decision, agent_name = await _failure(life, state, current_agent, input, exc)
            veto = why_not_rerun(state, input, kwargs) if decision is not None else None
            sleep = flow.failed(error, decision, veto)
            if sleep is not None:
                await rollback_session(session, size)
                if sleep.delay:
                    await anyio.sleep(sleep.delay)
                continue
            if flow.refused is not None:
                _failures.refuse_retry(state, flow.refused, agent_name)
            await _give_up(life, agent_name, error, exc)
        finally:
            claim_var.reset(token)
        if await _paused(life, claim.state, result):
            return result
        reason = await life.stop(result, stop_active)
        if reason is None:
            await life.end("completed")
            return result
        if not flow.next_segment():
            _failures.refuse_stop(claim.state, reason, flow.segments)
            await life.end("completed")
            return result
        input, kwargs = continuation(result, reason, kwargs)
        current_agent, stop_active = result.last_agent, True
    raise AssertionError("unreachable: every attempt returns, raises or goes on")


def _prepared(
    bridge: OrchestraRunHooks,
    agent: Agent[Any],
    input: Any,
    kwargs: dict[str, Any],
    budgets: RunBudgets | None = None,
) -> tuple[Agent[Any], dict[str, Any], Lifecycle]:
    """A run about to start: its guarded agent, arguments and lifecycle (not started).

    ``budgets`` are the run's own, when its entry point opened them already.
    """
    guarded, kwargs, workflow = prepare(bridge, agent, input, kwargs)
    life = Lifecycle(bridge, guarded, kwargs, workflow)
    if budgets is not None:
        life.budgets = budgets
    return guarded, kwargs, life


async def _failure(
    life: Lifecycle, state: BridgeState | None, agent: Agent[Any], input: Any, exc: Exception
) -> tuple[BaseException, Again | None, str]:
    """A failed run: its error, ``on_failure``'s ``Retry`` (any ``Again``) or None, its agent."""
    error = unwrap(exc)
    ctx = _failures.failure_context(life.bridge, state, agent, input, error)
    decision, _ = await _failures.on_run_failure(life.bridge, state, ctx, error)
    return error, decision, ctx.subagent_name


async def _give_up(life: Lifecycle, agent: str, error: BaseException, exc: Exception) -> NoReturn:
    """A run that failed for good: ``StopFailure``, ``SessionEnd``, then its error."""
    await life.stop_failure(agent, error)
    await life.end("failed", error)
    if error is exc:
        raise exc
    raise error from None


async def _paused(life: Lifecycle, state: BridgeState | None, result: Any) -> bool:
    """Whether the run paused (an approval): its dispatch and the run end ``interrupted``."""
    if not result.interruptions:
        return False
    if state is not None:  # the paused agent's dispatch: SubagentStop ``interrupted``
        pending = [str(item.tool_name) for item in result.interruptions]
        await life.bridge.end_dispatch(state, None, "interrupted", {"pending_tools": pending})
    await life.end("interrupted")
    return True


def run_sync(
    bridge: OrchestraRunHooks, agent: Agent[Any], input: Any, kwargs: dict[str, Any]
) -> RunResult:
    """``run`` on the thread's default event loop, as ``Runner.run_sync`` does."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        raise RuntimeError(
            "run_sync() cannot be called from a running event loop: use await bridge.run(...)"
        )
    policy = asyncio.get_event_loop_policy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            loop = policy.get_event_loop()
        except RuntimeError:
            loop = policy.new_event_loop()
            policy.set_event_loop(loop)
    if loop.is_closed():
        loop = policy.new_event_loop()
        policy.set_event_loop(loop)
    task = loop.create_task(run(bridge, agent, input, kwargs))
    try:
        return loop.run_until_complete(task)
    except BaseException:
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                loop.run_until_complete(task)
        raise
    finally:
        loop.run_until_complete(loop.shutdown_asyncgens())


async def run_streamed(
    bridge: OrchestraRunHooks, agent: Agent[Any], input: Any, kwargs: dict[str, Any]
) -> RunResultStreaming:
    guarded, kwargs, life = _prepared(bridge, agent, input, kwargs)
    try:
        input = await life.start(input)
    except BaseException as exc:
        await life.abandon(exc)  # nothing when the start ended the run (refused)
        raise
    claim = life.claim(1, ())
    token = claim_var.set(claim)  # the SDK's background task copies the context now
    try:
        with current(life.span), open_budgets(bridge.own_budgets) as life.budgets:
            result = Runner.run_streamed(guarded, input, **kwargs)
    except BaseException as exc:
        await life.end("failed", exc)
        raise
    finally:
        claim_var.reset(token)
    inner: Callable[[], AsyncIterator[Any]] = result.stream_events

    async def stream_events() -> AsyncIterator[Any]:
        try:
            try:
                async for event in inner():
                    yield event
            except Exception as exc:
                state = claim.state
                error, decision, agent_name = await _failure(life, state, guarded, input, exc)
                if decision is not None:
                    _failures.refuse_retry(state, "its events were streamed already", agent_name)
                await _give_up(life, agent_name, error, exc)
            if await _paused(life, claim.state, result):
                return
            reason = await life.stop(result, False)
            if reason is not None:
                _failures.refuse_stop(claim.state, reason, 0)
            await life.end("completed")
        except BaseException as exc:  # cancelled, closed before its end, or ended above
            await life.abandon(exc)  # nothing when the run ended already
            raise

    setattr(result, "stream_events", stream_events)  # noqa: B010  # an instance's own method
    return result
