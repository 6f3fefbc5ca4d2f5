"""``HookChain(..., carries=...)``: an engine that carries out only some answers says so once."""

from __future__ import annotations

from typing import Any

import pytest

from orchestra import (
    Delegate,
    ExecutionMode,
    Fail,
    HookChain,
    HookError,
    Replace,
    Retry,
    Skip,
    SubagentHookContext,
    SubagentHooks,
    Task,
    TaskHookContext,
    TaskHooks,
)
from orchestra.bridge import Again as RunAgain  # the base; ``Again`` here is a hook

pytestmark = pytest.mark.anyio


def sctx() -> SubagentHookContext:
    return SubagentHookContext(
        parent_agent=None,
        subagent_name="billing",
        execution_mode=ExecutionMode.SYNC,
        task="pay",
        attempt=1,
    )


def tctx() -> TaskHookContext:
    return TaskHookContext(task=Task(id="t", fn=lambda: None), attempt=1, executor=None, run_id="r")


class Elsewhere(SubagentHooks):
    def before_dispatch(self, ctx: SubagentHookContext) -> Any:
        return Delegate("support")


class Refuse(SubagentHooks):
    def before_dispatch(self, ctx: SubagentHookContext) -> Any:
        return Fail("not today")


class Again(TaskHooks):
    def on_failure(self, ctx: TaskHookContext, error: BaseException) -> Any:
        return Retry(0.5)


async def test_an_answer_the_engine_does_not_carry_out_is_a_named_hook_error() -> None:
    chain = HookChain([Elsewhere()], SubagentHooks, carries={"before_dispatch": (Fail,)})
    errors: list[HookError] = []

    decision, by = await chain.call(
        "before_dispatch", sctx(), subject="billing", on_error=errors.append
    )

    assert (decision, by) == (None, None)  # no opinion: the dispatch goes ahead
    assert [(e.hook, e.moment, e.subject) for e in errors] == [
        ("Elsewhere", "before_dispatch", "billing")
    ]
    assert "returned Delegate(agent='support', reason=None); None or Fail expected" in str(
        errors[0]
    )


async def test_a_carried_answer_of_a_later_hook_still_decides() -> None:
    # each hook's answer is judged on its own, before the merge: the Delegate that would
    # win by precedence is refused, the Fail after it holds
    chain = HookChain([Elsewhere(), Refuse()], SubagentHooks, carries={"before_dispatch": (Fail,)})
    errors: list[HookError] = []

    decision, by = await chain.call("before_dispatch", sctx(), on_error=errors.append)

    assert decision == Fail("not today")
    assert by == "Refuse.before_dispatch"
    assert len(errors) == 1


async def test_without_carries_the_moment_keeps_every_answer_it_allows() -> None:
    decision, by = await HookChain([Elsewhere()], SubagentHooks).call("before_dispatch", sctx())

    assert decision == Delegate("support")
    assert by == "Elsewhere.before_dispatch"


async def test_a_moment_carries_leaves_out_keeps_every_answer() -> None:
    chain = HookChain([Again()], TaskHooks, carries={"before_execute": (Skip, Fail)})

    decision, _ = await chain.call("on_failure", tctx(), RuntimeError("x"))

    assert decision == Retry(0.5)


async def test_a_fail_closed_hook_whose_answer_is_not_carried_out_fails() -> None:
    class Strict(Elsewhere):
        fail_closed = True

    chain = HookChain([Strict()], SubagentHooks, carries={"before_dispatch": (Fail,)})

    decision, by = await chain.call("before_dispatch", sctx())

    assert isinstance(decision, Fail)
    assert by == "Strict.before_dispatch"


def test_call_now_refuses_an_answer_not_carried_out_as_call_does() -> None:
    chain = HookChain([Again()], TaskHooks, carries={"on_failure": (Skip, Fail)})
    errors: list[HookError] = []

    decision, by = chain.call_now("on_failure", tctx(), RuntimeError("x"), on_error=errors.append)

    assert (decision, by) == (None, None)
    assert "returned Retry(delay=0.5); None or Skip, Fail expected" in str(errors[0])


def test_carrying_nothing_at_a_moment_refuses_every_answer() -> None:
    class Swap(TaskHooks):
        def after_execute(self, ctx: TaskHookContext, result: Any) -> Any:
            return Replace(2)

    chain = HookChain([Swap()], TaskHooks, carries={"after_execute": ()})
    errors: list[HookError] = []

    assert chain.call_now("after_execute", tctx(), 1, on_error=errors.append) == (None, None)
    assert "None or nothing expected" in str(errors[0])


def test_carries_naming_no_moment_of_the_trait_is_refused_with_the_closest() -> None:
    with pytest.raises(ValueError, match=r"'before_dispatc'.*did you mean 'before_dispatch'"):
        HookChain([], SubagentHooks, carries={"before_dispatc": (Fail,)})


def test_carries_holding_an_answer_the_moment_cannot_give_is_refused() -> None:
    with pytest.raises(
        ValueError, match=r"holds Skip: SubagentHooks.before_dispatch may answer Fail, Delegate"
    ):
        HookChain([], SubagentHooks, carries={"before_dispatch": (Fail, Skip)})


def test_carries_that_is_no_mapping_is_refused() -> None:
    with pytest.raises(TypeError, match="carries must be a mapping"):
        HookChain([], TaskHooks, carries=[("on_failure", (Fail,))])  # type: ignore[arg-type]


def test_carries_naming_a_base_keeps_every_allowed_decision_declared_as_one() -> None:
    chain = HookChain([Again()], TaskHooks, carries={"on_failure": (RunAgain, Skip)})

    decision, by = chain.call_now("on_failure", tctx(), RuntimeError("x"))

    assert (decision, by) == (Retry(0.5), "Again.on_failure")


def test_carries_naming_a_base_no_allowed_decision_is_declared_as_is_refused() -> None:
    with pytest.raises(ValueError, match=r"holds Again: TaskHooks.before_execute may answer Skip"):
        HookChain([], TaskHooks, carries={"before_execute": (RunAgain, Skip)})
