"""TaskHooks deciding around every node of a real LangGraph graph, sync and async."""

from __future__ import annotations

import asyncio
import operator
import time
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from orchestra_langgraph import HookedGraph, with_hooks

import orchestra
from orchestra import Fail, Replace, Retry, Skip, TaskFailed, TaskHooks, TaskState


class State(TypedDict):
    n: int
    log: Annotated[list[str], operator.add]


def chain_graph(flaky_failures: int = 1) -> tuple[StateGraph[Any], dict[str, int]]:
    """START -> a -> flaky -> c -> END; ``flaky`` fails its first ``flaky_failures`` calls."""
    calls = {"a": 0, "flaky": 0, "c": 0}

    def a(state: State) -> dict[str, Any]:
        calls["a"] += 1
        return {"n": state["n"] + 1, "log": ["a"]}

    def flaky(state: State) -> dict[str, Any]:
        calls["flaky"] += 1
        if calls["flaky"] <= flaky_failures:
            raise ConnectionError("503 from upstream")
        return {"n": state["n"] * 10, "log": ["flaky"]}

    def c(state: State) -> dict[str, Any]:
        calls["c"] += 1
        return {"log": ["c"]}

    builder = StateGraph(State)
    builder.add_node("a", a)
    builder.add_node("flaky", flaky)
    builder.add_node("c", c)
    builder.add_edge(START, "a")
    builder.add_edge("a", "flaky")
    builder.add_edge("flaky", "c")
    builder.add_edge("c", END)
    return builder, calls


class Recorder(TaskHooks):
    """Records every moment, in order."""

    def __init__(self) -> None:
        self.seen: list[tuple[Any, ...]] = []
        self.result: orchestra.RunResult | None = None

    def before_run(self, ctx: orchestra.RunContext) -> None:
        self.seen.append(("before_run", ctx.dag, ctx.task_ids))

    def before_execute(self, ctx: orchestra.TaskHookContext) -> None:
        self.seen.append(("before", ctx.task.id, ctx.attempt))

    def on_failure(self, ctx: orchestra.TaskHookContext, error: BaseException) -> None:
        self.seen.append(("failure", ctx.task.id, type(error).__name__))

    def on_end(self, ctx: orchestra.TaskHookContext, state: TaskState) -> None:
        self.seen.append(("end", ctx.task.id, state.value))

    def after_run(self, ctx: orchestra.RunContext, result: orchestra.RunResult) -> None:
        self.result = result
        self.seen.append(("after_run", result.ok, {k: v.value for k, v in result.states.items()}))


class RetryConnection(TaskHooks):
    def on_failure(self, ctx: orchestra.TaskHookContext, error: BaseException) -> Retry | None:
        return Retry() if isinstance(error, ConnectionError) else None


def invoke(app: Any, state: dict[str, Any], how: str, **kwargs: Any) -> Any:
    """Run a compiled graph one of the four ways; each is one hooked run."""
    if how == "invoke":
        return app.invoke(state, **kwargs)
    if how == "ainvoke":
        return asyncio.run(app.ainvoke(state, **kwargs))
    if how == "stream":
        return list(app.stream(state, stream_mode="values", **kwargs))[-1]

    async def drain() -> Any:
        return [chunk async for chunk in app.astream(state, stream_mode="values", **kwargs)][-1]

    return asyncio.run(drain())


HOW = pytest.mark.parametrize("how", ["invoke", "ainvoke", "stream", "astream"])


@HOW
def test_every_moment_in_order_and_retry_reruns_the_node(how: str) -> None:
    builder, calls = chain_graph(flaky_failures=1)
    recorder = Recorder()
    app = with_hooks(builder, [recorder, RetryConnection()]).compile()
    assert isinstance(app, HookedGraph)

    out = invoke(app, {"n": 1, "log": []}, how)

    assert out == {"n": 20, "log": ["a", "flaky", "c"]}
    assert calls == {"a": 1, "flaky": 2, "c": 1}
    assert recorder.seen == [
        ("before_run", "LangGraph", ("a", "flaky", "c")),
        ("before", "a", 1),
        ("end", "a", "succeeded"),
        ("before", "flaky", 1),
        ("failure", "flaky", "ConnectionError"),
        ("before", "flaky", 2),
        ("end", "flaky", "succeeded"),
        ("before", "c", 1),
        ("end", "c", "succeeded"),
        ("after_run", True, {"a": "succeeded", "flaky": "succeeded", "c": "succeeded"}),
    ]


@HOW
def test_skip_leaves_the_state_unchanged_and_the_graph_goes_on(how: str) -> None:
    builder, calls = chain_graph(flaky_failures=0)

    class SkipA(TaskHooks):
        def before_execute(self, ctx: orchestra.TaskHookContext) -> Skip | None:
            return Skip("not today") if ctx.task.id == "a" else None

    recorder = Recorder()
    out = invoke(with_hooks(builder, [SkipA(), recorder]).compile(), {"n": 1, "log": []}, how)

    assert out == {"n": 10, "log": ["flaky", "c"]}  # a's update never applied
    assert calls["a"] == 0
    assert ("end", "a", "skipped") in recorder.seen


def test_skip_in_on_failure_gives_the_node_up_without_failing_the_run() -> None:
    builder, calls = chain_graph(flaky_failures=5)

    class SkipFailures(TaskHooks):
        def on_failure(self, ctx: orchestra.TaskHookContext, error: BaseException) -> Skip:
            return Skip("upstream is down")

    recorder = Recorder()
    out = with_hooks(builder, [SkipFailures(), recorder]).compile().invoke({"n": 1, "log": []})

    assert out == {"n": 2, "log": ["a", "c"]}
    assert calls["flaky"] == 1
    assert recorder.seen[-1] == (
        "after_run",
        True,
        {"a": "succeeded", "flaky": "skipped", "c": "succeeded"},
    )


@HOW
def test_fail_before_a_node_raises_task_failed_and_after_run_sees_it(how: str) -> None:
    builder, calls = chain_graph(flaky_failures=0)

    class NoFlaky(TaskHooks):
        def before_execute(self, ctx: orchestra.TaskHookContext) -> Fail | None:
            return Fail("flaky is frozen") if ctx.task.id == "flaky" else None

    recorder = Recorder()
    app = with_hooks(builder, [NoFlaky(), recorder]).compile()

    with pytest.raises(TaskFailed, match="flaky is frozen"):
        invoke(app, {"n": 1, "log": []}, how)

    assert calls == {"a": 1, "flaky": 0, "c": 0}
    assert recorder.seen[-1] == ("after_run", False, {"a": "succeeded", "flaky": "failed"})


def test_a_failure_nobody_recovers_raises_the_nodes_own_error() -> None:
    builder, _ = chain_graph(flaky_failures=5)
    recorder = Recorder()
    app = with_hooks(builder, [recorder]).compile()

    with pytest.raises(ConnectionError, match="503"):
        app.invoke({"n": 1, "log": []})

    assert ("end", "flaky", "failed") in recorder.seen
    assert recorder.seen[-1][0:2] == ("after_run", False)


def test_retry_stops_at_max_attempts() -> None:
    builder, calls = chain_graph(flaky_failures=99)

    class Always(TaskHooks):
        def on_failure(self, ctx: orchestra.TaskHookContext, error: BaseException) -> Retry:
            return Retry()

    app = with_hooks(builder, [Always()], max_attempts=3).compile()
    with pytest.raises(ConnectionError) as raised:
        app.invoke({"n": 1, "log": []})
    assert calls["flaky"] == 3
    assert "attempt cap of 3 reached" in "".join(raised.value.__notes__)


@HOW
def test_replace_changes_the_input_state_and_the_update(how: str) -> None:
    builder, _ = chain_graph(flaky_failures=0)

    class Rewrite(TaskHooks):
        def before_execute(self, ctx: orchestra.TaskHookContext) -> Replace | None:
            if ctx.task.id == "flaky":
                return Replace({**ctx.inputs, "n": 7})  # flaky sees n=7
            return None

        def after_execute(self, ctx: orchestra.TaskHookContext, result: Any) -> Replace | None:
            if ctx.task.id == "c":
                return Replace({"log": ["c (replaced)"]})
            return None

    out = invoke(with_hooks(builder, [Rewrite()]).compile(), {"n": 1, "log": []}, how)
    assert out == {"n": 70, "log": ["a", "flaky", "c (replaced)"]}


def test_replace_in_on_failure_recovers_with_a_substitute_update() -> None:
    builder, _ = chain_graph(flaky_failures=5)

    class Fallback(TaskHooks):
        def on_failure(self, ctx: orchestra.TaskHookContext, error: BaseException) -> Replace:
            return Replace({"n": -1, "log": ["fallback"]})

    out = with_hooks(builder, [Fallback()]).compile().invoke({"n": 1, "log": []})
    assert out == {"n": -1, "log": ["a", "fallback", "c"]}


def test_async_hooks_and_async_nodes() -> None:
    calls: list[str] = []

    async def slow(state: State) -> dict[str, Any]:
        await asyncio.sleep(0)
        calls.append("slow")
        if len(calls) == 1:
            raise TimeoutError("first try times out")
        return {"n": state["n"] + 5, "log": ["slow"]}

    builder = StateGraph(State)
    builder.add_node("slow", slow)
    builder.add_edge(START, "slow")

    class AsyncRetry(TaskHooks):
        def __init__(self) -> None:
            self.ends: list[str] = []

        async def on_failure(self, ctx: orchestra.TaskHookContext, error: BaseException) -> Retry:
            await asyncio.sleep(0)
            return Retry(delay=0.01)

        async def on_end(self, ctx: orchestra.TaskHookContext, state: TaskState) -> None:
            self.ends.append(f"{ctx.task.id}:{state.value}:{ctx.attempt}")

    hooks = AsyncRetry()
    app = with_hooks(builder, [hooks]).compile()
    assert asyncio.run(app.ainvoke({"n": 1, "log": []})) == {"n": 6, "log": ["slow"]}
    assert hooks.ends == ["slow:succeeded:2"]


def test_async_def_hooks_in_a_sync_graph() -> None:
    builder, calls = chain_graph(flaky_failures=1)

    class AsyncRetry(TaskHooks):
        async def on_failure(self, ctx: orchestra.TaskHookContext, error: BaseException) -> Retry:
            await asyncio.sleep(0)
            return Retry()

    out = with_hooks(builder, [AsyncRetry()]).compile().invoke({"n": 1, "log": []})
    assert out["n"] == 20
    assert calls["flaky"] == 2


def test_on_end_runs_once_per_node_run_in_a_loop() -> None:
    def count(state: State) -> dict[str, Any]:
        return {"n": state["n"] + 1, "log": ["count"]}

    builder = StateGraph(State)
    builder.add_node("count", count)
    builder.add_edge(START, "count")
    builder.add_conditional_edges("count", lambda s: END if s["n"] >= 3 else "count")
    recorder = Recorder()

    out = with_hooks(builder, [recorder]).compile().invoke({"n": 0, "log": []})

    assert out["n"] == 3
    assert [e for e in recorder.seen if e[0] == "end"] == [("end", "count", "succeeded")] * 3
    assert [e[0] for e in recorder.seen].count("after_run") == 1


def test_a_compiled_subgraph_has_its_nodes_hooked() -> None:
    def inner(state: State) -> dict[str, Any]:
        return {"n": state["n"] + 100, "log": ["inner"]}

    sub = StateGraph(State)
    sub.add_node("inner", inner)
    sub.add_edge(START, "inner")
    compiled_sub = sub.compile()

    def outer(state: State) -> dict[str, Any]:
        return {"log": ["outer"]}

    builder = StateGraph(State)
    builder.add_node("outer", outer)
    builder.add_node("sub", compiled_sub)
    builder.add_edge(START, "outer")
    builder.add_edge("outer", "sub")

    class SkipInner(TaskHooks):
        def before_execute(self, ctx: orchestra.TaskHookContext) -> Skip | None:
            return Skip() if ctx.task.id == "sub/inner" else None

    recorder = Recorder()
    out = with_hooks(builder, [recorder]).compile().invoke({"n": 0, "log": []})
    assert out == builder.compile().invoke({"n": 0, "log": []})  # as LangGraph runs it
    assert out["n"] == 100
    ends = [e for e in recorder.seen if e[0] == "end"]
    assert ends == [("end", "outer", "succeeded"), ("end", "sub/inner", "succeeded")]
    assert [e[0] for e in recorder.seen].count("before_run") == 1  # one run, not two

    skipped = with_hooks(builder, [SkipInner()]).compile().invoke({"n": 0, "log": []})
    assert skipped["n"] == 0  # the inner node's update never applied
    assert "inner" not in skipped["log"]
    assert compiled_sub.invoke({"n": 0, "log": []})["n"] == 100  # the original is unhooked


def test_the_builder_passed_in_is_left_as_it_was() -> None:
    builder, calls = chain_graph(flaky_failures=0)

    class SkipAll(TaskHooks):
        def before_execute(self, ctx: orchestra.TaskHookContext) -> Skip:
            return Skip()

    with_hooks(builder, [SkipAll()]).compile().invoke({"n": 1, "log": []})
    assert calls == {"a": 0, "flaky": 0, "c": 0}
    assert builder.compile().invoke({"n": 1, "log": []})["log"] == ["a", "flaky", "c"]


def test_before_run_fail_ends_the_run_before_any_node() -> None:
    builder, calls = chain_graph()

    class Closed(TaskHooks):
        def before_run(self, ctx: orchestra.RunContext) -> Fail:
            return Fail("maintenance window")

    recorder = Recorder()
    with pytest.raises(TaskFailed, match="maintenance window"):
        with_hooks(builder, [Closed(), recorder]).compile().invoke({"n": 1, "log": []})
    assert calls == {"a": 0, "flaky": 0, "c": 0}
    assert recorder.seen[-1] == ("after_run", False, {})


def test_a_stream_closed_early_still_ends_the_run() -> None:
    builder, calls = chain_graph(flaky_failures=0)
    recorder = Recorder()
    chunks = with_hooks(builder, [recorder]).compile().stream({"n": 1, "log": []})
    assert next(chunks) == {"a": {"n": 2, "log": ["a"]}}
    chunks.close()
    assert recorder.seen[-1][0] == "after_run"
    assert calls["c"] == 0


def test_an_interrupt_passes_through_and_the_run_resumes() -> None:
    def ask(state: State) -> dict[str, Any]:
        answer = interrupt("approve?")
        return {"log": [f"answer:{answer}"]}

    builder = StateGraph(State)
    builder.add_node("ask", ask)
    builder.add_edge(START, "ask")
    recorder = Recorder()
    app = with_hooks(builder, [recorder]).compile(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "t1"}}

    first = app.invoke({"n": 0, "log": []}, config)
    assert "__interrupt__" in first
    assert not any(e[0] in ("failure", "end") for e in recorder.seen)  # not a failure
    out = app.invoke(Command(resume="yes"), config)
    assert out["log"] == ["answer:yes"]
    assert ("end", "ask", "succeeded") in recorder.seen


class Raises(TaskHooks):
    def before_execute(self, ctx: orchestra.TaskHookContext) -> None:
        raise RuntimeError("hook bug")


class Slow(TaskHooks):
    timeout = 0.05

    async def before_execute(self, ctx: orchestra.TaskHookContext) -> None:
        await asyncio.sleep(5)


class Garbage(TaskHooks):
    def before_execute(self, ctx: orchestra.TaskHookContext) -> Any:
        return "not a decision"


@pytest.mark.parametrize("bad", [Raises, Slow, Garbage])
@pytest.mark.parametrize("how", ["invoke", "ainvoke"])
def test_a_bad_hook_is_recorded_and_the_run_goes_on(bad: type[TaskHooks], how: str) -> None:
    builder, _ = chain_graph(flaky_failures=0)
    recorder = Recorder()
    started = time.monotonic()

    out = invoke(with_hooks(builder, [bad(), recorder]).compile(), {"n": 1, "log": []}, how)

    assert out == {"n": 20, "log": ["a", "flaky", "c"]}  # fail-open: no opinion
    assert time.monotonic() - started < 4  # the slow hook was cut at its timeout
    assert recorder.result is not None
    errors = recorder.result.hook_errors
    assert len(errors) == 3  # one per node
    assert all(e.moment == "before_execute" for e in errors)


def test_a_fail_closed_hook_error_fails_the_node() -> None:
    builder, calls = chain_graph(flaky_failures=0)

    class Strict(Raises):
        fail_closed = True

    with pytest.raises(TaskFailed):
        with_hooks(builder, [Strict()]).compile().invoke({"n": 1, "log": []})
    assert calls["a"] == 0


def test_spans_make_one_trace(exporter: InMemorySpanExporter) -> None:
    builder, _ = chain_graph(flaky_failures=1)
    with_hooks(builder, [RetryConnection()]).compile().invoke({"n": 1, "log": []})

    spans = exporter.get_finished_spans()
    names = sorted(s.name for s in spans)
    assert names.count("task flaky") == 2  # two attempts
    assert "run LangGraph" in names
    assert len({s.context.trace_id for s in spans}) == 1
    run = next(s for s in spans if s.name == "run LangGraph")
    tasks = [s for s in spans if s.name.startswith("task ")]
    assert all(s.parent is not None and s.parent.span_id == run.context.span_id for s in tasks)


def test_refused_hook_objects_name_the_problem() -> None:
    builder, _ = chain_graph()

    class Typo(TaskHooks):
        def on_fail(self, ctx: Any, error: Any) -> None: ...

    with pytest.raises(TypeError, match="on_failure"):
        with_hooks(builder, [Typo()])
    with pytest.raises(ValueError, match="max_attempts"):
        with_hooks(builder, [], max_attempts=0)


def test_an_async_run_is_one_trace_too(exporter: InMemorySpanExporter) -> None:
    builder, _ = chain_graph(flaky_failures=1)
    app = with_hooks(builder, [RetryConnection()]).compile()
    asyncio.run(app.ainvoke({"n": 1, "log": []}))

    spans = exporter.get_finished_spans()
    run = next(s for s in spans if s.name == "run LangGraph")
    tasks = [s for s in spans if s.name.startswith("task ")]
    assert sorted(s.name for s in tasks) == ["task a", "task c", "task flaky", "task flaky"]
    assert all(s.parent is not None and s.parent.span_id == run.context.span_id for s in tasks)
    assert len({s.context.trace_id for s in spans}) == 1


class GivesOutput(TaskHooks):
    """Gives node ``flaky``'s update before it runs (as a graph executor's ``block`` does)."""

    def __init__(self) -> None:
        self.ends: list[tuple[str, TaskState]] = []

    def before_execute(self, ctx: Any) -> Any:
        from orchestra.bridge import GiveOutput

        return Replace(GiveOutput({"log": ["given"]})) if ctx.task.id == "flaky" else None

    def on_end(self, ctx: Any, state: TaskState) -> None:
        self.ends.append((ctx.task.id, state))


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_given_output_is_the_nodes_update_and_its_body_never_runs(mode: str) -> None:
    builder, calls = chain_graph(flaky_failures=5)
    hooks = GivesOutput()
    graph = with_hooks(builder, hooks=[hooks]).compile()
    state = {"n": 1, "log": []}
    out = graph.invoke(state) if mode == "sync" else asyncio.run(graph.ainvoke(state))
    assert out["log"] == ["a", "given", "c"]
    assert calls["flaky"] == 0
    assert hooks.ends == [(n, TaskState.SUCCEEDED) for n in ("a", "flaky", "c")]
