"""The task matrix on orchestra's DAG scheduler and dispatcher (each integration runs it too)."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

import anyio
import pytest

import orchestra
from orchestra.bridge.testing import TASK_CELLS, TaskRun, check_task_cell


class DagEngine:
    """One task ``work`` in a DAG run by ``orchestra.run_sync``."""

    name = "orchestra DAG"
    cannot: Mapping[str, str] = MappingProxyType({})

    def run(self, hooks: Sequence[object], body: Callable[[], Any], tags: Sequence[str]) -> TaskRun:
        dag = orchestra.DAG("matrix")
        metadata = MappingProxyType({"tags": tuple(tags)})
        dag.add(orchestra.Task(id="work", fn=body, metadata=metadata))
        result = orchestra.run_sync(dag, hooks=list(hooks))
        return TaskRun(result.states["work"], result.outputs.get("work"), result.errors.get("work"))


@pytest.mark.parametrize("cell", TASK_CELLS)
def test_task_matrix_on_the_dag(cell: str) -> None:
    reason = check_task_cell(DagEngine(), cell)
    if reason is not None:
        pytest.skip(reason)


def test_a_cell_the_engine_does_not_do_fails_naming_engine_and_cell() -> None:
    class Ignores(DagEngine):
        name = "broken engine"

        def run(
            self, hooks: Sequence[object], body: Callable[[], Any], tags: Sequence[str]
        ) -> TaskRun:
            return super().run((), body, tags)  # drops the hooks

    with pytest.raises(AssertionError, match=r"broken engine, cell 'fail'"):
        check_task_cell(Ignores(), "fail")


def test_cannot_names_its_reason_and_only_known_cells() -> None:
    class Cannot(DagEngine):
        cannot = MappingProxyType({"one_trace": "no spans here"})

    assert check_task_cell(Cannot(), "one_trace") == "no spans here"

    class Typo(DagEngine):
        cannot = MappingProxyType({"one_trace_": "?"})

    with pytest.raises(KeyError, match="one_trace_"):
        check_task_cell(Typo(), "retry")


class _AtDispatch(orchestra.SubagentHooks):
    """One matrix hook at a dispatch's moments: ``before_dispatch`` runs its
    ``before_execute``, ``after_dispatch`` its ``after_execute`` (with the agent's output),
    ``on_failure`` its ``on_failure``; its ``fail_closed`` and ``timeout`` are its own."""

    def __init__(self, hook: Any) -> None:
        self.hook = hook
        self.fail_closed = getattr(hook, "fail_closed", False)  # type: ignore[misc]
        if hasattr(hook, "timeout"):
            self.timeout = hook.timeout

    async def before_dispatch(self, ctx: Any) -> Any:
        return await _maybe(self.hook.before_execute(ctx))

    async def after_dispatch(self, ctx: Any, result: Any) -> Any:
        return await _maybe(self.hook.after_execute(ctx, result.output))

    async def on_failure(self, ctx: Any, error: BaseException) -> Any:
        return await _maybe(self.hook.on_failure(ctx, error))


async def _maybe(answer: Any) -> Any:
    return await answer if inspect.isawaitable(answer) else answer


class DispatcherEngine:
    """One SYNC dispatch to the agent ``work``, whose ``run`` calls the body.

    The dispatcher's hooks are ``SubagentHooks``: each matrix hook runs at the matching
    moment of the dispatch (``_AtDispatch``).
    """

    name = "orchestra dispatcher"
    cannot: Mapping[str, str] = MappingProxyType(
        {
            "skip_by_tags": "a dispatch cannot be skipped (SubagentHooks answer Fail, Delegate,"
            " Replace or Retry) and agents carry no tags",
            "fail": "a Fail raises DispatchError (the dispatcher's error, its reason in the"
            " message), not TaskFailed",
            "give_output": "before_dispatch's Replace is the task's new text, not an output",
            "on_end_once": "SubagentHooks have no on_end: SubagentStop is after_dispatch's",
            "one_trace": "a dispatch made outside any span starts one root invoke_agent span"
            " per attempt (a trace each); made inside a span (a DAG task, an agent's run),"
            " its attempts are in the caller's trace",
        }
    )

    def run(self, hooks: Sequence[object], body: Callable[[], Any], tags: Sequence[str]) -> TaskRun:
        class Work:
            name = "work"

            async def run(self, task: str, ctx: Any) -> Any:
                return body()

        async def dispatch() -> TaskRun:
            dispatcher = orchestra.Dispatcher([Work()], hooks=[_AtDispatch(h) for h in hooks])
            try:
                result = await dispatcher.dispatch("work", "do the work")
            except orchestra.DispatchError as error:
                return TaskRun(orchestra.TaskState.FAILED, error=error)
            return TaskRun(orchestra.TaskState.SUCCEEDED, result.output)

        return anyio.run(dispatch)


@pytest.mark.parametrize("cell", TASK_CELLS)
def test_task_matrix_on_the_dispatcher(cell: str) -> None:
    reason = check_task_cell(DispatcherEngine(), cell)
    if reason is not None:
        pytest.skip(reason)


def test_a_fail_before_a_dispatch_is_a_dispatch_error_with_its_reason() -> None:
    class No(orchestra.SubagentHooks):
        def before_dispatch(self, ctx: Any) -> orchestra.Fail:
            return orchestra.Fail("not allowed")

    calls: list[str] = []

    class Work:
        name = "work"

        async def run(self, task: str, ctx: Any) -> str:
            calls.append(task)
            return "done"

    async def dispatch() -> None:
        await orchestra.Dispatcher([Work()], hooks=[No()]).dispatch("work", "t")

    with pytest.raises(orchestra.DispatchError, match="not allowed"):
        anyio.run(dispatch)
    assert calls == []


def test_a_retried_dispatch_inside_a_span_is_one_trace() -> None:
    from orchestra.tracing import get_tracer
    from orchestra.tracing.testing import recording

    class Again(orchestra.SubagentHooks):
        def on_failure(self, ctx: Any, error: BaseException) -> orchestra.Retry:
            return orchestra.Retry()

    failures = [ConnectionError("503")]

    class Work:
        name = "work"

        async def run(self, task: str, ctx: Any) -> str:
            if failures:
                raise failures.pop()
            return "done"

    async def dispatch() -> None:
        tracer = get_tracer()
        assert tracer is not None
        with tracer.start_as_current_span("caller"):
            await orchestra.Dispatcher([Work()], hooks=[Again()]).dispatch("work", "t")

    with recording() as exporter:
        anyio.run(dispatch)
    spans = exporter.get_finished_spans()
    assert [s.name for s in spans].count("invoke_agent work") == 2
    assert len({s.context.trace_id for s in spans if s.context is not None}) == 1
