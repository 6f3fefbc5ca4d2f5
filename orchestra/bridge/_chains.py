"""The hook chains around a tool call, written once for every agent bridge.

A bridge whose engine runs the tool itself (the Claude Agent SDK's CLI, CrewAI, the
OpenAI Agents SDK, pydantic-ai) sorts the user's hooks into two ``HookChain``s: tool calls
are tasks (``TaskHooks``), delegations and agent runs subagent dispatches
(``SubagentHooks``). ``split_hooks`` does that; ``ToolChains`` adds the registry's
tool-call protocol (``ToolHooks``) and the ambient policy, and ``judge`` is the one rule
for a ``before_*`` hook's new input: it goes back to every guard (``ToolHooks.pre``)
before the tool runs, at most ``MAX_REJUDGE`` rounds.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping
from contextvars import copy_context
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar, Final, TypeAlias

from orchestra._ambient import resolve_policy
from orchestra._chain import Carries, HookChain
from orchestra._decisions import Delegate, Fail, GiveOutput, Replace, Skip
from orchestra._errors import HookError
from orchestra._hooks import SubagentHookContext, SubagentHooks, TaskHooks
from orchestra._moments import declared_answers, overrides
from orchestra._spending import budgets_of, enter_budgets
from orchestra._tool_call import Ask, Mock, PreAnswer, Proceed, Refuse, ToolCall
from orchestra._tool_hooks import OutcomeCallback, ToolHooks
from orchestra.dag import Task, TaskState
from orchestra.tracing import get_tracer

if TYPE_CHECKING:
    from orchestra._hooks import TaskHookContext
    from orchestra.skills import HookOutcome, HookRegistry

__all__ = [
    "DISPATCH_AS_TOOL",
    "MAX_REJUDGE",
    "TOOL_AS_TASK",
    "Before",
    "Carries",
    "ToolChains",
    "judge",
    "no_agents",
    "split_hooks",
]

MAX_REJUDGE: Final = 3
"""How often a hook's new input goes back to the guards before the call is refused."""


DISPATCH_AS_TOOL: Final[Carries] = MappingProxyType(
    {
        "before_dispatch": (Fail, Delegate, Replace),
        "after_dispatch": (Replace,),
        "on_failure": (),
    }
)
"""What a bridge carries out of a subagent dispatch its engine runs as a tool call (Claude
Code's ``Agent`` tool, a CrewAI delegation): ``before_dispatch`` refuses, redirects or
rewrites the call, ``after_dispatch`` rewrites its output; a failed one is only observed
(the engine ran the tool: nothing here can run it again). A ``ToolChains``'
``agent_answers``."""

TOOL_AS_TASK: Final[Carries] = MappingProxyType(
    {
        "before_execute": (Skip, Fail, Replace),
        "after_execute": (Replace,),
        "on_failure": (),
    }
)
"""What a bridge carries out of a tool call its engine runs (a task): ``before_execute``
skips or fails the call, rewrites its input or gives its output, ``after_execute`` rewrites
the output; a failure is only observed (an engine that can run the tool again carries out
more: ``{**TOOL_AS_TASK, "on_failure": (Again, Skip)}``). A ``ToolChains``' ``task_answers``."""

Before: TypeAlias = Callable[[ToolCall], Awaitable["Mapping[str, Any] | str | GiveOutput | None"]]
"""A bridge's ``before_*`` moment for the input the guards let through: ``None`` (run it),
a new input (judged again), a refusal's reason, or the output the tool gives unrun."""


def split_hooks(
    hooks: Iterable[object],
    timeout: float | None,
    *,
    tasks: Carries | None = None,
    agents: Carries | None = None,
) -> tuple[HookChain, HookChain]:
    """The (tool-call ``TaskHooks``, agent ``SubagentHooks``) chains of ``hooks``.

    One object may be both (``RetryPolicy`` is).

    Args:
        hooks: the user's hooks.
        timeout: each hook call's timeout in seconds (None: none).
        tasks: the answers the bridge carries out at each ``TaskHooks`` moment.
        agents: the same for ``SubagentHooks``.

    Raises:
        TypeError: for an object that is neither a ``TaskHooks`` nor a ``SubagentHooks``,
            or a hook the chains refuse (see ``orchestra.HookChain``).
    """
    hooks = list(hooks)
    for hook in hooks:
        if not isinstance(hook, TaskHooks | SubagentHooks):
            raise TypeError(
                f"{hook!r} is neither a TaskHooks (tool calls) nor a SubagentHooks (agent "
                "runs): subclass one of them"
            )
    return (
        HookChain(
            [h for h in hooks if isinstance(h, TaskHooks)], TaskHooks, timeout, carries=tasks
        ),
        HookChain(
            [h for h in hooks if isinstance(h, SubagentHooks)],
            SubagentHooks,
            timeout,
            carries=agents,
        ),
    )


async def judge(
    tools: ToolHooks, call: ToolCall, before: Before, *, can_pause: bool
) -> PreAnswer | GiveOutput:
    """``PreToolUse`` (``tools.pre``), then ``before``; a new input is judged again.

    Args:
        tools: the registry's tool-call protocol.
        call: the call as the engine made it.
        before: the bridge's ``before_*`` moment (see ``Before``).
        can_pause: whether the engine can pause the call for an ``ask``.

    Returns:
        ``Refuse``, ``Ask`` or ``Mock`` as the guards answered; ``Refuse(reason)`` for a
        ``before`` refusal or an input still rewritten after ``MAX_REJUDGE`` rounds;
        the ``GiveOutput`` a hook gave; else ``Proceed`` with the final input
        (``modified``: a hook changed it).
    """
    changed = False
    for _ in range(MAX_REJUDGE):
        answer = await tools.pre(call, can_pause=can_pause)
        if isinstance(answer, Refuse | Ask | Mock):
            return answer
        if answer.modified:
            call, changed = call.with_input(answer.tool_input), True
        new = await before(call)
        if new is None:
            return Proceed(call.tool_input, modified=changed)
        if isinstance(new, str):
            return Refuse(new)
        if isinstance(new, GiveOutput):
            return new
        call, changed = call.with_input(new), True  # the guards judge it again
    return Refuse(f"the input was still being rewritten after {MAX_REJUDGE} rounds")


def _refuse_uncarried(
    engine: str, hooks: Iterable[object], trait: type, carries: Carries | None
) -> None:
    """Refuse a hook whose moment may answer what ``engine`` does not carry out there.

    What a moment may answer is what its method's return annotation names; what the
    engine carries out there, ``carries`` (as ``HookChain`` takes it) says.

    Raises:
        TypeError: naming the hook, the moment, the answers and what the engine carries out.
    """
    if not carries:
        return
    for hook in hooks:
        for moment, kept in carries.items():
            if not overrides(hook, moment):
                continue
            try:
                named = declared_answers(getattr(type(hook), moment))
            except Exception:  # an annotation its module cannot resolve
                continue
            stray = [c.__name__ for c in named if not any(issubclass(c, k) for k in kept)]
            if stray:
                does = ", ".join(k.__name__ for k in kept) or "no answer"
                raise TypeError(
                    f"{type(hook).__name__}.{moment} may answer {' or '.join(stray)} (its "
                    f"return annotation), which {engine} cannot carry out: at "
                    f"{trait.__name__}.{moment} it carries out {does}. Take "
                    f"{' and '.join(stray)} out of that annotation, or give this hook to an "
                    "engine that carries it out"
                )


class ToolChains:
    """A bridge's registry and Python hooks around the tool calls its engine runs.

    A bridge subclasses it and names the answers it carries out at each moment
    (``task_answers``, ``agent_answers``: ``HookChain``'s ``carries``; None: all).

    Attributes:
        registry: the registry (given, else the ambient policy's).
        tools: its tool-call protocol (``ToolHooks``).
        tasks: the ``TaskHooks`` chain (each tool call a task).
        agents: the ``SubagentHooks`` chain (each delegation a dispatch).
        timeout: each hook call's timeout in seconds (None: none).
        budgets: the budgets of its own hooks and registry, open for the whole run
            (``with self.budgets.charging():`` around the calls they count).
        run_id: the id of this guarded run.
        errors: every hook error of the Python hooks, in order.
    """

    __slots__ = ("agents", "budgets", "errors", "registry", "run_id", "tasks", "timeout", "tools")

    task_answers: ClassVar[Carries | None] = None
    """The answers carried out at each ``TaskHooks`` moment."""
    agent_answers: ClassVar[Carries | None] = None
    """The answers carried out at each ``SubagentHooks`` moment."""
    engine: ClassVar[str | None] = None
    """The engine's name, for a bridge that refuses at load (``TypeError``) a hook given
    to it whose moment's return annotation names an answer it does not carry out there
    (else such an answer is a hook error when it is given). None: not refused at load."""

    def __init__(
        self,
        registry: HookRegistry | None,
        hooks: Iterable[object],
        subagent_hooks: Iterable[object],
        timeout: float | None,
        *,
        on_outcome: OutcomeCallback | None = None,
    ) -> None:
        """Sort the hooks; with none given, those of the ambient policy.

        Args:
            registry: the registry, or None.
            hooks: the ``TaskHooks``.
            subagent_hooks: the ``SubagentHooks``.
            timeout: each hook call's timeout in seconds (None: none).
            on_outcome: ``ToolHooks``' ``on_outcome``.
        """
        hooks, subagent_hooks = tuple(hooks), tuple(subagent_hooks)
        if self.engine is not None:  # the hooks given; ambient ones are an outer engine's
            _refuse_uncarried(self.engine, hooks, TaskHooks, self.task_answers)
            _refuse_uncarried(self.engine, subagent_hooks, SubagentHooks, self.agent_answers)
        # its own budgets (not inherited ones: those count where they are), opened once:
        # the engine calls back in contexts of its own, each charging these
        self.budgets = copy_context().run(enter_budgets, budgets_of((*hooks, registry)))
        ambient = resolve_policy(registry, hooks, kinds=(TaskHooks,))
        subagent_hooks = subagent_hooks or resolve_policy(kinds=(SubagentHooks,)).hooks
        self.registry = ambient.registry
        self.tools = ToolHooks(ambient.registry, on_outcome=on_outcome)
        self.timeout = timeout
        self.tasks = HookChain(list(ambient.hooks), TaskHooks, timeout, carries=self.task_answers)
        self.agents = HookChain(
            list(subagent_hooks), SubagentHooks, timeout, carries=self.agent_answers
        )
        self.run_id = uuid.uuid4().hex
        self.errors: list[HookError] = []

    async def fire(self, event: str, payload: Mapping[str, Any]) -> HookOutcome | None:
        """``event`` through the registry, when it has hooks for it."""
        if self.registry is None or not self.registry.has_hooks(event):
            return None
        return await self.registry.fire(event, payload)

    async def call(self, chain: HookChain, moment: str, subject: str, *args: Any) -> Any:
        """``chain.call`` with this run's error list and tracer: ``(decision, by)``."""
        return await chain.call(
            moment, *args, subject=subject, on_error=self.errors.append, tracer=get_tracer()
        )

    async def before_task(
        self, ctx: TaskHookContext, tool_input: Mapping[str, Any]
    ) -> tuple[Mapping[str, Any] | str | GiveOutput | None, TaskState | None]:
        """A tool call's ``before_execute`` moment, as a ``Before`` answers it, and its end.

        ``Skip`` or ``Fail``: the refusal's reason (the decision's, else ``"skip by X"``),
        the call ending SKIPPED or FAILED; ``Replace(GiveOutput(v))``: the output given,
        the call ending SUCCEEDED; ``Replace`` of another mapping: the new input (judged
        again); else None. The state is None while the call goes on: where it is not, the
        bridge calls ``on_end`` (``end_task``) with it.
        """
        decision, by = await self.call(self.tasks, "before_execute", ctx.task.id, ctx)
        if isinstance(decision, Skip | Fail):
            state = TaskState.SKIPPED if isinstance(decision, Skip) else TaskState.FAILED
            return decision.reason or f"{type(decision).__name__.lower()} by {by}", state
        if isinstance(decision, Replace) and isinstance(decision.value, GiveOutput):
            return decision.value, TaskState.SUCCEEDED
        if isinstance(decision, Replace) and isinstance(decision.value, Mapping):
            return (dict(decision.value) if decision.value != tool_input else None), None
        return None, None

    async def before_agent(
        self, ctx: SubagentHookContext, tool_input: Mapping[str, Any], *, agent: str, text: str
    ) -> Mapping[str, Any] | str | None:
        """A dispatch's ``before_dispatch`` moment, where the engine runs it as a tool call.

        Answers as a ``Before`` does: ``Fail``'s reason (else ``"failed by X"``); a
        ``Delegate`` to another agent: the input with ``tool_input[agent]`` that agent; a
        ``Replace`` of the text: the input with ``tool_input[text]`` it; else None.

        Args:
            ctx: the dispatch's context.
            tool_input: the call's input.
            agent: the input's key that names the agent (``"subagent_type"``).
            text: the input's key that holds the text dispatched (``"prompt"``).
        """
        decision, by = await self.call(self.agents, "before_dispatch", ctx.subagent_name, ctx)
        if isinstance(decision, Fail):
            return decision.reason or f"failed by {by}"
        if isinstance(decision, Delegate) and decision.agent != tool_input.get(agent):
            return {**tool_input, agent: decision.agent}
        if isinstance(decision, Replace) and decision.value != tool_input.get(text):
            return {**tool_input, text: str(decision.value)}
        return None

    async def after(
        self, chain: HookChain, subject: str, ctx: Any, result: Any, output: Any
    ) -> Any:
        """A call's ``after_execute`` (or ``after_dispatch``) moment: the output it ends with.

        Args:
            chain: ``tasks`` (``after_execute``) or ``agents`` (``after_dispatch``).
            subject: the call's name in hook errors (the tool's).
            ctx: the call's ``TaskHookContext`` (or ``SubagentHookContext``).
            result: what the hooks see (the output, or the dispatch's ``SubagentResult``).
            output: what the call ends with unless a hook's ``Replace`` says otherwise.
        """
        moment = "after_execute" if chain is self.tasks else "after_dispatch"
        if not chain.has(moment):
            return output
        decision, _ = await self.call(chain, moment, subject, ctx, result)
        return decision.value if isinstance(decision, Replace) else output

    async def end_task(self, ctx: TaskHookContext, state: TaskState) -> None:
        """A tool call's ``on_end`` moment (once per call: the bridge sees to it)."""
        if self.tasks.has("on_end"):
            await self.call(self.tasks, "on_end", ctx.task.id, ctx, state)

    def task_context(
        self,
        tool_name: str,
        tool_input: Mapping[str, Any],
        *,
        fields: Mapping[str, Any],
        attempt: int = 1,
        executor: str | None = None,
        run_id: str | None = None,
    ) -> TaskHookContext:
        """The hook context of one attempt of a tool call (the task id: the tool's name).

        ``metadata`` is ``fields`` and the ``tool_input``; the task's body is never run
        (the engine runs the tool).
        """
        tool_input = dict(tool_input)
        task = Task(id=tool_name, fn=_not_here, metadata={**fields, "tool_input": tool_input})
        return HookChain.task_context(
            task=task,
            attempt=attempt,
            executor=executor,
            run_id=run_id or self.run_id,
            started_at=time.monotonic(),
            inputs=MappingProxyType(tool_input),
        )


def no_agents(error: HookError, engine: str) -> HookError:
    """``error``, saying why when it is a ``Delegate`` in an engine that runs no agents.

    Args:
        error: a hook error from a ``HookChain`` (``on_error``).
        engine: the engine's name, as its bridge says it (``"Hamilton"``).
    """
    if "Delegate(" not in str(error):
        return error
    return HookError(
        f"{error} ({engine} runs no agents: Delegate is for subagent dispatches)",
        hook=error.hook,
        moment=error.moment,
        subject=error.subject,
    )


def _not_here() -> None:  # pragma: no cover - the engine runs the tool, never this
    """A tool call's task body: the engine runs the tool, not orchestra."""
    raise RuntimeError("the engine runs this tool")
