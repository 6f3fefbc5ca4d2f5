from __future__ import annotations

import attrs
import pytest

from orchestra import Delegate, Fail, Retry, Skip, merge


def test_decisions_are_frozen_hashable_values() -> None:
    assert Retry(1.0) == Retry(1.0)
    assert {Retry(1.0), Retry(1.0), Skip("x"), Skip("x")} == {Retry(1.0), Skip("x")}
    assert hash(Fail("a")) == hash(Fail("a"))
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        Retry(1.0).delay = 2.0  # type: ignore[misc]


def test_defaults() -> None:
    assert Retry().delay == 0.0
    assert Skip().reason is None
    assert Fail().reason is None
    assert Delegate("b").reason is None


@pytest.mark.parametrize("delay", [-1, float("nan"), float("inf"), "1"])
def test_retry_refuses_bad_delay(delay: object) -> None:
    with pytest.raises(ValueError, match="delay"):
        Retry(delay)  # type: ignore[arg-type]


@pytest.mark.parametrize("agent", ["", None, 3])
def test_delegate_needs_an_agent_name(agent: object) -> None:
    with pytest.raises(ValueError, match="agent name"):
        Delegate(agent)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("answers", "expected"),
    [
        ([], None),
        ([None, None], None),
        ([None, Retry(1)], Retry(1)),
        ([Retry(1), Delegate("b")], Delegate("b")),
        ([Delegate("b"), Skip("s")], Skip("s")),
        ([Skip("s"), Fail("f")], Fail("f")),
        ([Fail("f"), Skip("s"), Delegate("b"), Retry(9), None], Fail("f")),
        ([Retry(1), Retry(5), Retry(2)], Retry(5)),
        ([Retry(0), Retry(0)], Retry(0)),
        ([Delegate("first"), Delegate("second")], Delegate("first")),
        ([Fail("first"), Fail("second")], Fail("first")),
        ([Skip("first"), Retry(3), Skip("second")], Skip("first")),
    ],
)
def test_merge_precedence(answers: list[object], expected: object) -> None:
    assert merge(answers) == expected  # type: ignore[arg-type]


def test_each_decision_is_declared_once_and_the_tables_follow() -> None:
    """The precedence is ``Decision``'s order, the exports ``_decisions.__all__``."""
    import typing

    import orchestra
    from orchestra import _decisions

    assert [cls.__name__ for cls in typing.get_args(_decisions.Decision)] == [
        "Fail", "Skip", "Delegate", "Retry", "Replace",
    ]  # fmt: skip
    ranks = [_decisions._RANK[cls] for cls in typing.get_args(_decisions.Decision)]
    assert ranks == sorted(ranks, reverse=True)
    assert tuple(_decisions.__all__) == orchestra._DECISIONS
    assert set(_decisions.__all__) <= set(orchestra.__all__)


def test_what_a_moment_may_answer_is_its_return_annotation() -> None:
    from orchestra import Delegate, Fail, Replace, Retry, Skip, SubagentHooks, TaskHooks
    from orchestra._moments import MOMENTS

    allowed = {
        (trait.__name__, name): moment.allowed
        for trait, moments in MOMENTS.items()
        for name, moment in moments.items()
    }
    assert allowed == {
        ("TaskHooks", "before_run"): (Fail,),
        ("TaskHooks", "before_execute"): (Skip, Fail, Replace),
        ("TaskHooks", "after_execute"): (Replace,),
        ("TaskHooks", "on_failure"): (Retry, Skip, Fail, Replace),
        ("TaskHooks", "on_end"): (),
        ("TaskHooks", "after_run"): (),
        ("SubagentHooks", "before_dispatch"): (Fail, Delegate, Replace),
        ("SubagentHooks", "after_dispatch"): (Replace,),
        ("SubagentHooks", "on_failure"): (Retry, Fail, Delegate, Replace),
    }
    assert TaskHooks in MOMENTS
    assert SubagentHooks in MOMENTS


def test_a_run_again_decision_is_carried_out_by_its_base() -> None:
    """``Retry`` is an ``Again``: the engines run the work again for any of them."""
    from orchestra._decisions import Again

    assert isinstance(Retry(1.0), Again)
    assert Retry(1.0) != Again(1.0)  # a type of its own all the same
    assert merge([Retry(1.0), Retry(5.0), None]) == Retry(5.0)
