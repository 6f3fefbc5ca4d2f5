"""Real runs traced to an OTLP JSON file, for the ``trace show``/``trace report`` tests.

``pipeline()`` is a DAG where each thing a reader must show happens once: a task retried
by a ``RetryPolicy`` (``fetch``), a task that fails for good (``boom``), two tasks below it
that never run (``after`` and ``later``, UPSTREAM_FAILED because of ``boom``), a task a
hook skips (``optional``), and a ``TaskHooks`` called before every task.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from tenacity import retry_if_exception_type, stop_after_attempt, wait_fixed

import orchestra
import orchestra.tracing as ot
from orchestra import RetryPolicy, Skip, TaskHooks


class Gate(TaskHooks):
    """Skips ``optional``; says nothing about the other tasks."""

    def before_execute(self, ctx: Any) -> Skip | None:
        return Skip("not needed today") if ctx.task.id == "optional" else None


def pipeline(name: str = "pipeline") -> orchestra.DAG:
    dag = orchestra.DAG(name)
    calls = {"fetch": 0}

    @dag.task
    def fetch() -> int:
        calls["fetch"] += 1
        if calls["fetch"] == 1:
            raise ConnectionError("connection reset")
        return 1

    @dag.task(deps=[fetch])
    def boom(fetch: int) -> int:
        raise RuntimeError("the input is corrupt")

    @dag.task(deps=[boom])
    def after(boom: int) -> int:
        return boom

    @dag.task(deps=[after, fetch])
    def later(after: int, fetch: int) -> int:
        return after

    @dag.task(deps=[fetch])
    def optional(fetch: int) -> int:
        return fetch

    @dag.task(deps=[fetch])
    def publish(fetch: int) -> int:
        return fetch

    return dag


HOOKS = [
    Gate(),
    RetryPolicy(
        stop=stop_after_attempt(3),
        wait=wait_fixed(0.01),
        retry=retry_if_exception_type(ConnectionError),
    ),
]


def trace_runs(path: Path, *dags: orchestra.DAG, hooks: Any = HOOKS) -> list[orchestra.RunResult]:
    """Run the DAGs one after the other, traced to ``path`` (one file for all)."""
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(ot.JsonlSpanExporter(path)))
    ot.set_tracer_provider(provider)
    try:
        return [orchestra.run_sync(dag, hooks=hooks) for dag in dags]
    finally:
        ot.set_tracer_provider(None)
        provider.shutdown()
