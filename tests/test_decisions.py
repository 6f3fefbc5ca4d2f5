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
