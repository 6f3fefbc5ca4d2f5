"""A small ETL pipeline whose retry, skip and logging decisions live in hooks.

- ``AuditLog`` logs the run, every attempt, result and failure, and how each task ended,
  skipped and never-started tasks included (a plain ``TaskHooks``).
- ``RetryPolicy`` retries the flaky ``fetch_rates`` step with tenacity's backoff.
- ``FeatureFlags`` skips the optional ``publish_dashboard`` step (it is switched off).
- ``cleanup`` runs with ``trigger="all_done"``: whatever happened upstream.

Run it with ``make demo``, ``python examples/pipeline.py``, or
``orchestra run examples/pipeline.py`` (the command picks up the module-level ``dag`` and
``hooks``).
"""

from __future__ import annotations

import logging
import sys
import time
from typing import Any

from tenacity import retry_if_exception_type, stop_after_attempt, wait_exponential

import orchestra
from orchestra import (
    DAG,
    RetryPolicy,
    RunContext,
    RunResult,
    Skip,
    TaskHookContext,
    TaskHooks,
    TaskState,
)

log = logging.getLogger("pipeline")

dag = DAG("daily-report")


@dag.task
async def load_orders() -> list[dict[str, Any]]:
    """Read today's orders (here: a fixed sample)."""
    return [
        {"id": 1, "amount": 120.0, "currency": "EUR"},
        {"id": 2, "amount": 80.0, "currency": "USD"},
        {"id": 3, "amount": 42.5, "currency": "GBP"},
    ]


_rate_calls = 0


@dag.task
def fetch_rates() -> dict[str, float]:
    """Exchange rates from a flaky service: fails twice, then answers."""
    global _rate_calls
    _rate_calls += 1
    if _rate_calls <= 2:
        raise ConnectionError(f"rates service unavailable (call {_rate_calls})")
    return {"EUR": 1.0, "USD": 0.92, "GBP": 1.17}


@dag.task(deps=[load_orders, fetch_rates])
def convert(load_orders: list[dict[str, Any]], fetch_rates: dict[str, float]) -> list[float]:
    """Every order's amount in EUR."""
    return [round(o["amount"] * fetch_rates[o["currency"]], 2) for o in load_orders]


@dag.task(deps=[convert])
def report(convert: list[float]) -> str:
    """The daily total."""
    return f"{len(convert)} orders, {sum(convert):.2f} EUR"


@dag.task(deps=[report], metadata={"flag": "dashboard"})
def publish_dashboard(report: str) -> None:
    """An optional step, behind a feature flag."""
    raise AssertionError("the dashboard flag is off: this never runs")


@dag.task(deps=[report, publish_dashboard], trigger="all_done")
def cleanup() -> str:
    """Remove temporary files, whatever happened upstream."""
    return "temporary files removed"


class AuditLog(TaskHooks):
    """Logs the run, every attempt, result and failure, and how each task ended."""

    def before_run(self, ctx: RunContext) -> None:
        log.info("run     %s: %d tasks", ctx.dag, len(ctx.task_ids))

    def before_execute(self, ctx: TaskHookContext) -> None:
        log.info("start   %-18s attempt %d", ctx.task.id, ctx.attempt)

    def after_execute(self, ctx: TaskHookContext, result: Any) -> None:
        log.info("done    %-18s -> %r", ctx.task.id, result)

    def on_failure(self, ctx: TaskHookContext, error: BaseException) -> None:
        log.info("failed  %-18s %s: %s", ctx.task.id, type(error).__name__, error)

    def on_end(self, ctx: TaskHookContext, state: TaskState) -> None:
        log.info("end     %-18s %s", ctx.task.id, state.value)

    def after_run(self, ctx: RunContext, result: RunResult) -> None:
        log.info("run     %s ended, ok=%s", ctx.dag, result.ok)


class FeatureFlags(TaskHooks):
    """Skips tasks whose feature flag is off."""

    def __init__(self, enabled: set[str]) -> None:
        self.enabled = enabled

    def before_execute(self, ctx: TaskHookContext) -> Skip | None:
        flag = ctx.task.metadata.get("flag")
        if flag is not None and flag not in self.enabled:
            return Skip(f"feature flag {flag!r} is off")
        return None


#: The run's hooks, at module level so that ``orchestra run examples/pipeline.py`` uses them.
hooks = [
    AuditLog(),
    FeatureFlags(enabled=set()),
    RetryPolicy(
        stop=stop_after_attempt(4),
        wait=wait_exponential(multiplier=0.01, max=0.1),
        retry=retry_if_exception_type(ConnectionError),
    ),
]


def main() -> orchestra.RunResult:
    """Run the pipeline and print a summary."""
    logging.basicConfig(level=logging.INFO, format="  %(message)s", stream=sys.stdout)
    print(f"running DAG {dag.name!r} ({len(dag)} tasks)")
    started = time.perf_counter()
    result = orchestra.run_sync(dag, hooks=hooks)
    elapsed = time.perf_counter() - started
    print()
    print(f"{'task':<20}{'state':<17}{'attempts':>8}{'time':>10}  note")
    for task_id, state in result.states.items():
        note = result.reasons.get(task_id, "")
        if not note and task_id in result.outputs:
            note = repr(result.outputs[task_id])[:40]
        ms = result.durations.get(task_id, 0.0) * 1000
        print(f"{task_id:<20}{state.value:<17}{result.attempts[task_id]:>8}{ms:>8.1f}ms  {note}")
    print()
    status = "ok" if result.ok else "FAILED"
    print(f"run {status} in {elapsed * 1000:.0f} ms: {result.outputs.get('report')}")
    return result


if __name__ == "__main__":
    raise SystemExit(0 if main().ok else 1)
