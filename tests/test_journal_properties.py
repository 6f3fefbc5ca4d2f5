"""Resume invariants on random DAGs (hypothesis): what is reused, what runs, what comes out."""

from __future__ import annotations

import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import orchestra
from orchestra import DAG, Task, TaskState
from orchestra.journal import SQLiteJournal

TRIGGERS = ("all_success", "all_done", "none_failed")


@st.composite
def crashy_dags(draw: st.DrawFn) -> tuple[list[tuple[str, list[str], str]], set[str]]:
    """Tasks (id, deps among earlier ones, trigger) and the ids whose body fails at first."""
    n = draw(st.integers(1, 12))
    tasks = []
    for i in range(n):
        deps = draw(st.lists(st.integers(0, i - 1), unique=True, max_size=3)) if i else []
        tasks.append((f"t{i}", [f"t{d}" for d in deps], draw(st.sampled_from(TRIGGERS))))
    failing = draw(st.sets(st.sampled_from([t[0] for t in tasks])))
    return tasks, failing


def build(spec: list[tuple[str, list[str], str]], failing: set[str], ran: Counter[str]) -> DAG:
    dag = DAG("random")
    for tid, deps, trigger in spec:

        def body(_tid: str = tid, **inputs: Any) -> tuple[str, tuple[Any, ...]]:
            ran[_tid] += 1
            if _tid in failing:
                raise RuntimeError(f"{_tid} fails")
            return (_tid, tuple(sorted(inputs.items(), key=lambda kv: kv[0])))

        dag.add(Task(id=tid, fn=body, deps=deps, trigger=trigger))  # type: ignore[arg-type]
    return dag


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(crashy_dags())
def test_resume_reuses_exactly_the_succeeded_prefix_and_ends_like_a_clean_run(
    case: tuple[list[tuple[str, list[str], str]], set[str]],
) -> None:
    spec, failing = case
    deps = {tid: d for tid, d, _ in spec}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "runs.db"
        ran: Counter[str] = Counter()
        first = orchestra.run_sync(build(spec, failing, ran), journal=path)
        first_ran = Counter(ran)
        second = orchestra.run_sync(build(spec, set(), ran), journal=path, resume="last")
        clean = orchestra.run_sync(build(spec, set(), Counter()))

        # reused: succeeded the first time, and so did everything upstream of it
        expected: set[str] = set()
        for tid, _, _ in spec:  # in topological order
            if first.states[tid] is TaskState.SUCCEEDED and all(d in expected for d in deps[tid]):
                expected.add(tid)
        assert second.reused == expected
        assert second.ok
        assert second.outputs == clean.outputs
        for tid, _, _ in spec:  # every body ran once more, unless its output was reused
            assert ran[tid] == first_ran[tid] + (0 if tid in expected else 1), tid
            assert second.attempts[tid] == (0 if tid in expected else 1)

        with SQLiteJournal(path, read_only=True) as journal:
            run = journal.load_run(second.run_id)
        assert run is not None
        assert run.info.resumed_from == first.run_id
        assert {t for t, r in run.tasks.items() if r.reused} == expected
        assert run.info.states == {"succeeded": len(spec)}
