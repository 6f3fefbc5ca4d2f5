"""Every trigger rule against the upstream-state combinations, decided as early as it can.

``CASES`` is the table: how a task with two upstreams fares under each rule. It is run
for real (both backends) and rendered into docs/concepts/scheduler.md, which a test keeps
in step with it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

import orchestra
from orchestra import (
    DAG,
    DAGError,
    RunContext,
    RunResult,
    Skip,
    Task,
    TaskHookContext,
    TaskHooks,
    TaskState,
)
from orchestra.dag._rules import RULES

ROOT = Path(__file__).resolve().parent.parent
S = TaskState

# How the two upstreams ended ("running": still running when the rule is asked).
COMBOS: list[tuple[str, str]] = [
    ("succeeded", "succeeded"),
    ("succeeded", "failed"),
    ("succeeded", "skipped"),
    ("succeeded", "upstream_failed"),
    ("failed", "failed"),
    ("failed", "skipped"),
    ("skipped", "skipped"),
    ("succeeded", "running"),
    ("failed", "running"),
    ("skipped", "running"),
]

# What the task does, per combination above: R runs, W waits (for the running upstream),
# or the state it ends in without running: UF upstream_failed, S skipped.
_TABLE = """
all_success                  R  UF S  UF UF UF S  W  UF W
all_done                     R  R  R  R  R  R  R  W  W  W
none_failed                  R  UF R  UF UF UF R  W  UF W
none_failed_min_one_success  R  UF R  UF UF UF S  W  UF W
one_success                  R  R  R  R  UF UF S  R  W  W
one_failed                   S  R  S  R  R  R  S  W  R  W
all_failed                   S  S  S  S  R  S  S  S  W  S
all_skipped                  S  S  S  S  S  S  R  S  S  W
always                       R  R  R  R  R  R  R  R  R  R
"""
_WORDS = {"R": "runs", "W": "waits", "UF": "upstream_failed", "S": "skipped"}
CASES: dict[str, list[str]] = {
    line.split()[0]: [_WORDS[code] for code in line.split()[1:]]
    for line in _TABLE.strip().splitlines()
}


def test_the_table_covers_every_rule_and_combination() -> None:
    assert set(CASES) == set(RULES)
    assert all(len(row) == len(COMBOS) for row in CASES.values())


class Recorder(TaskHooks):
    """Skips tasks marked so; records when each task starts and ends."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []
        self.ended: dict[str, anyio.Event] = {}
        self.upstream_states: dict[str, dict[str, TaskState]] = {}
        self.runs = 0

    async def before_execute(self, ctx: TaskHookContext) -> Skip | None:
        # async, as on_end: on the loop, so "all tasks blocked" means these ran
        self.events.append(("start", ctx.task.id))
        self.upstream_states[ctx.task.id] = dict(ctx.upstream_states)
        return Skip("marked") if ctx.task.metadata.get("skip") else None

    async def on_end(self, ctx: TaskHookContext, state: TaskState) -> None:
        self.events.append(("end", ctx.task.id))  # async: it sets an event of the loop
        self.ended.setdefault(ctx.task.id, anyio.Event()).set()

    def after_run(self, ctx: RunContext, result: RunResult) -> None:
        self.runs += 1

    async def wait_ended(self, task_id: str) -> None:
        await self.ended.setdefault(task_id, anyio.Event()).wait()

    def decided(self, task_id: str) -> bool:
        return any(who == task_id for _, who in self.events)


def boom() -> None:
    raise ValueError("boom")


def upstream(dag: DAG, name: str, outcome: str, release: anyio.Event) -> str:
    """Add an upstream task that ends as ``outcome``; return its id."""
    if outcome == "succeeded":
        dag.add(Task(id=name, fn=lambda: "out"))
    elif outcome == "failed":
        dag.add(Task(id=name, fn=boom))
    elif outcome == "skipped":
        dag.add(Task(id=name, fn=lambda: "never", metadata={"skip": True}))
    elif outcome == "upstream_failed":
        dag.add(Task(id=f"{name}_root", fn=boom))
        dag.add(Task(id=name, fn=lambda: "never", deps=[f"{name}_root"]))
    else:
        assert outcome == "running"

        async def slow() -> str:
            await release.wait()
            return "late"

        dag.add(Task(id=name, fn=slow))
    return name


@pytest.mark.anyio
@pytest.mark.parametrize("rule", RULES)
async def test_every_rule_against_every_combination(rule: str) -> None:
    for combo, expected in zip(COMBOS, CASES[rule], strict=True):
        release = anyio.Event()
        dag = DAG(f"{rule}-{'-'.join(combo)}")
        ups = [upstream(dag, f"u{k}", outcome, release) for k, outcome in enumerate(combo)]
        dag.add(Task(id="t", fn=lambda **_: "ran", deps=ups, trigger=rule))
        rec = Recorder()
        result: list[RunResult] = []

        async def go(dag: DAG = dag, rec: Recorder = rec, result: list[RunResult] = result) -> None:
            result.append(await orchestra.run(dag, hooks=[rec]))

        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(go)
                if "running" in combo:
                    other = "u0"  # the upstream that ends; u1 still runs
                    await rec.wait_ended(other)
                    await anyio.wait_all_tasks_blocked()
                    decided_early = rec.decided("t")
                    release.set()
                else:
                    decided_early = None
        [res] = result
        where = f"{rule} with upstreams {combo}"
        if expected == "waits":
            assert decided_early is False, where
            continue
        if "running" in combo:
            assert decided_early is True, where
        if expected == "runs":
            assert res.outputs.get("t") == "ran", (where, res.states["t"])
        else:
            assert res.states["t"] is TaskState(expected), where
            assert res.attempts["t"] == 0, where
        assert rec.runs == 1


@pytest.mark.anyio
async def test_one_success_starts_before_its_slow_upstream_ends() -> None:
    started = anyio.Event()

    async def slow() -> str:
        await started.wait()  # ends only once the one_success task started
        return "slow"

    async def first(fast: str) -> str:
        started.set()
        return f"first: {fast}"

    dag = DAG("race")
    dag.add(Task(id="fast", fn=lambda: "fast"))
    dag.add(Task(id="slow", fn=slow))
    dag.add(Task(id="first", fn=first, deps=["fast", "slow"], trigger="one_success"))
    with anyio.fail_after(10):
        result = await orchestra.run(dag)
    assert result.outputs["first"] == "first: fast"
    assert result.states["slow"] is S.SUCCEEDED


@pytest.mark.anyio
async def test_upstream_states_tell_why_an_input_is_none() -> None:
    rec = Recorder()
    dag = DAG("why")
    dag.add(Task(id="ok", fn=lambda: None))
    dag.add(Task(id="bad", fn=boom))
    dag.add(Task(id="gone", fn=lambda: 1, metadata={"skip": True}))
    dag.add(Task(id="join", fn=lambda **kw: kw, deps=["ok", "bad", "gone"], trigger="all_done"))
    result = await orchestra.run(dag, hooks=[rec])
    assert result.outputs["join"] == {"ok": None, "bad": None, "gone": None}
    assert rec.upstream_states["join"] == {"ok": S.SUCCEEDED, "bad": S.FAILED, "gone": S.SKIPPED}


def test_a_failure_wins_over_a_skip_whatever_the_order() -> None:
    for first, second in (("skipped", "failed"), ("failed", "skipped")):
        release = anyio.Event()
        dag = DAG("order")
        ups = [upstream(dag, f"u{k}", o, release) for k, o in enumerate((first, second))]
        dag.add(Task(id="t", fn=lambda **_: 1, deps=ups))
        for concurrency in (1, 4):
            result = orchestra.run_sync(dag, hooks=[Recorder()], max_concurrency=concurrency)
            assert result.states["t"] is S.UPSTREAM_FAILED, (first, second, concurrency)


# --- fail_fast ------------------------------------------------------------------------


@pytest.mark.parametrize("rule", ["all_done", "always", "one_failed", "all_failed"])
def test_fail_fast_refuses_a_rule_that_runs_after_failures(rule: str) -> None:
    dag = DAG("ff")
    dag.add(Task(id="work", fn=lambda: 1))
    dag.add(Task(id="cleanup", fn=lambda: 1, deps=["work"], trigger=rule))
    with pytest.raises(DAGError, match=rf"task 'cleanup' has trigger='{rule}', which runs after"):
        dag.validate(fail_fast=True)
    with pytest.raises(DAGError, match="set run_on_fail_fast=True"):
        orchestra.run_sync(dag, fail_fast=True)
    dag.validate()  # without fail_fast: fine


@pytest.mark.anyio
async def test_run_on_fail_fast_runs_cleanup_after_the_cancellation() -> None:
    rec = Recorder()
    started = anyio.Event()
    cleaned: list[dict[str, Any]] = []

    async def forever() -> None:
        started.set()
        await anyio.sleep_forever()

    async def fails() -> None:
        await started.wait()
        raise ValueError("first failure")

    dag = DAG("cleanup")
    dag.add(Task(id="forever", fn=forever))
    dag.add(Task(id="fails", fn=fails))
    dag.add(Task(id="never", fn=lambda: 1, deps=["forever"]))

    @dag.task(deps=["forever", "fails", "never"], trigger="all_done", run_on_fail_fast=True)
    def cleanup(**upstream: Any) -> str:
        cleaned.append(upstream)
        return "cleaned"

    with anyio.fail_after(10):
        result = await orchestra.run(dag, hooks=[rec], fail_fast=True)
    assert dict(result.states) == {
        "forever": S.CANCELLED,
        "fails": S.FAILED,
        "never": S.CANCELLED,
        "cleanup": S.SUCCEEDED,
    }
    assert result.outputs["cleanup"] == "cleaned"
    assert cleaned == [{"forever": None, "fails": None, "never": None}]
    # on_end once per task (the cleanup's after the others'), after_run once
    ends = [who for what, who in rec.events if what == "end"]
    assert sorted(ends) == sorted(result.states)
    assert ends[-1] == "cleanup"
    assert rec.runs == 1
    assert not result.ok


def test_the_docs_table_is_the_tests_table() -> None:
    page = (ROOT / "docs" / "concepts" / "scheduler.md").read_text()
    header = "| upstreams | " + " | ".join(f"`{rule}`" for rule in RULES) + " |"
    lines = [header, "|---" * (len(RULES) + 1) + "|"]
    for k, combo in enumerate(COMBOS):
        cells = [CASES[rule][k].replace("_", " ") for rule in RULES]
        lines.append(f"| {' + '.join(combo)} | " + " | ".join(cells) + " |")
    table = "\n".join(lines)
    assert table in page, "docs/concepts/scheduler.md's rule table differs from CASES:\n" + table
