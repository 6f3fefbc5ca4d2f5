"""``orchestra.bridge.RunAttempts``: the attempts of a whole agent run, without I/O."""

from __future__ import annotations

from orchestra import Retry
from orchestra.bridge import DoSleep, RunAttempts


def test_each_again_is_a_sleep_then_the_next_attempt_with_the_errors_so_far() -> None:
    flow = RunAttempts(max_attempts=5)
    seen: list[tuple[int, int]] = []
    for attempt in flow:
        seen.append((attempt, len(flow.errors)))
        if attempt < 3:
            assert flow.failed(ValueError(attempt), Retry(delay=0.5)) == DoSleep(0.5)
    assert seen == [(1, 0), (2, 1), (3, 2)]
    assert [str(e) for e in flow.errors] == ["1", "2"]
    assert flow.refused is None


def test_no_again_gives_up_and_keeps_the_error() -> None:
    flow = RunAttempts()
    attempts = list(_fail_each(flow, None))
    assert attempts == [1]
    assert len(flow.errors) == 1
    assert flow.refused is None  # nothing was refused: nobody asked for a retry


def test_the_cap_refuses_a_retry_before_the_veto() -> None:
    flow = RunAttempts(max_attempts=2)
    assert list(_fail_each(flow, Retry(), veto=None)) == [1, 2]
    assert flow.refused == "the run made 2 attempts (max_attempts)"
    vetoed = RunAttempts(max_attempts=1)
    assert list(_fail_each(vetoed, Retry(), veto="a rerun would repeat 1 tool call(s)")) == [1]
    assert vetoed.refused == "the run made 1 attempts (max_attempts)"


def test_a_veto_gives_up_with_its_reason() -> None:
    flow = RunAttempts(max_attempts=3)
    assert list(_fail_each(flow, Retry(), veto="a rerun would repeat 2 tool call(s)")) == [1]
    assert flow.refused == "a rerun would repeat 2 tool call(s)"


def test_a_segment_starts_its_attempts_again_up_to_the_cap() -> None:
    flow = RunAttempts(max_attempts=2)
    seen: list[tuple[int, int, int]] = []
    for attempt in flow:
        seen.append((flow.segments, attempt, len(flow.errors)))
        if attempt == 1 and flow.failed(ValueError(), Retry()) is not None:
            continue
        if not flow.next_segment():
            break
    assert seen == [(1, 1, 0), (1, 2, 1), (2, 1, 0), (2, 2, 1)]
    assert flow.segments == 2
    assert flow.attempt == 2  # the last segment's, unchanged at the cap
    assert len(flow.errors) == 1


def _fail_each(flow: RunAttempts, decision: Retry | None, veto: str | None = None) -> list[int]:
    """Fail every attempt with ``decision``; the attempts the flow gave."""
    attempts = []
    for attempt in flow:
        attempts.append(attempt)
        flow.failed(RuntimeError(attempt), decision, veto)
    return attempts
