"""Spans and metrics of DAG runs, read with the SDK's in-memory exporter."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode
from tenacity import stop_after_attempt

import orchestra
import orchestra.tracing as ot
from orchestra import DAG, Fail, RetryPolicy, Skip, TaskHookContext, TaskHooks, TaskState

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parent.parent


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def named(spans: Sequence[ReadableSpan], name: str) -> list[ReadableSpan]:
    return sorted(
        (s for s in spans if s.name == name), key=lambda s: attrs(s).get(ot.ATTR_TASK_ATTEMPT, 0)
    )


def parent_id(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def span_id(span: ReadableSpan) -> int:
    ctx = span.get_span_context()
    assert ctx is not None
    return ctx.span_id


def assert_one_trace(spans: Sequence[ReadableSpan]) -> ReadableSpan:
    """Every span in one trace, descending from the single run span; return it."""
    roots = [s for s in spans if s.name.startswith("run ")]
    assert len(roots) == 1
    root = roots[0]
    by_id = {span_id(s): s for s in spans}
    for s in spans:
        ctx = s.get_span_context()
        assert ctx is not None
        assert ctx.trace_id == root.get_span_context().trace_id  # type: ignore[union-attr]
        node = s
        while node is not root:
            pid = parent_id(node)
            assert pid in by_id, f"{s.name} does not descend from the run span"
            node = by_id[pid]
    return root


class Flaky:
    def __init__(self, n: int) -> None:
        self.n = n
        self.calls = 0

    def __call__(self) -> str:
        self.calls += 1
        if self.calls <= self.n:
            raise ConnectionError(f"call {self.calls}")
        return "ok"


async def test_run_and_task_spans(exporter: InMemorySpanExporter) -> None:
    dag = DAG("etl")

    @dag.task
    async def extract() -> int:
        return 1

    @dag.task(deps=[extract])
    def transform(extract: int) -> int:  # a sync body, in a worker thread
        return extract + 1

    result = await orchestra.run(dag, max_concurrency=4)
    spans = exporter.get_finished_spans()
    assert sorted(s.name for s in spans) == ["run etl", "task extract", "task transform"]
    root = assert_one_trace(spans)
    assert root.parent is None
    assert attrs(root) == {
        ot.ATTR_DAG_NAME: "etl",
        ot.ATTR_DAG_DEPS: '{"extract":[],"transform":["extract"]}',
        ot.ATTR_RUN_ID: result.run_id,
        ot.ATTR_RUN_TASKS: 2,
        ot.ATTR_RUN_MAX_CONCURRENCY: 4,
        ot.ATTR_RUN_OK: True,
        ot.ATTR_RUN_FAILED: 0,
    }
    assert root.status.status_code is StatusCode.UNSET
    (task,) = named(spans, "task transform")
    assert parent_id(task) == span_id(root)
    assert attrs(task) == {
        ot.ATTR_TASK_ID: "transform",
        ot.ATTR_TASK_ATTEMPT: 1,
        ot.ATTR_TASK_STATE: "succeeded",
    }
    assert task.kind is trace.SpanKind.INTERNAL


async def test_each_run_is_its_own_trace(exporter: InMemorySpanExporter) -> None:
    dag = DAG("twice")
    dag.task(lambda: 1, id="a")
    await orchestra.run(dag)
    await orchestra.run(dag)
    runs = named(exporter.get_finished_spans(), "run twice")
    assert len(runs) == 2
    assert len({r.get_span_context().trace_id for r in runs}) == 2  # type: ignore[union-attr]


async def test_spans_inside_bodies_descend_from_the_task(
    exporter: InMemorySpanExporter,
) -> None:
    provider_tracer = ot.get_tracer()  # the test provider: the user's spans in the same trace
    assert provider_tracer is not None
    dag = DAG("bodies")

    @dag.task
    def in_thread() -> None:
        with provider_tracer.start_as_current_span("user work in a thread"):
            pass

    @dag.task
    async def on_loop() -> None:
        with provider_tracer.start_as_current_span("user work on the loop"):
            pass

    await orchestra.run(dag, max_concurrency=2)
    spans = exporter.get_finished_spans()
    assert_one_trace(spans)
    by_id = {span_id(s): s for s in spans}
    for name, task in (
        ("user work in a thread", "in_thread"),
        ("user work on the loop", "on_loop"),
    ):
        (user,) = named(spans, name)
        assert by_id[parent_id(user)].name == f"task {task}"  # type: ignore[index]


class Policy(TaskHooks):
    def before_execute(self, ctx: TaskHookContext) -> Skip | None:
        if ctx.task.metadata.get("optional"):
            return Skip("optional step")
        return None

    def on_failure(self, ctx: TaskHookContext, error: BaseException) -> Fail | None:
        if isinstance(error, KeyError):
            return Fail("bad data")
        return None


async def test_decision_provenance(exporter: InMemorySpanExporter) -> None:
    dag = DAG("decide")
    flaky = Flaky(2)
    dag.task(flaky, id="flaky")
    dag.task(lambda: None, id="optional", metadata={"optional": True})

    def broken() -> None:
        raise KeyError("k")

    dag.task(broken, id="broken")
    result = await orchestra.run(
        dag, hooks=[Policy(), RetryPolicy(stop=stop_after_attempt(5), wait=lambda _: 0.01)]
    )
    assert result.states["flaky"] is TaskState.SUCCEEDED
    spans = exporter.get_finished_spans()
    root = assert_one_trace(spans)

    # a flaky task retried by RetryPolicy: three attempt spans, linked, decisions on each
    first, second, third = named(spans, "task flaky")
    for span, state in ((first, "retrying"), (second, "retrying"), (third, "succeeded")):
        assert attrs(span)[ot.ATTR_TASK_STATE] == state
        assert parent_id(span) == span_id(root)
    for earlier, later in ((first, second), (second, third)):
        (link,) = later.links
        assert link.context.span_id == span_id(earlier)
        assert dict(link.attributes or {}) == {ot.ATTR_LINK_TYPE: ot.LINK_PREVIOUS_ATTEMPT}
    assert not first.links
    assert attrs(first)[ot.ATTR_DECISION] == "retry"
    assert attrs(first)[ot.ATTR_DECISION_BY] == "RetryPolicy.on_failure"
    assert attrs(first)[ot.ATTR_DECISION_DELAY] == 0.01
    assert first.status.status_code is StatusCode.ERROR
    assert attrs(first)[ot.ATTR_ERROR_TYPE] == "ConnectionError"
    assert [e.name for e in first.events] == ["exception", ot.EVENT_DECISION]
    event = dict(first.events[1].attributes or {})
    assert event[ot.ATTR_DECISION_ATTEMPT] == 1
    assert event[ot.ATTR_DECISION_BY] == "RetryPolicy.on_failure"
    assert ot.ATTR_DECISION not in attrs(third)
    assert third.status.status_code is StatusCode.UNSET

    # hook spans: children of the attempt they were called for, with their answer
    hooks = [s for s in spans if parent_id(s) == span_id(first)]
    assert [h.name for h in hooks] == [
        "hook before_execute",
        "hook on_failure",
        "hook on_failure",
    ]
    policy_hook = [h for h in hooks if attrs(h)[ot.ATTR_HOOK_NAME] == "RetryPolicy"]
    assert len(policy_hook) == 1
    assert attrs(policy_hook[0]) == {
        ot.ATTR_HOOK_EVENT: "on_failure",
        ot.ATTR_HOOK_TYPE: "python",
        ot.ATTR_HOOK_NAME: "RetryPolicy",
        ot.ATTR_HOOK_SUBJECT: "flaky",
        ot.ATTR_DECISION: "retry",
        ot.ATTR_DECISION_BY: "RetryPolicy.on_failure",
        ot.ATTR_DECISION_DELAY: 0.01,
    }

    # a Skip from before_execute
    (skipped,) = named(spans, "task optional")
    assert attrs(skipped)[ot.ATTR_TASK_STATE] == "skipped"
    assert attrs(skipped)[ot.ATTR_DECISION] == "skip"
    assert attrs(skipped)[ot.ATTR_DECISION_BY] == "Policy.before_execute"
    assert attrs(skipped)[ot.ATTR_DECISION_REASON] == "optional step"

    # a Fail from on_failure, with the exception recorded
    (failed,) = named(spans, "task broken")
    assert attrs(failed)[ot.ATTR_TASK_STATE] == "failed"
    assert attrs(failed)[ot.ATTR_DECISION] == "fail"
    assert attrs(failed)[ot.ATTR_DECISION_BY] == "Policy.on_failure"
    assert attrs(failed)[ot.ATTR_DECISION_REASON] == "bad data"
    assert failed.status.status_code is StatusCode.ERROR
    exception = next(e for e in failed.events if e.name == "exception")
    assert dict(exception.attributes or {})["exception.type"] == "KeyError"
    assert attrs(root)[ot.ATTR_RUN_OK] is False
    assert attrs(root)[ot.ATTR_RUN_FAILED] == 1
    assert root.status.status_code is StatusCode.ERROR


async def test_task_retries_and_refusals_are_attributed(exporter: InMemorySpanExporter) -> None:
    dag = DAG("own")
    dag.task(Flaky(1), id="own", retries=1)
    dag.task(Flaky(5), id="capped", retries=5)
    result = await orchestra.run(dag, max_attempts=2)
    assert result.states["capped"] is TaskState.FAILED
    spans = exporter.get_finished_spans()
    own1, _ = named(spans, "task own")
    assert attrs(own1)[ot.ATTR_DECISION] == "retry"
    assert attrs(own1)[ot.ATTR_DECISION_BY] == "task.retries"
    _, capped2 = named(spans, "task capped")
    assert attrs(capped2)[ot.ATTR_DECISION] == "fail"
    assert attrs(capped2)[ot.ATTR_DECISION_BY] == "orchestra"
    assert "attempt cap" in attrs(capped2)[ot.ATTR_DECISION_REASON]
    # the refused retry is on the record too, before orchestra's Fail
    kinds = [dict(e.attributes or {}).get(ot.ATTR_DECISION) for e in capped2.events]
    assert kinds[-2:] == ["retry", "fail"]


class Raises(TaskHooks):
    def before_execute(self, ctx: TaskHookContext) -> None:
        raise RuntimeError("hook bug")


async def test_hook_error_is_recorded_and_isolated(exporter: InMemorySpanExporter) -> None:
    dag = DAG("hookbug")
    dag.task(lambda: 1, id="a")
    result = await orchestra.run(dag, hooks=[Raises()])
    assert result.ok
    assert len(result.hook_errors) == 1
    spans = exporter.get_finished_spans()
    assert_one_trace(spans)
    (hook,) = named(spans, "hook before_execute")
    assert hook.status.status_code is StatusCode.ERROR
    assert [e.name for e in hook.events] == [ot.EVENT_HOOK_ERROR, "exception"]
    assert attrs(hook)[ot.ATTR_ERROR_TYPE] == "HookError"
    (task,) = named(spans, "task a")
    assert attrs(task)[ot.ATTR_TASK_STATE] == "succeeded"


async def test_tasks_that_never_ran_are_events_on_the_run(
    exporter: InMemorySpanExporter,
) -> None:
    dag = DAG("gated")

    def boom() -> None:
        raise ValueError("no")

    a = dag.task(boom, id="a")
    dag.task(lambda a: a, id="b", deps=[a])
    await orchestra.run(dag)
    (root,) = named(exporter.get_finished_spans(), "run gated")
    assert [(e.name, dict(e.attributes or {})) for e in root.events] == [
        (ot.EVENT_TASK_NOT_RUN, {ot.ATTR_TASK_ID: "b", ot.ATTR_TASK_STATE: "upstream_failed"})
    ]


async def test_run_span_continues_the_callers_trace(exporter: InMemorySpanExporter) -> None:
    tracer = ot.get_tracer()
    assert tracer is not None
    dag = DAG("nested")
    dag.task(lambda: 1, id="a")
    with tracer.start_as_current_span("caller") as caller:
        await orchestra.run(dag)
    (root,) = named(exporter.get_finished_spans(), "run nested")
    assert parent_id(root) == caller.get_span_context().span_id


async def test_switched_off_makes_no_spans(
    exporter: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    dag = DAG("off")
    dag.task(lambda: 1, id="a")
    ot.set_enabled(False)
    await orchestra.run(dag)
    ot.set_enabled(None)
    monkeypatch.setenv(ot.ENV_TRACING, "off")
    await orchestra.run(dag)
    assert exporter.get_finished_spans() == ()
    monkeypatch.delenv(ot.ENV_TRACING)
    await orchestra.run(dag)
    assert len(exporter.get_finished_spans()) == 2


async def test_no_sdk_makes_no_spans() -> None:
    # No provider override, and the global provider of this process is the API's proxy.
    assert isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)
    dag = DAG("plain")
    dag.task(lambda: 1, id="a")
    result = await orchestra.run(dag)
    assert result.ok


async def test_metrics(exporter: InMemorySpanExporter) -> None:
    reader = InMemoryMetricReader()
    ot.set_meter_provider(MeterProvider(metric_readers=[reader]))
    try:
        dag = DAG("measured")
        dag.task(Flaky(1), id="flaky", retries=1)
        dag.task(lambda: 1, id="plain")
        await orchestra.run(dag, hooks=[Policy()])
        data = reader.get_metrics_data()
    finally:
        ot.set_meter_provider(None)
    assert data is not None
    points: dict[str, list[Any]] = {}
    for rm in data.resource_metrics:
        for sm in rm.scope_metrics:
            for m in sm.metrics:
                points[m.name] = list(m.data.data_points)
    (attempts,) = points[ot.METRIC_TASK_ATTEMPTS]
    assert attempts.value == 3
    assert dict(attempts.attributes) == {ot.ATTR_DAG_NAME: "measured"}
    durations = points[ot.METRIC_TASK_DURATION]
    assert sum(p.count for p in durations) == 2
    (decisions,) = points[ot.METRIC_DECISIONS]
    assert decisions.value == 1
    assert dict(decisions.attributes) == {ot.ATTR_DECISION: "retry"}
    hook_calls = points[ot.METRIC_HOOK_DURATION]
    assert sum(p.count for p in hook_calls) == 4  # before_execute x3 + on_failure x1


@pytest.mark.parametrize("when", ["before", "after"])
def test_provider_set_before_or_after_import(tmp_path: Path, when: str) -> None:
    out = tmp_path / "out.jsonl"
    setup = textwrap.dedent(
        f"""
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from orchestra.tracing._jsonl import JsonlSpanExporter
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(JsonlSpanExporter({str(out)!r})))
        trace.set_tracer_provider(provider)
        """
    )
    body = textwrap.dedent(
        """
        import orchestra
        dag = orchestra.DAG("late")

        @dag.task
        def a():
            return 1

        @dag.task(deps=[a])
        async def b(a):
            return a + 1
        """
    )
    run = "\nassert orchestra.run_sync(dag).ok\n"
    script = setup + body + run if when == "before" else body + setup + run
    subprocess.run([sys.executable, "-c", script], check=True, cwd=ROOT, timeout=60)
    spans = ot.read_jsonl(out)
    assert sorted(s["name"] for s in spans) == ["run late", "task a", "task b"]
    root = next(s for s in spans if s["name"] == "run late")
    assert {s["traceId"] for s in spans} == {root["traceId"]}
    assert all(s["parentSpanId"] == root["spanId"] for s in spans if s is not root)
