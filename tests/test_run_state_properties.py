"""The run-state owner's invariants on random DAGs, rules and outcomes (hypothesis).

``RunState`` is driven as the workers drive it: tasks are taken from its ready queue,
started, and ended in any order by succeed / fail / skip (a branch task choosing any
subset of its dependents), and the run may be cancelled at any point. Whatever happens:
every task ends in exactly one terminal state, reported once; a task is started only
from PENDING and queued at most once; the counts match the states.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from orchestra import DAG, Task, TaskState
from orchestra.dag._run_state import RunState
from tests.strategies import dag_specs

S = TaskState
NOT_OK = {S.FAILED, S.UPSTREAM_FAILED, S.CANCELLED}


def _plan(specs: list[dict[str, Any]], branches: set[int]) -> Any:
    dag = DAG("prop")
    for i, spec in enumerate(specs):
        dag.add(
            Task(
                id=spec["id"],
                fn=lambda **_: None,
                deps=spec["deps"],
                trigger=spec["trigger"],
                branch=i in branches,
            )
        )
    return dag.plan()


@settings(max_examples=150, deadline=None)
@given(specs=dag_specs(max_tasks=12), data=st.data())
def test_every_task_ends_once_and_the_counts_match(
    specs: list[dict[str, Any]], data: st.DataObject
) -> None:
    branches = data.draw(st.sets(st.integers(0, len(specs) - 1), max_size=3))
    plan = _plan(specs, branches)
    ended: list[int] = []
    state = RunState(plan, ended.append)
    queued: Counter[int] = Counter()
    running: list[int] = []
    cancel_after = data.draw(st.integers(0, 3 * len(specs)))
    for _ in range(cancel_after):
        while state.ready:
            i = state.ready.popleft()
            queued[i] += 1
            assert state.states[i] is S.PENDING, "a task queued twice or after its end"
            assert state.start(i) == 1
            assert state.states[i] is S.RUNNING
            running.append(i)
        if not running:
            break
        i = running.pop(data.draw(st.integers(0, len(running) - 1)))
        how = data.draw(st.sampled_from(["succeed", "fail", "skip"]))
        if how == "succeed" and i in branches:
            chosen = (
                data.draw(st.sets(st.sampled_from(plan.dependents[i])))
                if plan.dependents[i]
                else set()
            )
            state.succeed(i, "out", chosen=chosen)
        elif how == "succeed":
            state.succeed(i, "out")
        elif how == "fail":
            state.fail(i, ValueError("boom"))
        else:
            state.skip(i, "skipped")
        assert state.states[i].terminal
    if not state.finished:
        state.cancel_unfinished()
    assert state.finished
    assert all(s.terminal for s in state.states)
    assert sorted(ended) == list(range(len(specs))), "each task reported ended exactly once"
    assert max(queued.values(), default=0) <= 1
    assert state.done == len(specs)
    assert state.not_ok == sum(1 for s in state.states if s in NOT_OK)
    assert set(state.outputs) == {
        plan.order[i].id for i, s in enumerate(state.states) if s is S.SUCCEEDED
    }
    for i, s in enumerate(state.states):
        if state.attempts[i] == 0:  # never started: it ended by its rule or the cancellation
            assert s in {S.SKIPPED, S.UPSTREAM_FAILED, S.CANCELLED}, (plan.order[i].id, s)
