"""A ``blocking = true`` hook at ``run_complete`` (Arc, seed 001) fails the run when it blocks.

The seed's words: ``run_complete`` fires "After the run finishes successfully"; a
blocking hook's ``block`` is "Stop execution with an error"; its full example ends with
a "Post-run verification agent" at ``run_complete`` with ``blocking = true``. orchestra
judges the gate in the last task's ``after_execute`` (``after_run`` cannot change a
finished run): a block fails that task, so the run is not ``ok``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_arc_hooks import LOG, script, write

import orchestra
from orchestra import TaskFailed, TaskState
from orchestra.skills import JudgeRequest, load

pytestmark = pytest.mark.anyio


def logged(tmp_path: Path) -> list[str]:
    path = tmp_path / "log.jsonl"
    lines = path.read_text().splitlines() if path.exists() else []
    return [json.loads(line)["event"] for line in lines if line.strip()]


def release(ran: list[str]) -> orchestra.DAG:
    """build -> (docs, test): the last two may end at once."""
    dag = orchestra.DAG("release")

    @dag.task
    def build() -> str:
        ran.append("build")
        return "artifact"

    @dag.task(deps=[build])
    async def docs(build: str) -> str:
        ran.append("docs")
        return "docs"

    @dag.task(deps=[build])
    async def test(build: str) -> str:
        ran.append("test")
        return "green"

    return dag


def gated(tmp_path: Path, check: str) -> Path:
    return write(
        tmp_path / "run.toml",
        f"""
        [[hooks]]
        name = "final-check"
        event = "run_complete"
        blocking = true
        command = "{check}"

        [[hooks]]
        event = "run_complete"
        command = '{LOG}'

        [[hooks]]
        event = "run_failed"
        command = '{LOG}'
        """,
    )


FINAL_CHECK = """
    cat >> ctx.jsonl; echo >> ctx.jsonl  # one context a line
    if [ ! -f RELEASE_NOTES.md ]; then
      echo '{"decision": "block", "reason": "no release notes"}'
    fi
    """


async def test_a_blocking_run_complete_hook_that_blocks_fails_the_run(tmp_path: Path) -> None:
    check = script(tmp_path, "final-check.sh", FINAL_CHECK)
    ran: list[str] = []
    registry = load(gated(tmp_path, check), project_dir=tmp_path)
    result = await orchestra.run(release(ran), hooks=[registry.as_task_hooks()])
    assert sorted(ran) == ["build", "docs", "test"]  # every body ran
    assert not result.ok  # Arc: "Stop execution with an error"
    (last,) = [tid for tid, state in result.states.items() if state is TaskState.FAILED]
    assert last in ("docs", "test")  # the run's last task to end carries the gate's error
    assert str(result.errors[last]) == (
        f"task {last!r} failed: run_complete hook final-check blocked: no release notes"
    )
    with pytest.raises(TaskFailed, match="no release notes"):
        result.raise_for_failures()
    contexts = (tmp_path / "ctx.jsonl").read_text().splitlines()
    assert [json.loads(c)["event"] for c in contexts] == ["run_complete"]  # judged once
    assert logged(tmp_path) == ["run_failed"]  # the run failed: run_failed hooks fire
    assert result.hook_errors == ()  # said once: as the task's error


async def test_a_gate_that_proceeds_runs_once_and_the_run_completes(tmp_path: Path) -> None:
    check = script(tmp_path, "final-check.sh", FINAL_CHECK)
    (tmp_path / "RELEASE_NOTES.md").write_text("v1\n")
    ran: list[str] = []
    registry = load(gated(tmp_path, check), project_dir=tmp_path)
    for _ in range(2):  # one adapter, two runs: each run's gate is its own
        result = await orchestra.run(release(ran), hooks=[registry.as_task_hooks()])
        assert result.ok
    gates = [json.loads(line) for line in (tmp_path / "ctx.jsonl").read_text().splitlines()]
    assert [g["event"] for g in gates] == ["run_complete", "run_complete"]  # once per run
    assert gates[0]["workflow_name"] == "release"
    assert logged(tmp_path) == ["run_complete", "run_complete"]  # the other hook: at RunEnd


async def test_a_run_that_failed_never_asks_the_gate(tmp_path: Path) -> None:
    check = script(tmp_path, "final-check.sh", FINAL_CHECK)
    dag = orchestra.DAG("release")

    @dag.task
    def build() -> str:
        raise RuntimeError("compile error")

    @dag.task(deps=[build])
    def test(build: str) -> str:
        return "green"

    registry = load(gated(tmp_path, check), project_dir=tmp_path)
    result = await orchestra.run(dag, hooks=[registry.as_task_hooks()])
    assert not result.ok
    assert not (tmp_path / "ctx.jsonl").exists()  # run_complete: the run did not succeed
    assert logged(tmp_path) == ["run_failed"]


async def test_the_seeds_verify_agent_fails_the_run(tmp_path: Path) -> None:
    async def judge(request: JudgeRequest) -> dict[str, Any]:
        return {"ok": False, "reason": "2 tests fail in test_api.py"}

    judge.supports_agent = True  # type: ignore[attr-defined]
    path = write(
        tmp_path / "run.toml",
        """
        # Post-run verification agent
        [[hooks]]
        name = "verify"
        event = "run_complete"
        type = "agent"
        prompt = "Run the test suite and verify all tests pass. Report any failures."
        model = "sonnet"
        max_tool_rounds = 20
        blocking = true
        timeout_ms = 120000
        """,
    )
    dag = orchestra.DAG("ci")
    dag.add(orchestra.Task(id="implement", fn=lambda: "code"))
    result = await orchestra.run(dag, hooks=[load(path, judge=judge).as_task_hooks()])
    assert not result.ok
    assert "run_complete hook verify blocked: 2 tests fail in test_api.py" in str(
        result.errors["implement"]
    )


async def test_when_the_last_task_never_ran_the_gate_is_a_hook_error(tmp_path: Path) -> None:
    check = script(tmp_path, "final-check.sh", FINAL_CHECK)
    path = write(
        tmp_path / "run.toml",
        f"""
        [[hooks]]
        name = "final-check"
        event = "run_complete"
        blocking = true
        command = "{check}"

        [[hooks]]
        event = "stage_start"
        matcher = "^publish$"
        command = "echo '{{\\"decision\\": \\"skip\\"}}'"
        """,
    )
    dag = orchestra.DAG("release")

    @dag.task
    def build() -> str:
        return "artifact"

    @dag.task(deps=[build])
    def publish(build: str) -> str:
        return "published"

    registry = load(path, project_dir=tmp_path)
    result = await orchestra.run(dag, hooks=[registry.as_task_hooks()])
    # publish was skipped by a hook (its body never ran, no after_execute comes after
    # it): the gate runs at RunEnd, where orchestra's after_run cannot fail the run; its
    # block is the run's hook error (docs/migrate/arc.md says so)
    assert result.ok
    assert [str(e) for e in result.hook_errors] == [
        "run_complete hook final-check blocked: no release notes"
    ]
