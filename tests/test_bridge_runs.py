"""``orchestra.bridge.RunRecord``: what a bridge keeps of one run, settled by the driver."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import orchestra
import orchestra.tracing
from orchestra import Fail, HookChain, Replace, Retry, Skip, TaskHooks, TaskState
from orchestra.bridge import AttemptDriver, DoFail, RunRecord, TaskAttempts
from orchestra.tracing import names


class Script(TaskHooks):
    """Skips ``skip``, retries ``flaky`` once, recovers ``broken``, fails ``refused``."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, int, Mapping[str, Any]]] = []

    def before_execute(self, ctx: orchestra.TaskHookContext) -> Any:
        self.seen.append((ctx.task.id, ctx.attempt, dict(ctx.inputs)))
        if ctx.task.id == "skip":
            return Skip("not today")
        if ctx.task.id == "refused":
            return Fail("no")
        return None

    def on_failure(self, ctx: orchestra.TaskHookContext, error: BaseException) -> Any:
        if ctx.task.id == "flaky" and ctx.attempt == 1:
            return Retry()
        return Replace("recovered") if ctx.task.id == "broken" else None


def run_tasks(record: RunRecord, hooks: TaskHooks, bodies: Mapping[str, Any]) -> None:
    driver = AttemptDriver(HookChain([hooks]))
    for task_id, body in bodies.items():
        task = orchestra.Task(id=task_id, fn=body)
        attempts = driver.begin(
            task,
            {"n": 1},
            context=record.attempt_context,
            on_error=record.record,
            tracer=record.tracer,
            settle=record.settled,
        )
        attempts.run_sync(lambda kw, body=body: body(**kw), spans=record.spans(task_id))


def flaky_body() -> Any:
    calls: list[int] = []

    def flaky(n: int) -> int:
        calls.append(n)
        if len(calls) == 1:
            raise ConnectionError("503")
        return n + 1

    return flaky


def broken(n: int) -> int:
    raise ValueError("bad input")


def test_the_driver_settles_every_task_into_the_record() -> None:
    record = RunRecord("nightly", keep_outputs=True)
    hooks = Script()
    bodies = {
        "ok": lambda n: n * 10,
        "flaky": flaky_body(),
        "skip": lambda n: n,
        "broken": broken,
        "refused": lambda n: n,
    }
    run_tasks(record, hooks, bodies)
    result = record.result()
    assert result.states == {
        "ok": TaskState.SUCCEEDED,
        "flaky": TaskState.SUCCEEDED,
        "skip": TaskState.SKIPPED,
        "broken": TaskState.SUCCEEDED,
        "refused": TaskState.FAILED,
    }
    assert result.outputs == {"ok": 10, "flaky": 2, "broken": "recovered"}
    assert result.attempts == {"ok": 1, "flaky": 2, "skip": 1, "broken": 1, "refused": 1}
    assert result.reasons == {
        "skip": "skipped by Script.before_execute: not today",
        "broken": "recovered by Script.on_failure",
        "refused": "failed by Script.before_execute: no",
    }
    assert isinstance(result.errors["broken"], ValueError)  # kept though recovered
    assert isinstance(result.errors["refused"], orchestra.TaskFailed)
    assert set(result.durations) == set(bodies)
    assert not result.ok
    assert record.failed() == 1
    assert result.run_id == record.run_id
    # each attempt's context: the run's id, the inputs as a read-only copy
    assert ("flaky", 2, {"n": 1}) in hooks.seen


def test_outputs_are_kept_only_when_asked_and_an_ending_error_fails_the_run() -> None:
    record = RunRecord("r", run_id="run-1")
    run_tasks(record, Script(), {"ok": lambda n: n})
    assert record.result().outputs == {}
    assert record.result().ok
    stop = RuntimeError("budget spent")
    result = record.result(stop)
    assert not result.ok
    assert result.errors == {"r": stop}  # under the run's name: no task's error is it
    assert record.run_context(("ok",)) == orchestra.RunContext(
        dag="r", run_id="run-1", task_ids=("ok",), started_at=record.started_at
    )


def test_an_engine_says_how_its_inputs_and_upstream_show() -> None:
    class GraphRun(RunRecord):
        __slots__ = ()

        def inputs_of(self, inputs: Any) -> Mapping[str, Any]:
            return {"state": inputs}

        def upstream_of(self, task: orchestra.Task) -> Mapping[str, TaskState]:
            return {dep: self.states[dep] for dep in task.deps}

    seen: list[orchestra.TaskHookContext] = []

    class Look(TaskHooks):
        def before_execute(self, ctx: orchestra.TaskHookContext) -> None:
            seen.append(ctx)

    record = GraphRun("g", executor="planner")
    record.states["a"] = TaskState.SUCCEEDED
    driver = AttemptDriver(HookChain([Look()]))
    task = orchestra.Task(id="b", fn=lambda: None, deps=["a"])
    attempts: TaskAttempts = driver.begin(task, [1, 2], context=record.attempt_context)
    attempts.run_sync(lambda state: state)
    [ctx] = seen
    assert dict(ctx.inputs) == {"state": [1, 2]}
    assert dict(ctx.upstream_states) == {"a": TaskState.SUCCEEDED}
    assert ctx.executor == "planner"
    assert ctx.run_id == record.run_id


def test_the_run_span_holds_each_attempt_linked_to_the_one_before(
    exporter: InMemorySpanExporter,
) -> None:
    record = RunRecord("nightly")
    assert record.open_span(tasks=1) is not None
    run_tasks(record, Script(), {"flaky": flaky_body()})
    record.finish()
    spans = {s.name: s for s in exporter.get_finished_spans()}
    run = spans["run nightly"]
    assert run.attributes is not None
    assert run.attributes[names.ATTR_RUN_OK] is True
    assert run.attributes[names.ATTR_RUN_TASKS] == 1
    attempts = [s for s in exporter.get_finished_spans() if s.name == "task flaky"]
    assert [a.attributes[names.ATTR_TASK_ATTEMPT] for a in attempts if a.attributes] == [1, 2]
    assert all(a.parent is not None and a.parent.span_id == run.context.span_id for a in attempts)
    first, second = attempts
    assert [link.context.span_id for link in second.links] == [first.context.span_id]


def test_a_nested_attempt_goes_under_the_current_span(exporter: InMemorySpanExporter) -> None:
    from opentelemetry import trace

    record = RunRecord("inner")
    record.open_span(tasks=1)
    assert record.tracer is not None
    with record.tracer.start_as_current_span("outer node") as outer:
        nested = record.spans("child", nest=True)(1, None)
        flat = record.spans("child")(2, None)
    assert nested is not None
    assert flat is not None
    nested.end()
    flat.end()
    record.finish(RuntimeError("stopped"))
    assert nested.parent is not None
    assert nested.parent.span_id == outer.get_span_context().span_id
    assert record.span is not None
    assert flat.parent is not None
    assert flat.parent.span_id == record.span.get_span_context().span_id
    assert record.attempts == {"child": 2}
    [run] = [s for s in exporter.get_finished_spans() if s.name == "run inner"]
    assert run.attributes is not None
    assert run.attributes[names.ATTR_RUN_OK] is False
    assert trace.get_current_span() is trace.INVALID_SPAN


def test_with_tracing_off_no_span_is_made(exporter: InMemorySpanExporter) -> None:
    orchestra.tracing.set_enabled(False)
    try:
        record = RunRecord("quiet")
        assert record.open_span(tasks=3) is None
        assert record.tracer is None
        assert record.spans("t")(1, None) is None
        assert record.attempts == {"t": 1}  # counted all the same
        record.finish()  # nothing to end
    finally:
        orchestra.tracing.set_enabled(None)
    assert exporter.get_finished_spans() == ()


def test_a_failed_task_keeps_its_own_error() -> None:
    record = RunRecord("r")
    driver = AttemptDriver(HookChain([]))
    attempts = driver.begin(
        orchestra.Task(id="t", fn=broken), {"n": 1}, context=record.attempt_context,
        settle=record.settled,
    )  # fmt: skip
    end = attempts.run_sync(lambda kw: broken(**kw))
    assert isinstance(end, DoFail)
    assert record.errors["t"] is end.error
    assert record.states == {"t": TaskState.FAILED}
    with pytest.raises(KeyError):
        record.reasons["t"]  # a plain failure: nobody had an opinion
