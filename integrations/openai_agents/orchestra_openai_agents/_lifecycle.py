"""The parts of a bridged run the entry points share (internal).

``Lifecycle`` holds one run's span and fires the run-level events the SDK has no callback
for (``SessionStart``, ``UserPromptSubmit``, ``Stop``, ``StopFailure``, ``SessionEnd``);
``Composed`` calls the bridge's ``RunHooks`` then the user's own; the rest prepares a run
and decides whether a failed one may be rerun.
"""

from __future__ import annotations

import dataclasses
import inspect
import uuid
from typing import TYPE_CHECKING, Any, Final

from agents import AgentsException, ModelSettings, RunConfig, RunHooks, RunState, UserError
from agents.retry import ModelRetrySettings, RetryDecision, RetryPolicyContext

from orchestra import DispatchError
from orchestra.bridge import RunBudgets, RunRecord
from orchestra.tracing.names import ATTR_RUN_OK
from orchestra_openai_agents import _failures, _spans
from orchestra_openai_agents._computer import guards_a_computer, with_computer_notes
from orchestra_openai_agents._invoker import is_guarded
from orchestra_openai_agents._spans import current
from orchestra_openai_agents._state import Claim, end_span, input_text, state_for
from orchestra_openai_agents._state import RunState as BridgeState

if TYPE_CHECKING:
    from agents import Agent
    from opentelemetry.trace import Span

    from orchestra_openai_agents._hooks import OrchestraRunHooks

__all__ = [
    "CONVERSATION_KWARGS",
    "Composed",
    "Lifecycle",
    "continuation",
    "prepare",
    "rollback_session",
    "run_config",
    "session_size",
    "unwrap",
    "why_not_rerun",
    "with_context",
]

CONVERSATION_KWARGS: Final = (
    "conversation_id",
    "previous_response_id",
    "auto_previous_response_id",
)


def run_config(bridge: OrchestraRunHooks, given: Any) -> Any:
    """``run_config`` with the bridge's model retry policy when hooks answer failures."""
    if not bridge._agents.has("on_failure"):
        return given
    config = given if isinstance(given, RunConfig) else RunConfig(**(given or {}))
    settings = config.model_settings or ModelSettings()
    user = settings.retry
    fallback = user.policy if user is not None else None

    async def policy(context: RetryPolicyContext) -> RetryDecision:
        decision = await _failures.model_retry(bridge, context)
        if decision.retry or fallback is None:
            return decision
        answer = fallback(context)
        answer = await answer if inspect.isawaitable(answer) else answer
        return answer if isinstance(answer, RetryDecision) else RetryDecision(retry=bool(answer))

    retry = ModelRetrySettings(
        max_retries=max(bridge.max_attempts, (user.max_retries or 0) if user else 0),
        backoff=user.backoff if user is not None else None,
        policy=policy,
    )
    return dataclasses.replace(config, model_settings=settings.resolve(ModelSettings(retry=retry)))


def unwrap(error: Exception) -> Exception:
    """The error under the SDK's ``UserError`` wrapper of a tool's (or hook's) exception."""
    cause = error.__cause__
    wrapped = isinstance(cause, Exception) and not isinstance(cause, AgentsException)
    return cause if isinstance(error, UserError) and wrapped else error  # type: ignore[return-value]


class Composed(RunHooks[Any]):
    """The bridge's hooks, then the user's own ``RunHooks``, at every moment."""

    def __init__(self, bridge: RunHooks[Any], user: RunHooks[Any]) -> None:
        self.bridge = bridge
        self.user = user

    async def on_agent_start(self, context: Any, agent: Any) -> None:
        refused = _refused_handoff(context)  # the same agent goes on: not a new start
        await self.bridge.on_agent_start(context, agent)
        if not refused:
            await self.user.on_agent_start(context, agent)

    async def on_agent_end(self, context: Any, agent: Any, output: Any) -> None:
        await self.bridge.on_agent_end(context, agent, output)
        await self.user.on_agent_end(context, agent, output)

    async def on_handoff(self, context: Any, from_agent: Any, to_agent: Any) -> None:
        await self.bridge.on_handoff(context, from_agent, to_agent)
        if not _refused_handoff(context):  # the guard refused it: no handoff happened
            await self.user.on_handoff(context, from_agent, to_agent)

    async def on_tool_start(self, context: Any, agent: Any, tool: Any) -> None:
        await self.bridge.on_tool_start(context, agent, tool)
        await self.user.on_tool_start(context, agent, tool)

    async def on_tool_end(self, context: Any, agent: Any, tool: Any, result: Any) -> None:
        await self.bridge.on_tool_end(context, agent, tool, result)
        await self.user.on_tool_end(context, agent, tool, result)

    async def on_llm_start(self, context: Any, agent: Any, system_prompt: Any, items: Any) -> None:
        await self.bridge.on_llm_start(context, agent, system_prompt, items)
        await self.user.on_llm_start(context, agent, system_prompt, items)

    async def on_llm_end(self, context: Any, agent: Any, response: Any) -> None:
        await self.bridge.on_llm_end(context, agent, response)
        await self.user.on_llm_end(context, agent, response)


def with_context(input: Any, messages: list[str]) -> Any:
    """The run's input with hooks' context messages before it, as developer messages."""
    if not messages:
        return input
    items = [{"role": "user", "content": input}] if isinstance(input, str) else list(input)
    return [{"role": "developer", "content": message} for message in messages] + items


# Claude Code's StopFailure error types, by the HTTP status of a model client's error
_ERROR_KINDS: Final = {
    400: "invalid_request",
    401: "authentication_failed",
    403: "authentication_failed",
    404: "model_not_found",
    429: "rate_limit",
}


def error_kind(error: BaseException) -> str:
    """StopFailure's ``error``: Claude Code's error type of a run's error, else ``unknown``.

    Read from the model client's HTTP status (``status_code``, as openai's errors have
    it): 429 ``rate_limit``, 401/403 ``authentication_failed``, 400 ``invalid_request``,
    404 ``model_not_found``, 5xx ``server_error``.
    """
    status = getattr(error, "status_code", None)
    if not isinstance(status, int):
        return "unknown"
    return _ERROR_KINDS.get(status, "server_error" if status >= 500 else "unknown")


class Lifecycle:
    """One call of an entry point: its span and its session-level events."""

    def __init__(
        self,
        bridge: OrchestraRunHooks,
        agent: Agent[Any],
        kwargs: dict[str, Any],
        workflow: str | None,
    ) -> None:
        self.bridge = bridge
        self.agent = agent
        self.run_id = uuid.uuid4().hex
        session = kwargs.get("session")
        self.session = session
        session_id = getattr(session, "session_id", None) or kwargs.get("conversation_id")
        self.fields: dict[str, Any] = {"agent_name": agent.name}
        if session_id:
            self.fields["session_id"] = str(session_id)
        workflow = workflow or agent.name
        self.span: Span | None = _spans.run_span(str(workflow), self.run_id, session_id)
        self.budgets = RunBudgets(())  # the run's own, once its entry point opened them
        self.claimed: Claim | None = None  # the current attempt's
        self.ended = False  # after_run was called and the span ended (end or abandon)
        tasks = bridge._tasks  # before_run/after_run of the TaskHooks: the run's
        has_run_hooks = tasks.has("before_run") or tasks.has("after_run")
        self.record = RunRecord(str(workflow), self.run_id) if has_run_hooks else None

    def claim(self, attempt: int, errors: tuple[BaseException, ...]) -> Claim:
        self.claimed = Claim(self.run_id, attempt, errors, self.span)
        return self.claimed

    async def start(self, input: Any) -> Any:
        """``before_run``, ``SessionStart``, then ``UserPromptSubmit`` for a new input.

        The hooks' context messages are prepended to the input; a ``Fail`` of
        ``before_run`` refuses the run (``DispatchError``) before anything else.
        """
        if self.record is not None:
            refusal, by = await self.record.before_run(self.bridge._tasks)
            if refusal is not None:
                why = refusal.reason or f"failed by {by}"
                refused = DispatchError(
                    f"the run of agent {self.agent.name!r} was refused by {by}: {why}",
                    agent=self.agent.name,
                    reason=refusal.reason,
                )
                await self.end("refused", why, failure=refused)
                raise refused
        registry = self.bridge.registry
        if registry is None:
            return input
        resumed = isinstance(input, RunState)
        messages: list[str] = []
        with current(self.span):
            if registry.has_hooks("SessionStart"):
                source = "resume" if resumed else "startup"
                outcome = await registry.fire("SessionStart", {**self.fields, "source": source})
                messages.extend(outcome.messages)
            if not resumed and registry.has_hooks("UserPromptSubmit"):
                prompt = input_text(input)
                outcome = await registry.fire("UserPromptSubmit", {**self.fields, "prompt": prompt})
                if outcome.blocked:
                    reason = outcome.reason or f"blocked at {outcome.decided_by}"
                    refused = DispatchError(
                        f"the prompt to agent {self.agent.name!r} was refused by a "
                        f"UserPromptSubmit hook: {reason}",
                        agent=self.agent.name,
                        reason=reason,
                    )
                    await self.end("refused", reason, failure=refused)
                    raise refused
                messages.extend(outcome.messages)
        return input if resumed else with_context(input, messages)

    async def stop(self, result: Any, active: bool) -> str | None:
        """Fire ``Stop`` for the final output: the reason of a block, or None."""
        registry = self.bridge.registry
        if registry is None or not registry.has_hooks("Stop"):
            return None
        output = result.final_output
        payload = {
            **self.fields,
            "agent_name": result.last_agent.name,
            "stop_hook_active": active,
            "output": output,
            "last_assistant_message": output if isinstance(output, str) else str(output),
        }
        with current(self.span):
            outcome = await registry.fire("Stop", payload)
        if not outcome.blocked:
            return None
        return outcome.reason or f"blocked by a Stop hook at {outcome.decided_by}"

    async def stop_failure(self, agent: str, error: BaseException) -> None:
        """Fire ``StopFailure`` for a run that ended in an error."""
        registry = self.bridge.registry
        if registry is None or not registry.has_hooks("StopFailure"):
            return
        payload = {
            **self.fields,
            "agent_name": agent,
            "error": error_kind(error),
            "error_details": str(error) or type(error).__name__,
            "error_type": type(error).__qualname__,
        }
        with current(self.span):
            await registry.fire("StopFailure", payload)

    async def end(
        self,
        reason: str,
        error: BaseException | str | None = None,
        *,
        failure: BaseException | None = None,
    ) -> None:
        """Fire ``SessionEnd``, call ``after_run``, end the run's span.

        ``after_run``'s ``RunResult`` holds the error that ended the run (``failure``, else
        ``error`` when it is one: a ``BudgetExceeded``, say) and what its budgets spent.
        """
        registry = self.bridge.registry
        try:
            if registry is not None and registry.has_hooks("SessionEnd"):
                with current(self.span):
                    await registry.fire("SessionEnd", {**self.fields, "reason": reason})
        finally:
            self.ended = True
            if failure is None and isinstance(error, BaseException):
                failure = error
            await self._after_run(failure)
            span, self.span = self.span, None
            if span is not None and reason != "interrupted":  # a paused run is unfinished
                span.set_attribute(ATTR_RUN_OK, reason == "completed")
            self.budgets.annotate(span)
            end_span(span, error)

    async def abandon(self, error: BaseException) -> None:
        """End a run that nothing else ended (cancelled from outside, say), once.

        ``after_run`` sees ``error`` (shielded), every span of the run ends, what its
        budgets spent is on the run span; no other hook runs.
        """
        if self.ended:
            return
        self.ended = True
        state = self.claimed.state if self.claimed is not None else None
        if state is not None:
            for open_span in state.open_spans():
                end_span(open_span, "cancelled")
            state.llm_span = state.span = None
            state.ctx = None
        await self._after_run(error)
        span, self.span = self.span, None
        self.budgets.annotate(span)
        end_span(span, error if isinstance(error, Exception) else "cancelled")

    async def _after_run(self, failure: BaseException | None) -> None:
        """``after_run`` (if a hook has it), its result holding ``failure`` and the budgets."""
        if self.record is not None:
            self.record.budgets = self.budgets
            with current(self.span):
                await self.record.after_run(self.bridge._tasks, failure)


def prepare(
    bridge: OrchestraRunHooks, agent: Agent[Any], input: Any, kwargs: dict[str, Any]
) -> tuple[Agent[Any], dict[str, Any], str | None]:
    """The guarded agent, the ``Runner`` keyword arguments (hooks composed), the workflow."""
    kwargs = dict(kwargs)
    config = kwargs.get("run_config")
    named = config.get("workflow_name") if isinstance(config, dict) else None
    if isinstance(config, RunConfig) and config.workflow_name != RunConfig.workflow_name:
        named = config.workflow_name
    user = kwargs.pop("hooks", None)
    kwargs["hooks"] = bridge if user is None else Composed(bridge, user)
    if bridge._agents.has("on_failure"):
        kwargs["run_config"] = run_config(bridge, kwargs.get("run_config"))
    if isinstance(input, RunState):
        pending = input.get_interruptions()
        unguarded = [item.agent.name for item in pending if not is_guarded(item.agent)]
        if unguarded:
            raise ValueError(
                f"this RunState holds agents that are not guarded ({unguarded[0]!r}): restore "
                "it with the guarded agent, RunState.from_string(bridge.guard(agent), ...)"
            )
    guarded = bridge.guard(agent)
    if guards_a_computer(guarded):  # a refused computer action: the model is told
        kwargs["run_config"] = with_computer_notes(kwargs.get("run_config"))
    return guarded, kwargs, named


async def session_size(session: Any) -> int | None:
    if session is None:
        return None
    return len(await session.get_items())


async def rollback_session(session: Any, size: int | None) -> None:
    """Remove the items a failed attempt added to ``session``."""
    if session is None or size is None:
        return
    extra = len(await session.get_items()) - size
    for _ in range(max(extra, 0)):
        await session.pop_item()


def why_not_rerun(state: BridgeState | None, input: Any, kwargs: dict[str, Any]) -> str | None:
    """Why a ``Retry`` of the whole run would repeat work, or None when it is safe.

    The attempt cap is ``RunAttempts``' own, judged before this veto.
    """
    if isinstance(input, RunState):
        return "it resumed a paused run, which a rerun cannot start again"
    if any(kwargs.get(name) for name in CONVERSATION_KWARGS):
        return "the conversation is kept by the server, which a rerun would extend twice"
    if state is not None and state.tool_calls:
        return (
            f"{state.tool_calls} tool call(s) ran to their end in the failed attempt, "
            "and a rerun would repeat them"
        )
    return None


def continuation(result: Any, reason: str, kwargs: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """The input (and arguments) that continue a run a ``Stop`` hook blocked."""
    message = {"role": "user", "content": reason}
    if kwargs.get("session") is not None or kwargs.get("conversation_id"):
        return [message], kwargs
    if kwargs.get("previous_response_id") or kwargs.get("auto_previous_response_id"):
        return [message], {**kwargs, "previous_response_id": result.last_response_id}
    return [*result.to_input_list(), message], kwargs


def _refused_handoff(context: Any) -> bool:
    state = state_for(context, create=False)
    return state is not None and state.denied_handoff
