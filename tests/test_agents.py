"""The dispatcher's SYNC flow: hooks, retries, delegation, caps and bad input."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from tenacity import stop_after_attempt

from orchestra import (
    Delegate,
    Dispatcher,
    DispatchError,
    ExecutionMode,
    Fail,
    HookError,
    Retry,
    RetryPolicy,
    Skip,
    Subagent,
    SubagentHookContext,
    SubagentHooks,
    SubagentResult,
)
from orchestra.agents import DEFAULT_MAX_ATTEMPTS, AgentContext

pytestmark = pytest.mark.anyio


class Agent(Subagent):
    """Fails its first ``failures`` attempts (per dispatch) with ``error``, then answers."""

    def __init__(
        self, name: str, failures: int = 0, error: type[BaseException] = ConnectionError
    ) -> None:
        self.name = name
        self.failures = failures
        self.error = error
        self.runs: list[tuple[str, int, tuple[str, ...]]] = []

    async def run(self, task: str, ctx: AgentContext) -> str:
        self.runs.append((task, ctx.attempt, ctx.delegated_from))
        if ctx.attempt <= self.failures:
            raise self.error(f"{self.name} failed attempt {ctx.attempt}")
        return f"{self.name}: {task}"


class Recorder(SubagentHooks):
    """Records every moment; answers from ``before``/``failure`` maps keyed by agent name."""

    def __init__(
        self,
        events: list[tuple[Any, ...]],
        before: dict[str, Any] | None = None,
        failure: dict[str, Any] | None = None,
        tag: str = "",
    ) -> None:
        self.events = events
        self.before = before or {}
        self.failure = failure or {}
        self.tag = tag

    def before_dispatch(self, ctx: SubagentHookContext) -> Any:
        self.events.append(
            (f"{self.tag}before", ctx.subagent_name, ctx.attempt, ctx.delegated_from)
        )
        return self.before.get(ctx.subagent_name)

    async def after_dispatch(self, ctx: SubagentHookContext, result: Any) -> None:
        self.events.append((f"{self.tag}after", ctx.subagent_name, result.output))

    def on_failure(self, ctx: SubagentHookContext, error: BaseException) -> Any:
        self.events.append((f"{self.tag}failure", ctx.subagent_name, ctx.attempt, type(error)))
        return self.failure.get(ctx.subagent_name)


# -- the flow ----------------------------------------------------------------------------


async def test_sync_dispatch_returns_result_and_fires_hooks_in_order() -> None:
    events: list[tuple[Any, ...]] = []
    d = Dispatcher([Agent("a")], hooks=[Recorder(events)])
    result = await d.dispatch("a", "hello", parent="planner")
    assert result == SubagentResult(agent="a", output="a: hello", attempts=1, delegated_from=())
    assert events == [("before", "a", 1, ()), ("after", "a", "a: hello")]


async def test_hook_context_carries_dispatch_facts() -> None:
    seen: list[SubagentHookContext] = []

    class Spy(SubagentHooks):
        def before_dispatch(self, ctx: SubagentHookContext) -> None:
            seen.append(ctx)

    d = Dispatcher([Agent("a")], hooks=[Spy()])
    await d.dispatch("a", "the task", parent="planner")
    (ctx,) = seen
    assert (ctx.parent_agent, ctx.subagent_name, ctx.execution_mode, ctx.task, ctx.attempt) == (
        "planner",
        "a",
        ExecutionMode.SYNC,
        "the task",
        1,
    )
    assert ctx.delegated_from == ()
    assert ctx.errors == ()
    assert ctx.started_at > 0


async def test_run_context_is_documented_object() -> None:
    seen: list[AgentContext] = []

    class Spy(Subagent):
        name = "spy"

        async def run(self, task: str, ctx: AgentContext) -> None:
            seen.append(ctx)

    d = Dispatcher([Spy()])
    await d.dispatch("spy", "t", parent="p")
    (ctx,) = seen
    assert (ctx.agent, ctx.parent, ctx.mode, ctx.attempt, ctx.delegated_from) == (
        "spy",
        "p",
        ExecutionMode.SYNC,
        1,
        (),
    )
    assert ctx.dispatcher is d
    assert "spy" in repr(ctx)


async def test_failure_without_opinion_raises_dispatch_error_with_cause() -> None:
    d = Dispatcher([Agent("a", failures=1)])
    with pytest.raises(DispatchError, match=r"agent 'a' failed on attempt 1") as info:
        await d.dispatch("a", "t")
    assert isinstance(info.value.__cause__, ConnectionError)
    assert (info.value.agent, info.value.attempts, info.value.delegated_from) == ("a", 1, ())


async def test_retry_runs_the_same_agent_again() -> None:
    events: list[tuple[Any, ...]] = []
    agent = Agent("a", failures=2)
    d = Dispatcher([agent], hooks=[Recorder(events, failure={"a": Retry(0)})])
    result = await d.dispatch("a", "t")
    assert (result.agent, result.attempts, result.output) == ("a", 3, "a: t")
    assert events == [
        ("before", "a", 1, ()),
        ("failure", "a", 1, ConnectionError),
        ("before", "a", 2, ()),
        ("failure", "a", 2, ConnectionError),
        ("before", "a", 3, ()),
        ("after", "a", "a: t"),
    ]


async def test_retry_policy_works_as_subagent_hooks() -> None:
    d = Dispatcher([Agent("a", failures=2)], hooks=[RetryPolicy(stop=stop_after_attempt(3))])
    assert (await d.dispatch("a", "t")).attempts == 3
    d = Dispatcher([Agent("a", failures=3)], hooks=[RetryPolicy(stop=stop_after_attempt(3))])
    with pytest.raises(DispatchError, match="attempt 3") as info:
        await d.dispatch("a", "t")
    assert isinstance(info.value.__cause__, ConnectionError)


async def test_state_is_kept_across_attempts_of_one_dispatch() -> None:
    class Counter(Subagent):
        name = "counter"

        async def run(self, task: str, ctx: AgentContext) -> int:
            ctx.state["n"] = ctx.state.get("n", 0) + 1
            if ctx.attempt < 3:
                raise ValueError("again")
            return int(ctx.state["n"])

    d = Dispatcher([Counter()], hooks=[RetryPolicy(stop=stop_after_attempt(5))])
    assert (await d.dispatch("counter", "t")).output == 3
    assert (await d.dispatch("counter", "t")).output == 3  # a SYNC session is one dispatch


async def test_on_close_runs_when_a_sync_dispatch_ends() -> None:
    closed: list[str] = []

    class Closer(Subagent):
        name = "closer"

        async def run(self, task: str, ctx: AgentContext) -> str:
            async def aclose() -> None:
                closed.append(f"async {task}")

            ctx.on_close(lambda: closed.append(f"sync {task}"))
            ctx.on_close(aclose)
            if task == "fail":
                raise ValueError(task)
            return task

    d = Dispatcher([Closer()])
    await d.dispatch("closer", "ok")
    with pytest.raises(DispatchError):
        await d.dispatch("closer", "fail")
    assert closed == ["async ok", "sync ok", "async fail", "sync fail"]


# -- delegation ----------------------------------------------------------------------------


async def test_on_failure_delegate_moves_work_and_restarts_attempts() -> None:
    events: list[tuple[Any, ...]] = []
    a, b = Agent("a", failures=5), Agent("b", failures=1)
    hooks = Recorder(events, failure={"a": Delegate("b", "a is down"), "b": Retry(0)})
    d = Dispatcher([a, b], hooks=[hooks])
    result = await d.dispatch("a", "t")
    assert result == SubagentResult(agent="b", output="b: t", attempts=2, delegated_from=("a",))
    assert events == [
        ("before", "a", 1, ()),
        ("failure", "a", 1, ConnectionError),
        ("before", "b", 1, ("a",)),
        ("failure", "b", 1, ConnectionError),
        ("before", "b", 2, ("a",)),
        ("after", "b", "b: t"),
    ]
    assert b.runs == [("t", 1, ("a",)), ("t", 2, ("a",))]


async def test_before_dispatch_delegate_skips_the_first_agent() -> None:
    a, b = Agent("a"), Agent("b")
    d = Dispatcher([a, b], hooks=[Recorder([], before={"a": Delegate("b")})])
    result = await d.dispatch("a", "t")
    assert (result.agent, result.delegated_from) == ("b", ("a",))
    assert a.runs == []


async def test_delegation_chain_grows() -> None:
    hooks = Recorder([], failure={"a": Delegate("b"), "b": Delegate("c")})
    d = Dispatcher([Agent("a", 9), Agent("b", 9), Agent("c")], hooks=[hooks])
    result = await d.dispatch("a", "t")
    assert (result.agent, result.delegated_from) == ("c", ("a", "b"))


async def test_delegate_cycle_is_refused_naming_the_agents() -> None:
    hooks = Recorder([], failure={"a": Delegate("b"), "b": Delegate("a")})
    d = Dispatcher([Agent("a", 9), Agent("b", 9)], hooks=[hooks])
    with pytest.raises(DispatchError, match=r"from 'b' to 'a'.*already tried.*a -> b") as info:
        await d.dispatch("a", "t")
    assert isinstance(info.value.__cause__, ConnectionError)
    assert (info.value.agent, info.value.delegated_from) == ("b", ("a",))


async def test_delegate_to_itself_is_refused() -> None:
    d = Dispatcher([Agent("a", 9)], hooks=[Recorder([], failure={"a": Delegate("a")})])
    with pytest.raises(DispatchError, match=r"agent 'a' cannot delegate to itself.*Recorder"):
        await d.dispatch("a", "t")


async def test_delegate_to_unknown_agent_is_refused() -> None:
    d = Dispatcher([Agent("a", 9)], hooks=[Recorder([], failure={"a": Delegate("ghost")})])
    with pytest.raises(DispatchError, match=r"unknown agent 'ghost'.*registered: 'a'"):
        await d.dispatch("a", "t")


async def test_max_delegations_is_enforced() -> None:
    hooks = Recorder([], failure={"a": Delegate("b"), "b": Delegate("c")})
    agents = [Agent("a", 9), Agent("b", 9), Agent("c")]
    d = Dispatcher(agents, hooks=[hooks], max_delegations=1)
    with pytest.raises(DispatchError, match=r"'b' to 'c'.*max_delegations=1.*a -> b"):
        await d.dispatch("a", "t")
    d = Dispatcher(agents, hooks=[hooks], max_delegations=0)
    with pytest.raises(DispatchError, match=r"'a' to 'b'.*max_delegations=0"):
        await d.dispatch("a", "t")


# -- decisions and hook errors ---------------------------------------------------------------


async def test_before_dispatch_fail_raises_with_reason_and_agent_never_runs() -> None:
    agent = Agent("a")
    d = Dispatcher([agent], hooks=[Recorder([], before={"a": Fail("budget spent")})])
    with pytest.raises(
        DispatchError, match=r"agent 'a' failed by Recorder.before_dispatch"
    ) as info:
        await d.dispatch("a", "t")
    assert "budget spent" in str(info.value)
    assert info.value.reason == "budget spent"
    assert agent.runs == []


async def test_on_failure_fail_raises_with_reason_and_cause() -> None:
    d = Dispatcher([Agent("a", 9)], hooks=[Recorder([], failure={"a": Fail("give up")})])
    with pytest.raises(DispatchError, match="give up") as info:
        await d.dispatch("a", "t")
    assert isinstance(info.value.__cause__, ConnectionError)


async def test_answers_merge_by_precedence() -> None:
    events: list[tuple[Any, ...]] = []
    retry = Recorder(events, failure={"a": Retry(0)}, tag="r.")
    delegate = Recorder(events, failure={"a": Delegate("b")}, tag="d.")
    d = Dispatcher([Agent("a", 9), Agent("b")], hooks=[retry, delegate])
    assert (await d.dispatch("a", "t")).agent == "b"  # Delegate > Retry
    fail = Recorder(events, failure={"a": Fail("no")}, tag="f.")
    d = Dispatcher([Agent("a", 9), Agent("b")], hooks=[retry, fail, delegate])
    with pytest.raises(DispatchError, match="no"):
        await d.dispatch("a", "t")  # Fail > Delegate > Retry


async def test_attempt_cap_stops_a_hook_that_always_retries() -> None:
    agent = Agent("a", failures=10**6)
    d = Dispatcher([agent], hooks=[Recorder([], failure={"a": Retry(0)})], max_attempts=5)
    with pytest.raises(DispatchError, match=r"agent 'a' reached the attempt cap of 5") as info:
        await d.dispatch("a", "t")
    assert len(agent.runs) == 5
    assert info.value.attempts == 5
    assert isinstance(info.value.__cause__, ConnectionError)
    assert Dispatcher([agent]).max_attempts == DEFAULT_MAX_ATTEMPTS


async def test_skip_from_a_subagent_hook_is_a_recorded_hook_error() -> None:
    hooks = Recorder([], before={"a": Skip("nah")}, failure={"a": Skip("nah")})
    d = Dispatcher([Agent("a")], hooks=[hooks])
    result = await d.dispatch("a", "t")  # Skip counts as no opinion: the agent runs
    (error,) = result.hook_errors
    assert isinstance(error, HookError)
    assert (error.moment, error.subject) == ("before_dispatch", "a")
    assert "Skip" in str(error)
    d = Dispatcher([Agent("a", 1)], hooks=[hooks])
    with pytest.raises(DispatchError, match="failed on attempt 1") as info:
        await d.dispatch("a", "t")
    assert [e.moment for e in info.value.hook_errors] == ["before_dispatch", "on_failure"]


async def test_a_raising_hook_is_isolated_unless_fail_closed() -> None:
    class Broken(SubagentHooks):
        def after_dispatch(self, ctx: SubagentHookContext, result: Any) -> None:
            raise RuntimeError("hook bug")

    class Strict(Broken):
        fail_closed = True

    result = await Dispatcher([Agent("a")], hooks=[Broken()]).dispatch("a", "t")
    assert result.output == "a: t"
    assert [e.moment for e in result.hook_errors] == ["after_dispatch"]
    with pytest.raises(DispatchError, match=r"fail-closed.*hook bug"):
        await Dispatcher([Agent("a")], hooks=[Strict()]).dispatch("a", "t")


class Fatal(BaseException):
    pass


@pytest.mark.parametrize("error", [Fatal, KeyboardInterrupt])
async def test_base_exception_is_never_retried_and_propagates_after_hooks(
    error: type[BaseException],
) -> None:
    events: list[tuple[Any, ...]] = []
    agent = Agent("a", failures=1, error=error)
    d = Dispatcher([agent, Agent("b")], hooks=[Recorder(events, failure={"a": Retry(0)})])
    with pytest.raises(error):
        await d.dispatch("a", "t")
    assert events == [("before", "a", 1, ()), ("failure", "a", 1, error)]
    assert len(agent.runs) == 1


# -- bad input -------------------------------------------------------------------------------


def test_duplicate_agent_names_are_refused() -> None:
    with pytest.raises(ValueError, match="duplicate agent name 'a'"):
        Dispatcher([Agent("a"), Agent("b"), Agent("a")])


def test_object_without_name_is_refused() -> None:
    class NoName:
        async def run(self, task: str, ctx: AgentContext) -> None: ...

    with pytest.raises(TypeError, match=r"NoName.*is not a subagent: it has no 'name'"):
        Dispatcher([NoName()])  # type: ignore[list-item]


def test_object_without_run_is_refused_naming_it() -> None:
    class NoRun:
        name = "lazy"

    with pytest.raises(TypeError, match=r"agent 'lazy'.*no callable 'run'"):
        Dispatcher([NoRun()])  # type: ignore[list-item]


def test_sync_run_is_refused_naming_the_agent() -> None:
    class SyncRun:
        name = "syncy"

        def run(self, task: str, ctx: AgentContext) -> str:
            return task

    with pytest.raises(TypeError, match=r"agent 'syncy': run must be a coroutine function"):
        Dispatcher([SyncRun()])  # type: ignore[list-item]


@pytest.mark.parametrize("name", ["", 42])
def test_bad_names_are_refused(name: Any) -> None:
    agent = Agent("x")
    agent.name = name
    with pytest.raises(ValueError, match="non-empty str name"):
        Dispatcher([agent])


@pytest.mark.parametrize("agents", ["abc", {"a": Agent("a")}])
def test_agents_must_be_an_iterable_of_agents(agents: Any) -> None:
    with pytest.raises(TypeError, match="iterable of agents"):
        Dispatcher(agents)


@pytest.mark.parametrize("value", [-1, 1.5, True, None])
def test_max_delegations_below_zero_or_not_int_is_refused(value: Any) -> None:
    with pytest.raises(ValueError, match=r"max_delegations must be an int >= 0"):
        Dispatcher([Agent("a")], max_delegations=value)


def test_max_attempts_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match=r"max_attempts must be an int >= 1"):
        Dispatcher([Agent("a")], max_attempts=0)


def test_object_that_is_no_hook_is_refused() -> None:
    with pytest.raises(TypeError, match="is not a SubagentHooks"):
        Dispatcher([Agent("a")], hooks=[object()])


async def test_dispatch_to_unknown_agent_names_it() -> None:
    d = Dispatcher([Agent("a"), Agent("b")])
    with pytest.raises(DispatchError, match=r"no agent named 'ghost' \(registered: 'a', 'b'\)"):
        await d.dispatch("ghost", "t")


async def test_dispatch_refuses_bad_arguments() -> None:
    d = Dispatcher([Agent("a")])
    with pytest.raises(TypeError, match="agent 'a': task must be a str"):
        await d.dispatch("a", 42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"dispatch needs an agent name \(a str\), got \['a'\]"):
        await d.dispatch(["a"], "t")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="agent 'a': mode must be an ExecutionMode"):
        await d.dispatch("a", "t", mode="fork")  # type: ignore[call-overload]
    for timeout in (0, -1, float("nan"), "1"):
        with pytest.raises(ValueError, match="agent 'a': timeout must be a number > 0"):
            await d.dispatch("a", "t", timeout=timeout)  # type: ignore[arg-type]


async def test_properties_and_repr() -> None:
    agent = Agent("a")
    d = Dispatcher([agent], max_delegations=2)
    assert dict(d.agents) == {"a": agent}
    assert d.max_delegations == 2
    assert not d.closed
    assert "'a'" in repr(d)
    assert "new" in repr(d)


async def test_agent_can_dispatch_through_its_context() -> None:
    parents: list[str | None] = []

    class Spy(SubagentHooks):
        def before_dispatch(self, ctx: SubagentHookContext) -> None:
            parents.append(ctx.parent_agent)

    class Planner(Subagent):
        name = "planner"

        async def run(self, task: str, ctx: AgentContext) -> str:
            sub = await ctx.dispatcher.dispatch("a", task.upper(), parent=ctx.agent)
            return f"plan({sub.output})"

    d = Dispatcher([Planner(), Agent("a")], hooks=[Spy()])
    assert (await d.dispatch("planner", "q", parent="user")).output == "plan(a: Q)"
    assert parents == ["user", "planner"]


# -- tracing ---------------------------------------------------------------------------------


async def test_each_attempt_is_an_invoke_agent_span_with_its_decision(
    spans: InMemorySpanExporter,
) -> None:
    class Crash(SubagentHooks):
        def before_dispatch(self, ctx: SubagentHookContext) -> None:
            raise RuntimeError("hook bug")

    answers = {"a": Retry(0)}

    class Policy(SubagentHooks):
        def on_failure(self, ctx: SubagentHookContext, error: BaseException) -> Any:
            return answers.get(ctx.subagent_name) if ctx.attempt == 1 else Delegate("b")

    d = Dispatcher([Agent("a", 9), Agent("b")], hooks=[Crash(), Policy()])
    result = await d.dispatch("a", "t", parent="planner")
    assert result.agent == "b"
    all_spans = spans.get_finished_spans()
    finished = [s for s in all_spans if s.name.startswith("invoke_agent ")]
    assert [s.name for s in finished] == ["invoke_agent a", "invoke_agent a", "invoke_agent b"]
    # every hook call is a span of its own, under the attempt it was called for
    hooks = [s for s in all_spans if s.name.startswith("hook ")]
    parent_of = {s.context.span_id: s.name for s in finished if s.context is not None}
    assert sorted((h.name, parent_of[h.parent.span_id]) for h in hooks if h.parent) == [
        ("hook before_dispatch", "invoke_agent a"),
        ("hook before_dispatch", "invoke_agent a"),
        ("hook before_dispatch", "invoke_agent b"),
        ("hook on_failure", "invoke_agent a"),
        ("hook on_failure", "invoke_agent a"),
    ]
    assert len(hooks) == 5
    first, second, third = (dict(s.attributes or {}) for s in finished)
    assert first["gen_ai.operation.name"] == "invoke_agent"
    assert first["gen_ai.agent.name"] == "a"
    assert (first["orchestra.agent.mode"], first["orchestra.agent.parent"]) == ("sync", "planner")
    assert (first["orchestra.agent.attempt"], first["orchestra.decision"]) == (1, "retry")
    assert first["orchestra.decision.by"] == "Policy.on_failure"
    assert (second["orchestra.decision"], second["orchestra.decision.agent"]) == ("delegate", "b")
    assert third["orchestra.agent.delegated_from"] == ("a",)
    assert "orchestra.decision" not in third
    assert "gen_ai.input.messages" not in first  # no content unless opted in
    events = [e.name for e in finished[0].events]
    assert events == ["orchestra.hook.error", "exception", "orchestra.decision"]
