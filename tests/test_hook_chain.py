"""``orchestra.HookChain``: the public seam every engine and integration calls hooks through."""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from types import MappingProxyType
from typing import Any

import anyio
import attrs
import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import orchestra.tracing as ot
from orchestra import (
    DAG,
    Delegate,
    Fail,
    HookChain,
    HookError,
    Replace,
    Retry,
    RetryPolicy,
    Skip,
    SubagentHooks,
    Task,
    TaskHookContext,
    TaskHooks,
    TaskState,
    run,
)
from orchestra.tracing import names

pytestmark = pytest.mark.anyio


def ctx(attempt: int = 1) -> TaskHookContext:
    return TaskHookContext(
        task=Task(id="t", fn=lambda: None), attempt=attempt, executor=None, run_id="run"
    )


class Answer(TaskHooks):
    """Answers ``on_failure`` with a fixed value; records that it was called."""

    def __init__(self, answer: Any, calls: list[str] | None = None) -> None:
        self.answer = answer
        self.calls = calls if calls is not None else []

    def on_failure(self, ctx: TaskHookContext, error: BaseException) -> Any:
        self.calls.append(type(self).__name__)
        return self.answer


class Other(Answer):
    pass


def test_compiles_only_overridden_moments() -> None:
    answer, policy = Answer(None), RetryPolicy()
    chain = HookChain([answer, policy])
    assert chain.hooks("on_failure") == (answer, policy)
    assert chain.trait is TaskHooks
    assert not chain.has("before_execute")
    assert not chain.has("after_execute")
    assert chain.labels("on_failure") == ("Answer.on_failure", "RetryPolicy.on_failure")
    assert "on_failure=[Answer, RetryPolicy]" in repr(chain)
    assert repr(HookChain([])) == "<HookChain TaskHooks: no hooks>"


def test_subagent_trait_has_its_own_moments() -> None:
    chain = HookChain([RetryPolicy()], trait=SubagentHooks)
    assert chain.labels("on_failure") == ("RetryPolicy.on_failure",)
    assert not chain.has("before_dispatch")
    with pytest.raises(ValueError, match=r"'before_execute' is not a moment of SubagentHooks"):
        chain.has("before_execute")


def test_unknown_moment_says_which_one_was_meant() -> None:
    chain = HookChain([])
    with pytest.raises(ValueError, match=r"'on_fail' is not a moment .*did you mean 'on_failure'"):
        chain.has("on_fail")
    with pytest.raises(ValueError, match="did you mean 'before_execute'"):
        chain.labels("before_exec")


def test_trait_must_be_a_hook_trait() -> None:
    with pytest.raises(TypeError, match="trait must be TaskHooks or SubagentHooks"):
        HookChain([], trait=RetryPolicy)


def test_object_that_is_no_hook_is_refused() -> None:
    with pytest.raises(TypeError, match="is not a SubagentHooks"):
        HookChain([object()], trait=SubagentHooks)


def test_bad_timeout_attribute_is_refused() -> None:
    class Slow(TaskHooks):
        timeout = "soon"

        def on_failure(self, ctx: TaskHookContext, error: BaseException) -> None:
            return None

    with pytest.raises(TypeError, match=r"Slow.timeout must be a number of seconds > 0 or None"):
        HookChain([Slow()])


async def test_call_merges_by_precedence_and_names_the_winner() -> None:
    calls: list[str] = []
    chain = HookChain([Answer(Retry(1), calls), Other(Skip("s"), calls), Answer(Retry(5), calls)])
    assert await chain.call("on_failure", ctx(), ValueError()) == (Skip("s"), "Other.on_failure")
    assert calls == ["Answer", "Other", "Answer"]  # every hook is called, in order
    chain = HookChain([Answer(Retry(1)), Other(Retry(5))])
    assert await chain.call("on_failure", ctx(), ValueError()) == (Retry(5), "Other.on_failure")
    assert await HookChain([Answer(None)]).call("on_failure", ctx(), ValueError()) == (None, None)


async def test_hook_errors_are_isolated_and_named_by_label(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Broken(TaskHooks):
        def on_failure(self, ctx: TaskHookContext, error: BaseException) -> None:
            raise KeyError("oops")

    errors: list[HookError] = []
    chain = HookChain([Broken(), Answer(Retry(2))])
    with caplog.at_level(logging.WARNING, logger="orchestra"):
        decision = await chain.call(
            "on_failure", ctx(), ValueError(), subject="t", on_error=errors.append
        )
    assert decision == (Retry(2), "Answer.on_failure")
    [error] = errors
    assert str(error).startswith("hook Broken.on_failure for 't' raised KeyError")
    assert (error.hook, error.moment, error.subject) == ("Broken", "on_failure", "t")
    assert isinstance(error.__cause__, KeyError)
    assert "hook Broken.on_failure for 't' raised KeyError" in caplog.text


async def test_an_answer_the_moment_does_not_allow_is_a_hook_error() -> None:
    errors: list[HookError] = []
    chain = HookChain([Answer(Delegate("b"))])
    assert await chain.call("on_failure", ctx(), ValueError(), on_error=errors.append) == (
        None,
        None,
    )
    assert (
        "returned Delegate(agent='b', reason=None); None or Retry, Skip, Fail, Replace expected"
        in str(errors[0])
    )


async def test_fail_closed_hook_error_answers_fail() -> None:
    class Guard(TaskHooks):
        fail_closed = True

        def before_execute(self, ctx: TaskHookContext) -> None:
            raise RuntimeError("cannot check")

    decision, by = await HookChain([Guard()]).call("before_execute", ctx())
    assert isinstance(decision, Fail)
    assert decision.reason is not None
    assert decision.reason.startswith("fail-closed hook Guard.before_execute raised RuntimeError")
    assert by == "Guard.before_execute"


async def test_base_exceptions_propagate() -> None:
    class Interrupt(TaskHooks):
        async def before_execute(self, ctx: TaskHookContext) -> None:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        await HookChain([Interrupt()]).call("before_execute", ctx())


async def test_async_hook_past_its_timeout_is_cut_and_counts_as_an_error() -> None:
    class Hangs(TaskHooks):
        async def before_execute(self, ctx: TaskHookContext) -> Fail:
            await anyio.sleep_forever()
            return Fail("never")

    class Quick(Hangs):
        timeout = None  # its own attribute wins over the chain's: no limit

        async def before_execute(self, ctx: TaskHookContext) -> Fail:
            await anyio.sleep(0.01)
            return Fail("quick")

    errors: list[HookError] = []
    chain = HookChain([Hangs(), Quick()], timeout=0.05)
    with anyio.fail_after(5):
        decision = await chain.call("before_execute", ctx(), subject="t", on_error=errors.append)
    assert decision == (Fail("quick"), "Quick.before_execute")
    assert [str(e) for e in errors] == ["hook Hangs.before_execute for 't' timed out after 0.05 s"]


async def test_def_returning_an_awaitable_is_awaited() -> None:
    class Wrapped(TaskHooks):
        def before_execute(self, ctx: TaskHookContext) -> Awaitable[Skip]:
            async def later() -> Skip:
                return Skip("later")

            return later()

    assert await HookChain([Wrapped()]).call("before_execute", ctx()) == (
        Skip("later"),
        "Wrapped.before_execute",
    )


async def test_each_call_is_a_span_when_given_a_tracer(exporter: InMemorySpanExporter) -> None:
    tracer = ot.get_tracer()
    assert tracer is not None
    chain = HookChain([Answer(None), Other(Retry(3))])
    await chain.call("on_failure", ctx(), ValueError(), subject="t", tracer=tracer)
    spans = exporter.get_finished_spans()
    assert [s.name for s in spans] == ["hook on_failure", "hook on_failure"]
    assert [dict(s.attributes or {}).get(names.ATTR_HOOK_NAME) for s in spans] == [
        "Answer",
        "Other",
    ]
    assert dict(spans[1].attributes or {})[names.ATTR_DECISION_BY] == "Other.on_failure"


async def test_engines_call_hooks_through_the_chain() -> None:
    # The chain is the seam: what it decides is what the scheduler does.
    dag = DAG("seam")
    dag.add(Task(id="a", fn=lambda: 1 / 0))
    result = await run(dag, hooks=[Answer(Skip("not today"))])
    assert result.reasons["a"] == "skipped by Answer.on_failure: not today"


# --- call_now: the same calls, here and now, for moments of def hooks ---------------------


def test_call_now_answers_as_call_does() -> None:
    calls: list[str] = []
    chain = HookChain([Answer(Retry(1), calls), Other(Skip("s"), calls), Answer(Retry(5), calls)])
    assert chain.call_now("on_failure", ctx(), ValueError()) == (Skip("s"), "Other.on_failure")
    assert calls == ["Answer", "Other", "Answer"]
    assert HookChain([Answer(None)]).call_now("on_failure", ctx(), ValueError()) == (None, None)
    assert HookChain([]).call_now("on_failure", ctx(), ValueError()) == (None, None)


async def test_call_now_chains_replace_and_isolates_errors_as_call_does() -> None:
    class Broken(TaskHooks):
        def before_execute(self, ctx: TaskHookContext) -> None:
            raise KeyError("oops")

    class Double(TaskHooks):
        def after_execute(self, ctx: TaskHookContext, result: Any) -> Replace:
            return Replace(result * 2)

    class Guard(TaskHooks):
        fail_closed = True

        def before_execute(self, ctx: TaskHookContext) -> None:
            raise RuntimeError("cannot check")

    cases: list[tuple[list[TaskHooks], str, tuple[Any, ...]]] = [
        ([Double(), Double()], "after_execute", (ctx(), 3)),
        ([Broken(), Guard()], "before_execute", (ctx(),)),
        ([Answer(Delegate("b"))], "on_failure", (ctx(), ValueError())),
    ]
    for hooks, moment, args in cases:
        now_errors: list[HookError] = []
        later_errors: list[HookError] = []
        chain = HookChain(hooks)
        now = chain.call_now(moment, *args, subject="t", on_error=now_errors.append)
        later = await chain.call(moment, *args, subject="t", on_error=later_errors.append)
        assert now == later
        assert [str(e) for e in now_errors] == [str(e) for e in later_errors]
    assert now_errors  # the Delegate answered where on_failure does not allow it


async def test_a_bound_caller_answers_as_call_and_call_now_do(
    exporter: InMemorySpanExporter,
) -> None:
    class Double(TaskHooks):
        def after_execute(self, ctx: TaskHookContext, result: Any) -> Replace:
            return Replace(result * 2)

    chain = HookChain([Double(), Answer(None), Double(), Other(Retry(3))])
    for tracer in (None, ot.get_tracer()):
        for moment, args in (("after_execute", (ctx(), 3)), ("on_failure", (ctx(), KeyError()))):
            errors: list[HookError] = []
            called = await chain.call(moment, *args, subject="t", tracer=tracer)
            bound = await chain.caller(moment, tracer=tracer)(args, "t", errors.append)
            now = chain.caller_now(moment, tracer=tracer)(args, "t", errors.append)
            assert bound == now == called
            assert errors == []
    assert called == (Retry(3), "Other.on_failure")
    assert len(exporter.get_finished_spans()) == 3 * 4  # one span per hook call, traced


def test_a_bound_caller_refuses_what_call_and_call_now_refuse() -> None:
    class Later(TaskHooks):
        async def before_execute(self, ctx: TaskHookContext) -> None:
            return None

    chain = HookChain([Later()])
    with pytest.raises(RuntimeError, match=r"Later.before_execute is async: await chain.call"):
        chain.caller_now("before_execute")
    for bind in (chain.caller, chain.caller_now):
        with pytest.raises(ValueError, match="did you mean 'on_failure'"):
            bind("on_fail")


def test_call_now_refuses_a_moment_with_an_async_hook() -> None:
    class Later(TaskHooks):
        async def before_execute(self, ctx: TaskHookContext) -> None:
            return None

    chain = HookChain([Answer(None), Later()])
    assert chain.awaits("before_execute")
    assert not chain.awaits("on_failure")
    with pytest.raises(RuntimeError, match=r"Later.before_execute is async: await chain.call"):
        chain.call_now("before_execute", ctx())
    with pytest.raises(ValueError, match="did you mean 'on_failure'"):
        chain.call_now("on_fail", ctx(), ValueError())


def test_call_now_of_a_def_returning_an_awaitable_is_a_hook_error() -> None:
    class Wrapped(TaskHooks):
        def before_execute(self, ctx: TaskHookContext) -> Awaitable[Skip]:
            async def later() -> Skip:
                return Skip("later")

            return later()

    errors: list[HookError] = []
    # the coroutine is closed: no "never awaited" warning (warnings are errors in tests)
    assert HookChain([Wrapped()]).call_now(
        "before_execute", ctx(), subject="t", on_error=errors.append
    ) == (None, None)
    assert "returned an awaitable where it is called now: make it async def" in str(errors[0])


def test_call_now_makes_a_span_per_call_when_given_a_tracer(
    exporter: InMemorySpanExporter,
) -> None:
    tracer = ot.get_tracer()
    assert tracer is not None
    chain = HookChain([Answer(None), Other(Retry(3))])
    assert chain.call_now("on_failure", ctx(), ValueError(), subject="t", tracer=tracer) == (
        Retry(3),
        "Other.on_failure",
    )
    spans = exporter.get_finished_spans()
    assert [s.name for s in spans] == ["hook on_failure", "hook on_failure"]
    assert dict(spans[1].attributes or {})[names.ATTR_DECISION_BY] == "Other.on_failure"


def test_task_context_is_the_context_the_constructor_makes() -> None:
    task = Task(id="t", fn=lambda: None)
    fields: dict[str, Any] = {
        "task": task,
        "attempt": 2,
        "executor": None,
        "run_id": "run",
        "errors": (ValueError("x"),),
        "started_at": 1.5,
        "inputs": MappingProxyType({"a": 1}),
        "upstream_states": MappingProxyType({"a": TaskState.SUCCEEDED}),
    }
    fast = HookChain.task_context(**fields)
    assert type(fast) is TaskHookContext
    assert fast == TaskHookContext(**fields)
    assert repr(fast) == repr(TaskHookContext(**fields))
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        fast.attempt = 3  # type: ignore[misc]
    # the contexts of one attempt share its messages
    notes: list[str] = []
    first = HookChain.task_context(**fields, notes=notes)
    first.add_message("seen")
    assert HookChain.task_context(**fields, notes=notes).messages == ("seen",)
    assert HookChain.task_context(**fields).messages == ()


def test_run_now_drives_def_hooks_without_a_loop_and_async_ones_on_their_own() -> None:
    import asyncio

    from orchestra import Fail, HookChain, TaskHooks

    class Plain(TaskHooks):
        def before_run(self, ctx: object) -> Fail:
            return Fail("plain")

    class Awaiting(TaskHooks):
        async def before_run(self, ctx: object) -> Fail:
            await asyncio.sleep(0)
            return Fail("awaiting")

    plain = HookChain([Plain()])
    assert not plain.awaits("before_run")
    decision, by = HookChain.run_now(plain.call("before_run", None), needs_loop=False)
    assert (decision, by) == (Fail("plain"), "Plain.before_run")
    awaiting = HookChain([Awaiting()])
    decision, by = HookChain.run_now(awaiting.call("before_run", None), needs_loop=True)
    assert (decision, by) == (Fail("awaiting"), "Awaiting.before_run")

    async def suspends() -> None:
        await asyncio.sleep(0)

    with pytest.raises(RuntimeError, match="suspended"):
        HookChain.run_now(suspends(), needs_loop=False)

    async def inside_a_loop() -> tuple[object, object]:  # a notebook's running loop
        return HookChain.run_now(awaiting.call("before_run", None), needs_loop=True)

    assert asyncio.run(inside_a_loop()) == (Fail("awaiting"), "Awaiting.before_run")
