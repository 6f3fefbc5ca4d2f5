"""Runs resumed in this process, on both anyio backends, through the store."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import orchestra
from orchestra import DAG, JournalError, RunResult, Task, TaskHooks, TaskState
from orchestra.journal._records import Journal

__all__ = ["RunTests"]


class _Calls(TaskHooks):
    """Records which task bodies ran (before_execute) in order."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.after: list[str] = []

    def before_execute(self, ctx: Any) -> None:
        self.started.append(ctx.task.id)

    def after_execute(self, ctx: Any, result: Any) -> None:
        self.after.append(ctx.task.id)


def _pipeline(flaky: dict[str, bool], *, name: str = "pipeline") -> DAG:
    """Extract -> transform -> load, report(extract): load fails while flaky["load"]."""
    dag = DAG(name)

    @dag.task
    def extract() -> list[int]:
        return [3, 1, 2]

    @dag.task(deps=[extract])
    def transform(extract: list[int]) -> list[int]:
        return sorted(extract)

    @dag.task(deps=[transform])
    def load(transform: list[int]) -> str:
        if flaky["load"]:
            raise ConnectionError("warehouse down")
        return ",".join(map(str, transform))

    @dag.task(deps=[extract])
    def report(extract: list[int]) -> int:
        return len(extract)

    return dag


def _double(source: int) -> int:
    return source * 2


def _triple(source: int) -> int:
    return source * 3


def _two() -> int:
    return 2


def _three() -> int:
    return 3


def _plus_one(middle: int) -> int:
    return middle + 1


def _chain(
    source: Callable[[], int], middle: Callable[[int], int], *, extra_dep: bool = False
) -> DAG:
    """Source -> middle -> sink, and extra (an upstream of middle when ``extra_dep``)."""
    dag = DAG("chain")
    dag.add(Task(id="source", fn=source))
    dag.add(Task(id="extra", fn=_three))
    dag.add(Task(id="middle", fn=middle, deps=["source", "extra"] if extra_dep else ["source"]))
    dag.add(Task(id="sink", fn=_plus_one, deps=["middle"]))
    return dag


class RunTests:
    """Resume: what is reused, what runs again, unknown runs, cancelled runs."""

    @pytest.mark.anyio
    async def test_resume_reuses_what_succeeded_and_runs_the_rest(self, journal: Journal) -> None:
        flaky = {"load": True}
        first = await orchestra.run(_pipeline(flaky), journal=journal)
        assert first.states["load"] is TaskState.FAILED
        assert first.reused == frozenset()
        flaky["load"] = False
        calls = _Calls()
        second = await orchestra.run(
            _pipeline(flaky), journal=journal, resume="last", hooks=[calls]
        )
        assert second.ok
        assert second.reused == {"extract", "transform", "report"}
        assert second.resumed_from == first.run_id
        assert second.run_id != first.run_id
        assert calls.started == ["load"]  # no body and no hook ran for the reused tasks
        assert calls.after == ["load"]
        assert second.outputs == {
            "extract": [3, 1, 2],
            "transform": [1, 2, 3],
            "load": "1,2,3",
            "report": 3,
        }
        assert second.attempts["extract"] == 0
        assert all(s is TaskState.SUCCEEDED for s in second.states.values())
        run = journal.load_run(second.run_id)
        assert run is not None
        assert run.info.resumed_from == first.run_id
        assert {t for t, r in run.tasks.items() if r.reused} == set(second.reused)
        # the resumed run is itself resumable: everything is reused now
        third = await orchestra.run(_pipeline(flaky), journal=journal, resume=second.run_id)
        assert third.reused == set(third.states)

    @pytest.mark.anyio
    async def test_a_changed_function_reruns_and_so_does_everything_downstream(
        self, journal: Journal
    ) -> None:
        first = await orchestra.run(_chain(_two, _double), journal=journal)
        assert first.outputs == {"source": 2, "extra": 3, "middle": 4, "sink": 5}
        second = await orchestra.run(_chain(_two, _triple), journal=journal, resume="last")
        assert second.reused == {"source", "extra"}
        assert second.outputs == {"source": 2, "extra": 3, "middle": 6, "sink": 7}
        third = await orchestra.run(_chain(_three, _triple), journal=journal, resume="last")
        assert third.reused == {"extra"}  # the source changed: nothing downstream is kept
        assert third.outputs == {"source": 3, "extra": 3, "middle": 9, "sink": 10}

    @pytest.mark.anyio
    async def test_changed_inputs_rerun_a_task(self, journal: Journal) -> None:
        await orchestra.run(_chain(_two, _double), journal=journal)
        # middle's body is the same and both its upstreams are reused, but it now takes
        # the extra one too: its inputs changed, so it runs again (and sink after it)
        changed = _chain(_two, _double, extra_dep=True)
        second = await orchestra.run(changed, journal=journal, resume="last")
        assert second.reused == {"source", "extra"}
        assert second.attempts["middle"] == 1
        assert second.attempts["sink"] == 1
        assert second.outputs["sink"] == 5

    @pytest.mark.anyio
    async def test_changed_task_ids_resume_what_matches(self, journal: Journal) -> None:
        flaky = {"load": False}
        await orchestra.run(_pipeline(flaky), journal=journal)
        dag = _pipeline(flaky)
        renamed = DAG("pipeline")
        for task in dag.tasks.values():
            new_id = "summary" if task.id == "report" else task.id
            renamed.add(Task(id=new_id, fn=task.fn, deps=list(task.deps)))
        second = await orchestra.run(renamed, journal=journal, resume="last")
        assert second.ok
        assert second.reused == {"extract", "transform", "load"}
        assert second.attempts["summary"] == 1

    @pytest.mark.anyio
    async def test_a_cancelled_run_journals_what_settled_and_resumes(
        self, journal: Journal
    ) -> None:
        import anyio

        started = anyio.Event()
        dag = DAG("stuck")

        @dag.task
        def first() -> int:
            return 1

        @dag.task(deps=[first])
        async def second(first: int) -> int:
            started.set()
            await anyio.sleep_forever()
            return first

        result: RunResult | None = None
        async with anyio.create_task_group() as tg:

            async def go() -> None:
                nonlocal result
                result = await orchestra.run(dag, journal=journal)

            tg.start_soon(go)
            await started.wait()
            tg.cancel_scope.cancel()
        assert result is None
        (latest,) = journal.list_runs("stuck")
        assert latest.states == {"succeeded": 1, "cancelled": 1}
        again = DAG("stuck")
        again.add(Task(id="first", fn=first.fn))
        again.add(Task(id="second", fn=lambda first: first + 1, deps=["first"]))
        resumed = await orchestra.run(again, journal=journal, resume="last")
        assert resumed.reused == {"first"}
        assert resumed.outputs == {"first": 1, "second": 2}

    @pytest.mark.anyio
    async def test_resume_of_an_unknown_run_lists_the_latest_ids(self, journal: Journal) -> None:
        flaky = {"load": False}
        runs = [await orchestra.run(_pipeline(flaky), journal=journal) for _ in range(2)]
        with pytest.raises(JournalError) as info:
            await orchestra.run(_pipeline(flaky), journal=journal, resume="nope")
        message = str(info.value)
        assert "'nope'" in message
        assert all(r.run_id in message for r in runs)
        with pytest.raises(JournalError, match="no run of DAG 'other'"):
            await orchestra.run(_pipeline(flaky, name="other"), journal=journal, resume="last")
        with pytest.raises(JournalError, match="it is a run of DAG 'pipeline'"):
            await orchestra.run(
                _pipeline(flaky, name="other"), journal=journal, resume=runs[0].run_id
            )
