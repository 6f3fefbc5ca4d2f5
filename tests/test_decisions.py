from __future__ import annotations

import subprocess
import sys
import typing

import attrs
import pytest

from orchestra import Delegate, Fail, Replace, Retry, Skip, merge


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


# What DESIGN.md ("Hook traits") says each moment may answer, besides None, in its order.
DESIGNED_ANSWERS = {
    ("TaskHooks", "before_run"): ("Fail",),
    ("TaskHooks", "before_execute"): ("Skip", "Fail", "Replace"),
    ("TaskHooks", "after_execute"): ("Replace",),
    ("TaskHooks", "on_failure"): ("Retry", "Skip", "Fail", "Replace"),
    ("TaskHooks", "on_end"): (),
    ("TaskHooks", "after_run"): (),
    ("SubagentHooks", "before_dispatch"): ("Fail", "Delegate", "Replace"),
    ("SubagentHooks", "after_dispatch"): ("Replace",),
    ("SubagentHooks", "on_failure"): ("Retry", "Fail", "Delegate", "Replace"),
}


def test_what_each_moment_may_answer_is_what_the_design_says() -> None:
    """``MOMENTS``' allowed answers are read from the traits' return annotations."""
    from orchestra._moments import MOMENTS

    allowed = {
        (trait.__name__, name): tuple(cls.__name__ for cls in moment.allowed)
        for trait, moments in MOMENTS.items()
        for name, moment in moments.items()
    }

    assert allowed == DESIGNED_ANSWERS


def test_the_precedence_is_the_order_of_the_decision_union() -> None:
    """DESIGN.md: ``Fail > Skip > Delegate > Retry > Replace > None``."""
    from orchestra import _decisions

    order = [cls.__name__ for cls in typing.get_args(_decisions.Decision)]
    ranks = [_decisions._RANK[cls] for cls in typing.get_args(_decisions.Decision)]

    assert order == ["Fail", "Skip", "Delegate", "Retry", "Replace"]
    assert ranks == sorted(set(ranks), reverse=True)  # distinct, falling
    assert list(_decisions.DECISIONS) == order
    one_of_each = [Replace(1), Retry(1.0), Delegate("b"), Skip("s"), Fail("f")]
    for i, higher in enumerate(one_of_each):  # every lower answer loses to it, either side
        for lower in one_of_each[:i]:
            assert merge([lower, higher]) == merge([higher, lower]) == higher


def test_orchestra_exports_every_decision_of_the_union() -> None:
    import orchestra
    from orchestra import _decisions

    assert not hasattr(_decisions, "__all__")  # the names are listed once: orchestra's
    assert set(orchestra._DECISIONS) == {"Decision", "merge", *_decisions.DECISIONS}
    assert set(orchestra._DECISIONS) <= set(orchestra.__all__)
    for name in orchestra._DECISIONS:
        assert orchestra._CORE[name] == "orchestra._decisions"  # the lazy export map
        assert getattr(orchestra, name) is getattr(_decisions, name)
    assert "Again" not in orchestra.__all__  # a bridge's name: orchestra.bridge.Again
    import orchestra.bridge

    assert orchestra.bridge.Again is _decisions.Again
    assert Retry.__module__ == "orchestra"  # shown under its public path


def test_import_orchestra_loads_the_decisions_at_their_first_use() -> None:
    script = (
        "import sys, orchestra\n"
        "before = 'orchestra._decisions' in sys.modules\n"
        "orchestra.Skip\n"
        "print(before, 'orchestra._decisions' in sys.modules, orchestra.Skip.__module__)"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], check=True, capture_output=True, text=True, timeout=120
    )

    assert out.stdout.split() == ["False", "True", "orchestra"]


def test_a_run_again_decision_is_carried_out_by_its_base() -> None:
    """``Retry`` is an ``Again``: the engines run the work again for any of them."""
    from orchestra.bridge import Again

    assert isinstance(Retry(1.0), Again)
    assert Retry(1.0) != Again(1.0)  # a type of its own all the same
    assert merge([Retry(1.0), Retry(5.0), None]) == Retry(5.0)
