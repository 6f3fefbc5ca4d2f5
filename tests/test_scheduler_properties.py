from __future__ import annotations

import inspect
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import dag_specs

import orchestra
from orchestra import DAG, RunContext, RunResult, Task, TaskHookContext, TaskHooks, TaskState
from orchestra.dag._rules import RULES

S = TaskState
FAILED_LIKE = (S.FAILED, S.UPSTREAM_FAILED)


class Scripted(TaskHooks):
    """Answers from each task's script, per attempt; counts the run's moments."""

    def __init__(self, specs: dict[str, dict[str, Any]]) -> None:
        self.specs = specs
        self.ends: dict[str, list[TaskState]] = {}
        self.runs: list[RunResult] = []
        self.violations: list[str] = []

    def before_execute(self, ctx: TaskHookContext) -> Any:
        # no task starts before its rule allows: its deps ended, or (one_success,
        # one_failed) one of them ended so, or (always) at once
        ups = list(ctx.upstream_states.values())
        rule = ctx.task.trigger
        if ups and rule == "one_success":
            started = any(s is S.SUCCEEDED for s in ups)
        elif ups and rule == "one_failed":
            started = any(s in FAILED_LIKE for s in ups)
        else:
            started = rule == "always" or all(s.terminal for s in ups)
        if not started:
            self.violations.append(f"{ctx.task.id} ({rule}) started with upstreams {ups}")
        answers = self.specs[ctx.task.id]["before"]
        return answers[ctx.attempt - 1] if ctx.attempt <= len(answers) else None

    def on_end(self, ctx: TaskHookContext, state: TaskState) -> None:
        self.ends.setdefault(ctx.task.id, []).append(state)

    def after_run(self, ctx: RunContext, result: RunResult) -> None:
        self.runs.append(result)

    def on_failure(self, ctx: TaskHookContext, error: BaseException) -> Any:
        answers = self.specs[ctx.task.id]["on_failure"]
        return answers[ctx.attempt - 1] if ctx.attempt <= len(answers) else None


def expected_gate(trigger: str, upstream: list[TaskState]) -> TaskState | None:
    """How a task ends given its upstreams' final states: None if it runs (the oracle)."""
    succeeded = any(s is S.SUCCEEDED for s in upstream)
    failed = any(s in FAILED_LIKE for s in upstream)
    skipped = any(s is S.SKIPPED for s in upstream)
    cancelled = any(s is S.CANCELLED for s in upstream)
    if not upstream or trigger in ("all_done", "always"):
        return None
    if trigger in ("all_success", "none_failed", "none_failed_min_one_success"):
        if failed:
            return S.UPSTREAM_FAILED
        if cancelled:
            return S.CANCELLED
        if trigger == "all_success" and skipped:
            return S.SKIPPED
        if trigger == "none_failed_min_one_success" and not succeeded:
            return S.SKIPPED
        return None
    if trigger == "one_success":
        if succeeded:
            return None
        return S.UPSTREAM_FAILED if failed else S.CANCELLED if cancelled else S.SKIPPED
    if trigger == "one_failed":
        return None if failed else S.CANCELLED if cancelled else S.SKIPPED
    if trigger == "all_failed":
        if succeeded or skipped:
            return S.SKIPPED
        return S.CANCELLED if cancelled else None
    assert trigger == "all_skipped"
    if succeeded or failed:
        return S.SKIPPED
    return S.CANCELLED if cancelled else None


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    specs=dag_specs(),
    budget=st.none() | st.integers(0, 4),
    max_attempts=st.integers(1, 4),
    concurrency=st.integers(1, 4),
    fail_fast=st.booleans(),
)
def test_random_dags_keep_the_invariants(
    backend: str,
    specs: list[dict[str, Any]],
    budget: int | None,
    max_attempts: int,
    concurrency: int,
    fail_fast: bool,
) -> None:
    by_id = {s["id"]: s for s in specs}
    calls: dict[str, int] = {}

    def make_body(spec: dict[str, Any]) -> Any:
        async def body(**upstream: Any) -> str:
            tid = spec["id"]
            n = calls[tid] = calls.get(tid, 0) + 1
            if spec["suspend"]:
                await anyio.lowlevel.checkpoint()
            if n <= len(spec["fails"]) and spec["fails"][n - 1]:
                raise RuntimeError(f"{tid} attempt {n}")
            return f"out:{tid}"

        return body

    dag = DAG("prop")
    for spec in specs:
        dag.add(
            Task(
                id=spec["id"],
                fn=make_body(spec),
                deps=spec["deps"],
                trigger=spec["trigger"],
                retries=spec["retries"],
                # fail_fast needs it on rules that run after failures; elsewhere a no-op
                run_on_fail_fast=spec["run_on_fail_fast"]
                or (fail_fast and RULES[spec["trigger"]].runs_after_failures),
            )
        )
    hooks = Scripted(by_id)
    result = orchestra.run_sync(
        dag,
        hooks=[hooks],
        max_concurrency=concurrency,
        fail_fast=fail_fast,
        retry_budget=budget,
        max_attempts=max_attempts,
        backend=backend,
    )

    assert hooks.violations == []
    # on_end exactly once per task, with its terminal state; after_run exactly once
    assert hooks.ends == {tid: [state] for tid, state in result.states.items()}
    assert hooks.runs == [result]
    # exactly one terminal state per task
    assert set(result.states) == set(by_id)
    assert all(s.terminal for s in result.states.values())
    # outputs kept for every SUCCEEDED task, and only for those
    succeeded = {t for t, s in result.states.items() if s is S.SUCCEEDED}
    assert set(result.outputs) == succeeded
    assert all(result.outputs[t] == f"out:{t}" for t in succeeded)
    # attempts within the caps
    assert all(a <= max_attempts for a in result.attempts.values())
    retries = sum(max(0, a - 1) for a in result.attempts.values())
    if budget is not None:
        assert retries <= budget
    stopped = fail_fast and any(s is S.FAILED for s in result.states.values())
    # propagation by trigger rule (a fail-fast stop cancels whatever had not ended)
    for tid, spec in by_id.items():
        if stopped and result.states[tid] is S.CANCELLED:
            continue
        upstream = [result.states[d] for d in spec["deps"]]
        gate = expected_gate(spec["trigger"], upstream)
        if result.attempts[tid] == 0:
            assert gate is not None, tid
            assert result.states[tid] is gate, tid
        else:
            assert gate is None, tid
            assert calls.get(tid, 0) <= result.attempts[tid]
    assert result.ok == all(s not in (*FAILED_LIKE, S.CANCELLED) for s in result.states.values())


class Noop(TaskHooks):
    """A hook with no opinion: its presence sends every task through the attempt loop."""

    def before_execute(self, ctx: TaskHookContext) -> None:
        return None


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(specs=dag_specs(), concurrency=st.integers(1, 4), inline=st.booleans())
def test_bodies_run_in_place_end_as_through_the_attempt_loop(
    backend: str, specs: list[dict[str, Any]], concurrency: int, inline: bool
) -> None:
    """A run with no hooks runs plain bodies in its workers; a no-op hook changes nothing.

    Same states, outputs, errors and attempts, task by task: failures, retries (tasks
    with retries take the attempt loop either way), trigger rules and upstream failures.
    """

    def make_body(spec: dict[str, Any]) -> Any:
        def outcome(upstream: dict[str, Any]) -> str:
            calls = spec.setdefault("calls", {})
            n = calls[backend, hooked] = calls.get((backend, hooked), 0) + 1
            if n <= len(spec["fails"]) and spec["fails"][n - 1]:
                raise RuntimeError(f"{spec['id']} attempt {n}")
            return f"out:{spec['id']}:{sorted(upstream)}"

        if inline:
            return lambda **upstream: outcome(upstream)

        async def body(**upstream: Any) -> str:
            if spec["suspend"]:
                await anyio.lowlevel.checkpoint()
            return outcome(upstream)

        return body

    dag = DAG("in-place")
    for spec in specs:
        dag.add(
            Task(
                id=spec["id"],
                fn=make_body(spec),
                deps=spec["deps"],
                trigger=spec["trigger"],
                retries=spec["retries"],
                inline=inline,
            )
        )
    results = []
    for hooked in (False, True):
        results.append(
            orchestra.run_sync(
                dag,
                hooks=[Noop()] if hooked else [],
                max_concurrency=concurrency,
                backend=backend,
            )
        )
    plain, looped = results
    assert dict(plain.states) == dict(looped.states)
    assert plain.outputs == looped.outputs
    assert dict(plain.attempts) == dict(looped.attempts)
    assert {t: repr(e) for t, e in plain.errors.items()} == {
        t: repr(e) for t, e in looped.errors.items()
    }
    assert set(plain.durations) == {t for t, n in plain.attempts.items() if n}
    assert plain.ok == looped.ok


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.lists(st.integers(min_value=0), max_size=3), min_size=1, max_size=25),
    st.randoms(use_true_random=False),
)
def test_any_order_of_adding_plans_and_runs_alike(edges: list[list[int]], rnd: Any) -> None:
    """Tasks added in any order (upstreams after their dependents too) plan a topological
    order, and each body gets its own upstreams' outputs, as when added in order."""
    n = len(edges)
    deps = [sorted({f"t{j % i}" for j in ups}) if i else [] for i, ups in enumerate(edges)]

    def body(name: str, takes: list[str]) -> Any:
        def fn(**upstream: Any) -> Any:
            return (name, tuple(sorted(upstream.items())))

        # It takes only ``takes`` of its upstreams' outputs, by name (as a def would).
        kw = inspect.Parameter.KEYWORD_ONLY
        fn.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
            [inspect.Parameter(d, kw, default=None) for d in takes]
        )
        return fn

    tasks = [
        Task(
            id=f"t{i}",
            fn=body(f"t{i}", [d for d in deps[i] if rnd.random() < 0.5]),
            deps=deps[i],
            inline=True,
        )
        for i in range(n)
    ]
    shuffled = tasks[:]
    rnd.shuffle(shuffled)
    in_order, any_order = DAG("in order"), DAG("any order")
    for task in tasks:
        in_order.add(task)
    for task in shuffled:
        any_order.add(task)
    order = [t.id for t in any_order.validate()]
    place = {tid: k for k, tid in enumerate(order)}
    assert sorted(order) == sorted(t.id for t in tasks)
    assert all(place[d] < place[t.id] for t in tasks for d in t.deps)
    assert orchestra.run_sync(any_order).outputs == orchestra.run_sync(in_order).outputs
