"""``ToolHooks``: the tool-call protocol's two thin drivers, async and sync.

The protocol itself is in ``_tool_flow`` (generators without I/O); a driver performs the
effects a flow yields: ``Fire`` is ``registry.fire`` (awaited, or run to its end from
synchronous code), ``Consult`` calls the ``ask`` callback. The span a bridge opens
around each call is ``_tool_span``'s.
"""

from __future__ import annotations

import contextvars
import inspect
from collections.abc import Awaitable, Callable, Coroutine, Generator, Mapping
from typing import TYPE_CHECKING, Any, Final, TypeAlias, TypeVar, final

import attrs

from orchestra._approval import Approval
from orchestra._spending import Audits, charge_tool, charged_by_caller
from orchestra._spending import active as active_budgets
from orchestra._tool_call import FailedAnswer, PreAnswer, Proceed, Refuse, ToolCall
from orchestra._tool_flow import (
    Effect,
    Fire,
    failed_flow,
    mark_decision,
    post_flow,
    pre_flow,
    refuse_flow,
)

if TYPE_CHECKING:
    from orchestra.skills import HookOutcome, HookRegistry

__all__ = ["AskCallback", "OutcomeCallback", "ToolHooks", "run_blocking"]

_T = TypeVar("_T")

AskCallback: TypeAlias = Callable[
    [str, Mapping[str, Any], "str | None"], "bool | Awaitable[bool | None] | None"
]
"""Settles a hook's ``ask``: ``(tool_name, tool_input, reason)`` -> approve (True),
refuse (False) or no answer (None: the call waits for a person where the engine can
pause, else it is refused)."""
OutcomeCallback: TypeAlias = Callable[[str, "HookOutcome"], "Awaitable[None] | None"]
"""Gets the outcome of each tool event fired that had hooks: ``(event, outcome)``."""

TOOL_EVENTS: Final = ("PreToolUse", "PostToolUse", "PostToolUseFailure")
_PRE: Final = "PreToolUse"
_Held: TypeAlias = "list[tuple[str, Mapping[str, Any], HookOutcome]]"  # until it is charged


@final
class ToolHooks:
    """A registry's tool events, driven for one engine: ``pre``, ``post``, ``failed``.

    Build one per bridge (it reads which events have hooks once); ``watching`` False
    means no tool event has hooks and the bridge may call the tool as it is. Every
    method has a ``*_sync`` twin for engines that call tools from synchronous code.

    Args:
        registry: the hooks (``orchestra.skills.load(...)``); None: no tool hooks.
        ask: settles a hook's ``ask`` before the engine would pause or refuse the call.
        on_outcome: called with each fired event's outcome that had hooks.
        inner: the calls are a guarded function's (``@registry.guard``), perhaps the body
            of an engine's call this protocol charged to the budgets already.
    """

    __slots__ = (
        "_denied",
        "ask",
        "has_failed",
        "has_post",
        "has_pre",
        "hooked",
        "inner",
        "on_outcome",
        "registry",
    )

    def __init__(
        self,
        registry: HookRegistry | None,
        *,
        ask: AskCallback | None = None,
        on_outcome: OutcomeCallback | None = None,
        inner: bool = False,
    ) -> None:
        self.registry = registry
        self.inner = inner
        self.ask = ask
        self.on_outcome = on_outcome
        has = registry.has_hooks if registry is not None else (lambda _event: False)
        self.has_pre = has("PreToolUse")
        self.has_post = has("PostToolUse")
        self.has_failed = has("PostToolUseFailure")
        self._denied = has("PermissionDenied")
        self.hooked = self.has_pre or self.has_post or self.has_failed
        """Whether any tool event has hooks."""

    @property
    def watching(self) -> bool:
        """Tool hooks, or a budget open here (else a call needs nothing from here)."""
        return self.hooked or bool(active_budgets())

    @property
    def charges_only(self) -> bool:
        """Whether nothing but budgets judges the calls: no ``registry``, no ``on_outcome``.

        Then ``charge`` (and ``ran`` after the body) does all that ``pre`` and ``post``
        would, without a ``ToolCall``.
        """
        return self.registry is None and self.on_outcome is None

    def charge(self, tool_name: str) -> str | None:
        """Charge a call of ``tool_name`` to the budgets open here, as ``pre`` would.

        For a bridge whose calls nothing but budgets judges (``charges_only``): the same
        count and refusal as ``pre``'s, without a ``ToolCall``. What audit-mode budgets
        would refuse stays on their counts (the run's result and spans), as ``pre``
        leaves it with nothing to record it. Call ``ran`` once the body has run.

        Returns:
            The refusal's reason past a limit (``budget: tool calls 2/2``), None: the call
            goes on.
        """
        return _charge(tool_name, self.inner)[0]

    def ran(self) -> None:
        """The body of a call ``charge`` let go on has run (or failed), as ``post`` says.

        A guarded function of the same name called after it is charged again.
        """
        charged_by_caller(None)

    # -- the flows -----------------------------------------------------------------------

    def _pre(self, call: ToolCall, can_pause: bool) -> Generator[Effect, Any, PreAnswer] | None:
        if not self.has_pre:
            return None
        consult = self.ask is not None
        return pre_flow(call, denied_hooks=self._denied, consult=consult, can_pause=can_pause)

    # -- async driver ----------------------------------------------------------------------

    async def pre(self, call: ToolCall, *, can_pause: bool = False, mark: bool = True) -> PreAnswer:
        """``PreToolUse``: ``Proceed``, ``Mock`` (a mock), ``Refuse`` or ``Ask``.

        ``Ask`` comes back only with ``can_pause`` (the engine pauses the call for a
        person); else an unanswered ``ask`` is a ``Refuse``. With ``mark``, the answer
        is put on the current span (``mark_decision``): the call's ``tool_span``.
        """
        flow = self._pre(call, can_pause)
        held = self._held()
        answer = Proceed(call.tool_input) if flow is None else await self._drive(flow, held)
        answer, audits = _charged(call, answer, self.inner)
        if held is not None and (held or audits):
            await self._deliver(call, held, audits)
        if mark and (flow is not None or type(answer) is Refuse):
            mark_decision(answer)
        return answer

    async def post(self, call: ToolCall, output: Any, *, mocked: bool = False) -> Any:
        """``PostToolUse`` on what the tool (or a mock) returned: what the caller gets."""
        charged_by_caller(None)  # the body ran
        if not self.has_post:
            return output
        return await self._drive(post_flow(call, output, mocked=mocked))

    async def failed(
        self, call: ToolCall, error: BaseException, *, detail: Mapping[str, Any] | None = None
    ) -> FailedAnswer:
        """``PostToolUseFailure`` for a tool that raised: ``Raise`` (or ``Refuse``).

        ``Refuse`` answers a ``ToolDenied`` of a guard inside the tool: no failure, a
        refusal with that guard's reason and ``retry``.
        """
        charged_by_caller(None)  # the body ran
        flow = failed_flow(call, error, failure_hooks=self.has_failed, detail=detail)
        return await self._drive(flow)

    async def refuse(self, call: ToolCall, reason: str) -> Refuse:
        """Refuse ``call`` for the bridge's own ``reason`` (``PermissionDenied`` fires)."""
        answer = await self._drive(refuse_flow(call, reason, denied_hooks=self._denied))
        mark_decision(answer)
        return answer

    async def resume(
        self, call: ToolCall, approval: Approval, *, can_pause: bool = False
    ) -> PreAnswer:
        """The paused ``call`` after a person answered (``orchestra.bridge.resume``).

        approve: ``Proceed`` with the pending input (no guard asks again); deny: ``Refuse``
        with the person's reason (``PermissionDenied`` fires); edit: ``pre`` on the new
        input, judged again by every guard (it may refuse, mock, or ask again).
        """
        if approval.decision == "deny":
            return await self.refuse(call, approval.reason or "denied by a person")
        assert approval.tool_input is not None
        edited = call.with_input(approval.tool_input)
        if approval.decision == "edit":
            answer = await self.pre(attrs.evolve(edited, approved=False), can_pause=can_pause)
            return _against(call, answer)
        return _against(call, _approved(edited, self.inner))

    async def _drive(self, flow: Generator[Effect, Any, _T], held: _Held | None = None) -> _T:
        sent: Any = None
        try:
            while True:
                effect = flow.send(sent)
                sent = await self._perform(effect, held)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]  # the flow's answer

    def _held(self) -> _Held | None:
        """Where ``pre`` keeps its events until the call is charged, if a budget is open.

        A budget in audit mode adds what it would have refused the call for to the
        call's ``PreToolUse`` outcome (``HookOutcome.audited``) before the registry's
        ``record=`` keeps it and ``on_outcome`` hears it.
        """
        watched = self.registry is not None or self.on_outcome is not None
        return [] if watched and active_budgets() else None

    async def _deliver(self, call: ToolCall, held: _Held, audits: Audits) -> None:
        """Record the held events and hand them to ``on_outcome``, with the budgets' audits."""
        if audits:
            from orchestra._budget_audit import with_audits  # only when a budget audits

            last = next((i for i in reversed(range(len(held))) if held[i][0] == _PRE), None)
            if last is None:  # no hook was asked: the budget's answer is the event's
                held.append((_PRE, call.payload(), with_audits(None, audits)))
            else:
                event, payload, outcome = held[last]
                held[last] = (event, payload, with_audits(outcome, audits))
        from orchestra.skills._firing.record import keep  # orchestra.skills imports this module

        for event, payload, outcome in held:
            if self.registry is not None:
                keep(self.registry, event, payload, outcome)
            if self.on_outcome is not None and (outcome.records or outcome.audited):
                seen = self.on_outcome(event, outcome)
                if inspect.isawaitable(seen):
                    await seen

    async def _perform(self, effect: Effect, held: _Held | None = None) -> Any:
        if isinstance(effect, Fire):
            assert self.registry is not None
            if held is not None:
                from orchestra.skills._firing.record import fire_held  # a budget is open: rare

                outcome = await fire_held(self.registry, effect.event, effect.payload)
                held.append((effect.event, effect.payload, outcome))
                return outcome
            outcome = await self.registry.fire(effect.event, effect.payload)
            if self.on_outcome is not None and outcome.records:
                seen = self.on_outcome(effect.event, outcome)
                if inspect.isawaitable(seen):
                    await seen
            return outcome
        assert self.ask is not None
        answer = self.ask(effect.tool_name, effect.tool_input, effect.reason)
        return await answer if inspect.isawaitable(answer) else answer

    # -- sync driver -------------------------------------------------------------------------

    def pre_sync(self, call: ToolCall, *, can_pause: bool = False, mark: bool = True) -> PreAnswer:
        """``pre`` from synchronous code (each event fires on an event loop of its own)."""
        flow = self._pre(call, can_pause)
        held = self._held()
        answer = Proceed(call.tool_input) if flow is None else self._drive_sync(flow, held)
        answer, audits = _charged(call, answer, self.inner)
        if held is not None and (held or audits):
            run_blocking(lambda: self._deliver(call, held, audits))
        if mark and (flow is not None or type(answer) is Refuse):
            mark_decision(answer)
        return answer

    def post_sync(self, call: ToolCall, output: Any, *, mocked: bool = False) -> Any:
        """``post`` from synchronous code."""
        charged_by_caller(None)  # the body ran
        if not self.has_post:
            return output
        return self._drive_sync(post_flow(call, output, mocked=mocked))

    def failed_sync(
        self, call: ToolCall, error: BaseException, *, detail: Mapping[str, Any] | None = None
    ) -> FailedAnswer:
        """``failed`` from synchronous code."""
        charged_by_caller(None)  # the body ran
        flow = failed_flow(call, error, failure_hooks=self.has_failed, detail=detail)
        return self._drive_sync(flow)

    def refuse_sync(self, call: ToolCall, reason: str) -> Refuse:
        """``refuse`` from synchronous code."""
        answer = self._drive_sync(refuse_flow(call, reason, denied_hooks=self._denied))
        mark_decision(answer)
        return answer

    def resume_sync(
        self, call: ToolCall, approval: Approval, *, can_pause: bool = False
    ) -> PreAnswer:
        """``resume`` from synchronous code."""
        if approval.decision == "deny":
            return self.refuse_sync(call, approval.reason or "denied by a person")
        assert approval.tool_input is not None
        edited = call.with_input(approval.tool_input)
        if approval.decision == "edit":
            answer = self.pre_sync(attrs.evolve(edited, approved=False), can_pause=can_pause)
            return _against(call, answer)
        return _against(call, _approved(edited, self.inner))

    def _drive_sync(self, flow: Generator[Effect, Any, _T], held: _Held | None = None) -> _T:
        sent: Any = None
        try:
            while True:
                effect = flow.send(sent)
                sent = run_blocking(lambda effect=effect: self._perform(effect, held))  # type: ignore[misc]
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]  # the flow's answer


def _charged(call: ToolCall, answer: PreAnswer, inner: bool) -> tuple[PreAnswer, Audits]:
    """A call going ahead, charged to the budgets open here: a refusal past their limit.

    Only a call whose body will run counts (not a mock, a refusal or a pause); a guarded
    function that is the body of a call charged by its engine counts once. Also returns
    what budgets in audit mode would have refused it for.
    """
    if type(answer) is not Proceed:
        return answer, ()
    refusal, audits = _charge(call.tool_name, inner)
    return (answer if refusal is None else Refuse(refusal)), audits


def _charge(tool_name: str, inner: bool) -> tuple[str | None, Audits]:
    """Charge one call of ``tool_name`` about to run: the refusal (None: charged), audits."""
    refusal, audits = charge_tool(tool_name, inner=inner)  # one read without budgets
    if refusal is None and not inner and active_budgets():
        charged_by_caller(tool_name)
    return refusal, audits


def _approved(call: ToolCall, inner: bool) -> PreAnswer:
    """An approved call goes ahead with its pending input (charged to the budgets)."""
    answer, _ = _charged(call, Proceed(call.tool_input), inner)  # audits: on the run's spans
    mark_decision(answer)
    return answer


def _against(call: ToolCall, answer: PreAnswer) -> PreAnswer:
    """A resumed call's ``Proceed``, ``modified`` when its input is not the call's own."""
    if type(answer) is Proceed and not answer.modified and answer.tool_input != call.tool_input:
        return Proceed(answer.tool_input, modified=True)
    return answer


def run_blocking(make: Callable[[], Coroutine[Any, Any, _T]]) -> _T:
    """Run the coroutine ``make()`` returns to its end from synchronous code.

    On an event loop of its own (``asyncio.run``), or, when this thread already runs a
    loop, on a short-lived helper thread with a copy of the caller's context (its run,
    its span and its ambient policy go with it).
    """
    import asyncio  # here: ``import orchestra.skills`` stays light (no ssl, no socket)
    from concurrent.futures import ThreadPoolExecutor

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make())
    context = contextvars.copy_context()
    with ThreadPoolExecutor(1, thread_name_prefix="orchestra-hooks") as pool:
        return pool.submit(context.run, lambda: asyncio.run(make())).result()
