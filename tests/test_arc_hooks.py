"""Arc's run.toml/server.toml [[hooks]] (fabro, seed 001) as sources, run on orchestra's DAGs."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path
from typing import Any

import anyio
import pytest

import orchestra
from orchestra import ConfigError, TaskState
from orchestra.skills import load
from orchestra.skills._sources.arc.toml import MINIMAL_ENV_NOTE

pytestmark = pytest.mark.anyio

LOG = 'line=$(cat); echo "$line" >> log.jsonl'


def write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return path


def logged(tmp_path: Path) -> list[dict[str, Any]]:
    path = tmp_path / "log.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def script(tmp_path: Path, name: str, body: str) -> str:
    """A hook script file written by the test; returns the command that runs it."""
    path = tmp_path / name
    path.write_text("#!/bin/sh\n" + textwrap.dedent(body).lstrip("\n"))
    path.chmod(0o755)
    return str(path)


def workflow(ran: list[str]) -> orchestra.DAG:
    dag = orchestra.DAG("ci-pipeline")

    @dag.task(metadata={"type": "agent"})
    def implement() -> str:
        ran.append("implement")
        return "code"

    @dag.task(metadata={"type": "command"})
    def deploy() -> str:
        ran.append("deploy")
        return "deployed"

    @dag.task(metadata={"type": "command"})
    def lint() -> str:
        ran.append("lint")
        return "clean"

    return dag


async def test_server_and_run_toml_later_name_wins_skip_and_exit_codes(tmp_path: Path) -> None:
    skip = script(
        tmp_path,
        "skip.sh",
        """
        line=$(cat); echo "$line" >> log.jsonl
        if [ "$ARC_NODE_ID" = "deploy" ]; then
          echo '{"decision": "skip", "reason": "deploy disabled in CI"}'
        fi
        exit 0
        """,
    )
    server = write(
        tmp_path / "server.toml",
        """
        [server]
        port = 8080

        [[hooks]]
        name = "stage-guard"
        event = "stage_start"
        command = "exit 2"

        [[hooks]]
        name = "lint-guard"
        event = "stage_start"
        matcher = "^lint$"
        command = "exit 3"
        """,
    )
    run = write(
        tmp_path / "run.toml",
        f"""
        goal = "ship it"

        [[hooks]]
        name = "stage-guard"
        event = "stage_start"
        command = "{skip}"

        [[hooks]]
        event = "stage_complete"
        matcher = "agent"
        command = '{LOG}'
        """,
    )
    reg = load(server, run, project_dir=tmp_path)
    assert [(h.name, h.file) for h in reg.hooks] == [  # type: ignore[attr-defined]
        ("stage-guard", str(run)),  # the later file's, in the earlier one's place
        ("lint-guard", str(server)),
        (None, str(run)),
    ]
    ran: list[str] = []
    result = await orchestra.run(workflow(ran), hooks=[reg.as_task_hooks()])
    assert ran == ["implement"]
    # skip: that stage only (it ends SUCCEEDED with no output, its dependents would run)
    assert result.states["deploy"] is TaskState.SUCCEEDED
    assert result.outputs["deploy"] is None
    assert result.messages["deploy"] == ("stage skipped: deploy disabled in CI",)
    assert result.states["lint"] is TaskState.FAILED
    assert "hook exited with code 3" in str(result.errors["lint"])
    events = [(e["event"], e["node_id"]) for e in logged(tmp_path)]
    # the stage_start script logged three stages; stage_complete matched the handler type
    assert sorted(events) == [
        ("stage_complete", "implement"),
        ("stage_start", "deploy"),
        ("stage_start", "implement"),
        ("stage_start", "lint"),
    ]


async def test_run_start_exit_2_stops_the_run_before_any_task(tmp_path: Path) -> None:
    path = write(
        tmp_path / "run.toml",
        """
        [[hooks]]
        event = "run_start"
        command = "echo 'env not ready' >&2; exit 2"

        [[hooks]]
        event = "run_failed"
        command = "cat >> log.jsonl; echo >> log.jsonl"

        [[hooks]]
        event = "run_complete"
        command = "cat >> log.jsonl; echo >> log.jsonl"
        """,
    )
    ran: list[str] = []
    result = await orchestra.run(
        workflow(ran), hooks=[load(path, project_dir=tmp_path).as_task_hooks()]
    )
    assert ran == []
    assert not result.ok
    assert all(state is TaskState.CANCELLED for state in result.states.values())
    assert "env not ready" in result.reasons["implement"]
    assert [e["event"] for e in logged(tmp_path)] == ["run_failed"]


async def test_arc_variables_and_the_context_file(tmp_path: Path) -> None:
    dump = script(
        tmp_path,
        "dump.sh",
        """
        stdin=$(cat)
        {
          printf '{"env": {'
          printf '"ARC_EVENT": "%s", "ARC_RUN_ID": "%s", ' "$ARC_EVENT" "$ARC_RUN_ID"
          printf '"ARC_WORKFLOW": "%s", "ARC_NODE_ID": "%s", ' "$ARC_WORKFLOW" "$ARC_NODE_ID"
          printf '"ARC_HOOK_CONTEXT": "%s"}, ' "$ARC_HOOK_CONTEXT"
          printf '"file": '; cat "$ARC_HOOK_CONTEXT"; printf ', "stdin": %s}\\n' "$stdin"
        } >> log.jsonl
        """,
    )
    path = write(
        tmp_path / "run.toml",
        f"""
        [[hooks]]
        event = "stage_start"
        matcher = "agent"
        command = "{dump}"

        [[hooks]]
        event = "stage_retrying"
        command = "{dump}"

        [[hooks]]
        event = "stage_failed"
        command = "{dump}"
        """,
    )
    dag = orchestra.DAG("ci-pipeline")
    calls: list[int] = []

    @dag.task(metadata={"type": "agent"}, retries=1)
    def implement() -> str:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("tests failed")
        return "ok"

    result = await orchestra.run(dag, hooks=[load(path, project_dir=tmp_path).as_task_hooks()])
    assert result.ok
    entries = logged(tmp_path)
    assert [e["env"]["ARC_EVENT"] for e in entries] == [
        "stage_start",
        "stage_failed",
        "stage_retrying",
        "stage_start",
    ]
    for entry in entries:
        env = entry["env"]
        assert env["ARC_RUN_ID"] == result.run_id
        assert env["ARC_WORKFLOW"] == "ci-pipeline"
        assert env["ARC_NODE_ID"] == "implement"
        assert entry["file"] == entry["stdin"]  # the context file holds what stdin got
        assert not await anyio.Path(env["ARC_HOOK_CONTEXT"]).exists()  # removed after
    start = entries[0]["file"]
    assert start == {
        "event": "stage_start",
        "run_id": result.run_id,
        "workflow_name": "ci-pipeline",
        "cwd": str(tmp_path),
        "node_id": "implement",
        "handler_type": "agent",
        "attempt": 1,
        "max_attempts": 2,
    }
    assert entries[1]["file"]["failure_reason"] == "tests failed"
    assert entries[2]["file"]["attempt"] == 2


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")
async def test_a_sandboxed_hook_reads_its_context_file(tmp_path: Path) -> None:
    path = write(
        tmp_path / "run.toml",
        """
        [[hooks]]
        event = "stage_start"
        sandbox = true
        command = "cat \\"$ARC_HOOK_CONTEXT\\" > seen.json"
        """,
    )
    dag = orchestra.DAG("w")
    dag.add(orchestra.Task(id="t", fn=lambda: 1))
    result = await orchestra.run(dag, hooks=[load(path, project_dir=tmp_path).as_task_hooks()])
    assert result.ok
    assert not result.hook_errors
    assert json.loads((tmp_path / "seen.json").read_text())["node_id"] == "t"


async def test_non_blocking_hooks_change_nothing_and_their_failures_are_errors(
    tmp_path: Path,
) -> None:
    path = write(
        tmp_path / "run.toml",
        """
        [[hooks]]
        event = "stage_start"
        blocking = false
        command = "echo '{\\"decision\\": \\"block\\"}'"

        [[hooks]]
        event = "stage_complete"
        command = "exit 5"
        """,
    )
    dag = orchestra.DAG("w")
    dag.add(orchestra.Task(id="t", fn=lambda: 1))
    result = await orchestra.run(dag, hooks=[load(path, project_dir=tmp_path).as_task_hooks()])
    assert result.ok
    assert result.outputs["t"] == 1
    (error,) = result.hook_errors
    assert f"{path}:6: AttemptEnd arc hook: hook exited with code 5" in str(error)


def test_bad_input_is_refused_with_file_and_line(tmp_path: Path) -> None:
    path = write(
        tmp_path / "run.toml",
        """
        [[hooks]]
        event = "stage_strat"
        command = "true"

        [[hooks]]
        event = "stage_start"
        matcher = "(a"
        command = "true"

        [[hooks]]
        event = "stage_start"
        blocking = "yes"
        timeout_ms = 0
        command = ["true"]

        [[hooks]]
        event = "run_complete"
        type = "http"

        [[hooks]]
        event = "stage_start"
        comand = "true"
        """,
    )
    with pytest.raises(ConfigError) as caught:
        load(path)
    text = str(caught.value)
    where = [line.strip().split(": ")[0] for line in text.splitlines()[1:]]
    assert where == [f"{path}:{n}" for n in (2, 7, 12, 13, 14, 16, 20, 22)]
    assert "unknown event 'stage_strat' (did you mean 'stage_start'?)" in text
    assert "hooks[1].matcher: not a valid RE2 regular expression" in text
    assert "hooks[2].blocking: expected true or false" in text
    assert "hooks[2].timeout_ms: must be from 1 to 300000 milliseconds, got 0" in text
    assert "hooks[3].url: missing" in text  # an http hook, as Arc writes it, needs its url
    assert (
        "hooks[4].comand: unknown field for an Arc command hook (did you mean 'command'?)" in text
    )
    broken = write(tmp_path / "broken.toml", "[[hooks]]\nevent = \n")
    with pytest.raises(ConfigError, match=rf"{broken}:2: TOML: "):
        load(broken)
    flat = write(tmp_path / "flat.toml", 'x = 1\nhooks = "all"\n')
    with pytest.raises(ConfigError, match=rf"{flat}:2: hooks: expected \[\[hooks\]\] tables"):
        load(flat)


def test_events_orchestra_has_no_moment_for_are_notes(tmp_path: Path) -> None:
    path = write(
        tmp_path / "run.toml",
        """
        [[hooks]]
        event = "checkpoint_saved"
        command = "true"

        [[hooks]]
        event = "run_start"
        matcher = "x"
        command = "true"
        """,
    )
    reg = load(path)
    assert len(reg.hooks) == 1
    assert reg.hooks[0].event == "RunStart"
    assert reg.notes == (
        f"{path}:2: checkpoint_saved: orchestra has no such moment; the hook is not loaded",
        f"{path}:7: run_start takes no matcher (Arc ignores it too); the hook runs on every run",
        f"{path}:5: {MINIMAL_ENV_NOTE}",  # said once per file
    )


async def test_edge_selected_override_redirects_a_branch(tmp_path: Path) -> None:
    override = script(
        tmp_path,
        "override.sh",
        """
        line=$(cat); echo "$line" >> log.jsonl
        echo '{"decision": "override", "edge_to": "hotfix", "reason": "freeze"}'
        """,
    )
    path = write(
        tmp_path / "run.toml",
        f"""
        [[hooks]]
        event = "edge_selected"
        matcher = "^review$"
        command = "{override}"
        """,
    )
    dag = orchestra.DAG("ci-pipeline")
    ran: list[str] = []

    @dag.task(branch=True)
    def review() -> str:
        return "release"

    @dag.task(deps=[review])
    def release() -> None:
        ran.append("release")

    @dag.task(deps=[review])
    def hotfix() -> None:
        ran.append("hotfix")

    result = await orchestra.run(dag, hooks=[load(path, project_dir=tmp_path).as_task_hooks()])
    assert ran == ["hotfix"]
    assert result.states["release"] is TaskState.SKIPPED
    (context,) = logged(tmp_path)
    assert context["event"] == "edge_selected"
    assert (context["edge_from"], context["edge_to"]) == ("review", "release")


async def test_sandbox_false_hooks_run_on_the_host_with_its_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the seed's check-env.sh: a host resource the run needs, checked before it starts
    monkeypatch.setenv("DEPLOY_TOKEN", "t0ken")
    check_env = script(
        tmp_path,
        "check-env.sh",
        """
        if [ -z "$DEPLOY_TOKEN" ]; then
          echo "DEPLOY_TOKEN is not set" >&2
          exit 2
        fi
        exit 0
        """,
    )
    host = write(
        tmp_path / "run.toml",
        f"""
        [[hooks]]
        name = "check-env"
        event = "run_start"
        command = "{check_env}"
        sandbox = false
        """,
    )
    reg = load(host, project_dir=tmp_path)
    assert not [n for n in reg.notes if "minimal environment" in n]  # nothing kept from it
    ran: list[str] = []
    result = await orchestra.run(workflow(ran), hooks=[reg.as_task_hooks()])
    assert result.ok
    assert sorted(ran) == ["deploy", "implement", "lint"]

    # without `sandbox`, orchestra's minimal environment (said once at load)
    plain = write(tmp_path / "plain.toml", host.read_text().replace("sandbox = false", ""))
    reg = load(plain, project_dir=tmp_path)
    assert reg.notes == (f"{plain}:1: {MINIMAL_ENV_NOTE}",)
    ran.clear()
    result = await orchestra.run(workflow(ran), hooks=[reg.as_task_hooks()])
    assert not result.ok
    assert ran == []
    assert "DEPLOY_TOKEN is not set" in str(result.reasons)
    # load(pass_env=...) names it, and it passes again
    reg = load(plain, project_dir=tmp_path, pass_env=("DEPLOY_TOKEN",))
    result = await orchestra.run(workflow(ran), hooks=[reg.as_task_hooks()])
    assert result.ok


def test_a_tilde_in_a_path_is_the_home_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".arc").mkdir()
    write(
        tmp_path / ".arc" / "server.toml",
        """
        [[hooks]]
        event = "run_start"
        command = "true"
        """,
    )
    reg = load("~/.arc/server.toml")
    assert [h.file for h in reg.hooks] == [str(tmp_path / ".arc" / "server.toml")]


async def test_skip_skips_that_stage_only_and_its_dependents_run(tmp_path: Path) -> None:
    skip_lint = script(
        tmp_path,
        "skip-lint.sh",
        """
        if [ "$ARC_NODE_ID" = "lint" ]; then
          echo '{"decision": "skip", "reason": "lint is advisory today"}'
        fi
        """,
    )
    run = write(
        tmp_path / "run.toml",
        f"""
        [[hooks]]
        event = "stage_start"
        command = "{skip_lint}"
        """,
    )
    reg = load(run, project_dir=tmp_path)
    ran: list[str] = []
    dag = orchestra.DAG("ci")

    @dag.task
    def lint() -> str:
        ran.append("lint")
        return "clean"

    @dag.task(deps=[lint])
    def deploy(lint: str | None) -> str:
        ran.append(f"deploy after {lint}")
        return "deployed"

    result = await orchestra.run(dag, hooks=[reg.as_task_hooks()])
    assert result.ok
    assert ran == ["deploy after None"]
    assert result.states["deploy"] is TaskState.SUCCEEDED
    assert result.messages["lint"] == ("stage skipped: lint is advisory today",)


async def test_a_blocking_stage_complete_hook_is_a_verify_gate(tmp_path: Path) -> None:
    verify = script(
        tmp_path,
        "verify.sh",
        """
        ctx=$(cat)
        echo "$ctx" >> log.jsonl
        if [ "$ARC_NODE_ID" = "implement" ]; then
          echo '{"decision": "block", "reason": "tests failed: 3 of 40"}'
          exit 2
        fi
        echo '{"decision": "proceed"}'
        """,
    )
    run = write(
        tmp_path / "run.toml",
        f"""
        [[hooks]]
        name = "verify"
        event = "stage_complete"
        blocking = true
        command = "{verify}"

        [[hooks]]
        name = "lint-gate"
        event = "stage_complete"
        matcher = "^lint$"
        blocking = true
        command = "echo 'style errors' >&2; exit 2"

        [[hooks]]
        event = "stage_complete"
        matcher = "^deploy$"
        command = "exit 2"
        """,
    )
    ran: list[str] = []
    dag = workflow(ran)

    @dag.task(deps=["implement"])
    def review(implement: str) -> str:
        ran.append("review")
        return implement

    result = await orchestra.run(dag, hooks=[load(run, project_dir=tmp_path).as_task_hooks()])
    assert not result.ok
    assert result.states["implement"] is TaskState.FAILED  # its body ran, the gate failed it
    assert "implement" in ran
    assert "review" not in ran
    assert result.states["review"] is TaskState.UPSTREAM_FAILED
    message = "stage_complete hook verify blocked: tests failed: 3 of 40"
    error = result.errors["implement"]
    assert isinstance(error, orchestra.TaskFailed)
    assert error.reason == message
    assert str(error) == f"task 'implement' failed: {message}"
    assert result.reasons["implement"].endswith(f": {message}")
    assert result.states["lint"] is TaskState.FAILED  # exit 2 without JSON: stderr says why
    lint_error = result.errors["lint"]
    assert isinstance(lint_error, orchestra.TaskFailed)
    assert lint_error.reason == "stage_complete hook lint-gate blocked: style errors"
    # a hook that is not blocking is no gate; a gate that proceeds keeps the stage
    assert result.states["deploy"] is TaskState.SUCCEEDED
    assert result.outputs["deploy"] == "deployed"
    assert result.hook_errors == ()  # recorded once: as the stage's error
    assert sorted(e["node_id"] for e in logged(tmp_path)) == ["deploy", "implement", "lint"]
