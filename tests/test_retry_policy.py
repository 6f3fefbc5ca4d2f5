from __future__ import annotations

import time

import pytest
from tenacity import (
    retry_if_exception_type,
    stop_after_attempt,
    stop_after_delay,
    wait_exponential,
    wait_fixed,
    wait_random,
)

import orchestra
from orchestra import (
    DAG,
    ExecutionMode,
    Retry,
    RetryPolicy,
    SubagentHookContext,
    Task,
    TaskHookContext,
    TaskState,
)

pytestmark = pytest.mark.anyio


def ctx(attempt: int, started_at: float = 0.0) -> TaskHookContext:
    task = Task(id="t", fn=lambda: None)
    return TaskHookContext(
        task=task,
        attempt=attempt,
        executor=None,
        run_id="run",
        started_at=started_at or time.monotonic(),
    )


def test_wait_exponential_from_tenacity() -> None:
    policy = RetryPolicy(stop=stop_after_attempt(10), wait=wait_exponential(multiplier=1, max=8))
    delays = [policy.on_failure(ctx(n), ValueError()) for n in range(1, 7)]
    # tenacity's own arithmetic: multiplier * 2 ** (attempt - 1), capped at max
    assert delays == [Retry(1), Retry(2), Retry(4), Retry(8), Retry(8), Retry(8)]


def test_stop_after_attempt() -> None:
    policy = RetryPolicy(stop=stop_after_attempt(3))
    assert policy.on_failure(ctx(1), ValueError()) == Retry(0)
    assert policy.on_failure(ctx(2), ValueError()) == Retry(0)
    assert policy.on_failure(ctx(3), ValueError()) is None


def test_stop_operators_compose() -> None:
    policy = RetryPolicy(stop=stop_after_attempt(100) | stop_after_delay(10))
    assert policy.on_failure(ctx(2), ValueError()) == Retry(0)
    long_ago = time.monotonic() - 60
    assert policy.on_failure(ctx(2, started_at=long_ago), ValueError()) is None


def test_wait_operators_compose() -> None:
    policy = RetryPolicy(stop=stop_after_attempt(5), wait=wait_fixed(1) + wait_random(0, 1))
    for _ in range(20):
        decision = policy.on_failure(ctx(1), ValueError())
        assert isinstance(decision, Retry)
        assert 1 <= decision.delay <= 2


def test_retry_predicate_filters_errors() -> None:
    policy = RetryPolicy(retry=retry_if_exception_type(ConnectionError))
    assert policy.on_failure(ctx(1), ConnectionError()) == Retry(0)
    assert policy.on_failure(ctx(1), ValueError()) is None


def test_plain_callables_are_accepted() -> None:
    policy = RetryPolicy(stop=lambda state: state.attempt_number >= 2, wait=lambda state: 0.5)
    assert policy.on_failure(ctx(1), ValueError()) == Retry(0.5)
    assert policy.on_failure(ctx(2), ValueError()) is None


def test_base_exceptions_are_never_retried() -> None:
    policy = RetryPolicy(stop=stop_after_attempt(10))
    assert policy.on_failure(ctx(1), KeyboardInterrupt()) is None


def test_works_as_subagent_hooks() -> None:
    policy = RetryPolicy(stop=stop_after_attempt(2), wait=wait_fixed(0.25))
    sub = SubagentHookContext(
        parent_agent="planner",
        subagent_name="researcher",
        execution_mode=ExecutionMode.SYNC,
        task="look it up",
        attempt=1,
        started_at=time.monotonic(),
    )
    assert isinstance(policy, orchestra.SubagentHooks)
    assert isinstance(policy, orchestra.TaskHooks)
    assert policy.on_failure(sub, TimeoutError()) == Retry(0.25)


async def test_in_a_run() -> None:
    calls = 0

    def flaky() -> str:
        nonlocal calls
        calls += 1
        if calls < 3:
            raise ConnectionError("try again")
        return "ok"

    dag = DAG("policy")
    dag.add(Task(id="fetch", fn=flaky))
    dag.add(Task(id="parse", fn=lambda: int("x")))  # ValueError: not retried by the policy
    policy = RetryPolicy(
        stop=stop_after_attempt(5),
        wait=wait_fixed(0.001),
        retry=retry_if_exception_type(ConnectionError),
    )
    result = await orchestra.run(dag, hooks=[policy])
    assert result.outputs["fetch"] == "ok"
    assert result.attempts == {"fetch": 3, "parse": 1}
    assert result.states["parse"] is TaskState.FAILED


def test_repr_shows_strategies() -> None:
    assert "stop_after_attempt" in repr(RetryPolicy(stop=stop_after_attempt(2)))
