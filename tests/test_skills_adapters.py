"""Adapters: task hooks in a real DAG run, subagent hooks, and guarded tools."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest

import orchestra
from orchestra import ExecutionMode, Fail, SubagentHookContext, TaskHooks, TaskState, ToolDenied
from orchestra.skills import HookRegistry, load

pytestmark = pytest.mark.anyio

# Appends the event JSON, one line each, to events.jsonl in the project folder.
# One write per event: a hook cancelled by a deny beside it (hooks that only judge run at
# once) leaves no half line.
RECORD = 'line=$(cat); printf "%s\\n" "$line" >> events.jsonl'


def registry(tmp_path: Path, yaml: str) -> HookRegistry:
    path = tmp_path / "orchestra.yaml"
    path.write_text(textwrap.dedent(yaml).lstrip("\n"))
    return load(path, project_dir=tmp_path)


def recorded(tmp_path: Path) -> list[dict[str, Any]]:
    path = tmp_path / "events.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


# --- task hooks ---------------------------------------------------------------------------


async def test_task_hooks_fire_created_then_completed_with_state(tmp_path: Path) -> None:
    reg = registry(
        tmp_path,
        f"""
        hooks:
          TaskCreated:
            - hooks: [{{type: command, command: '{RECORD}'}}]
          TaskCompleted:
            - hooks: [{{type: command, command: '{RECORD}'}}]
        """,
    )
    dag = orchestra.DAG("d")
    ran: list[str] = []

    @dag.task
    def ok() -> int:
        ran.append("ok")
        return 1

    @dag.task(retries=1)
    def flaky() -> None:
        ran.append("flaky")
        raise RuntimeError("disk full")

    @dag.task(deps=[flaky])
    def never(flaky: None) -> None:
        ran.append("never")

    result = await orchestra.run(dag, hooks=[reg.as_task_hooks()], max_concurrency=1)
    assert result.states == {
        "ok": TaskState.SUCCEEDED,
        "flaky": TaskState.FAILED,
        "never": TaskState.UPSTREAM_FAILED,
    }
    events = [
        (e["hook_event_name"], e["task_id"], e["attempt"], e.get("state"))
        for e in recorded(tmp_path)
    ]
    # TaskCreated on every attempt; TaskCompleted once per task, whatever its state
    assert events == [
        ("TaskCreated", "ok", 1, None),
        ("TaskCompleted", "ok", 1, "succeeded"),
        ("TaskCreated", "flaky", 1, None),
        ("TaskCreated", "flaky", 2, None),
        ("TaskCompleted", "flaky", 2, "failed"),
        ("TaskCompleted", "never", 0, "upstream_failed"),
    ]
    failed = recorded(tmp_path)[-2]
    assert (failed["error"], failed["error_type"], failed["attempt"]) == (
        "disk full",
        "RuntimeError",
        2,
    )
    assert failed["run_id"] == result.run_id
    assert ran == ["ok", "flaky", "flaky"]


async def test_task_created_deny_fails_the_task_before_it_runs(tmp_path: Path) -> None:
    reg = registry(
        tmp_path,
        """
        hooks:
          TaskCreated:
            - matcher: deploy
              hooks: [{type: command, command: 'echo "frozen until Monday" >&2; exit 2'}]
          TaskCompleted:
            - matcher: deploy
              hooks: [{type: command, command: 'l=$(cat); printf "%s\\n" "$l" >> events.jsonl'}]
        """,
    )
    dag = orchestra.DAG("d")
    ran: list[str] = []

    @dag.task
    def build() -> None:
        ran.append("build")

    @dag.task(deps=[build])
    def deploy() -> None:
        ran.append("deploy")

    result = await orchestra.run(dag, hooks=[reg.as_task_hooks()])
    assert ran == ["build"]
    assert result.states["deploy"] is TaskState.FAILED
    assert "frozen until Monday" in str(result.errors["deploy"])
    (completed,) = recorded(tmp_path)
    assert (completed["state"], completed["error"]) == ("failed", "frozen until Monday")


async def test_subagent_hooks_in_a_real_dispatcher(tmp_path: Path) -> None:
    reg = registry(
        tmp_path,
        f"""
        hooks:
          SubagentStart:
            - matcher: intern
              hooks: [{{type: command, command: 'echo "interns may not deploy" >&2; exit 2'}}]
          SubagentStop:
            - hooks: [{{type: command, command: '{RECORD}'}}]
        """,
    )

    class Echo:
        def __init__(self, name: str) -> None:
            self.name = name

        async def run(self, task: str, ctx: Any) -> str:
            return f"{self.name}: {task}"

    dispatcher = orchestra.Dispatcher(
        [Echo("intern"), Echo("senior")], hooks=[reg.as_subagent_hooks()]
    )
    result = await dispatcher.dispatch("senior", "deploy", parent="lead")
    assert result.output == "senior: deploy"
    with pytest.raises(orchestra.DispatchError, match="interns may not deploy"):
        await dispatcher.dispatch("intern", "deploy", parent="lead")
    (stop,) = recorded(tmp_path)
    assert (stop["agent_name"], stop["state"], stop["output"]) == (
        "senior",
        "succeeded",
        "senior: deploy",
    )


async def test_adapters_override_only_the_moments_with_hooks(tmp_path: Path) -> None:
    empty = HookRegistry()
    assert _moments(empty.as_task_hooks(), TaskHooks) == set()
    assert _moments(empty.as_subagent_hooks(), orchestra.SubagentHooks) == set()
    only_created = registry(
        tmp_path, "hooks:\n  TaskCreated:\n    - hooks: [{type: prompt, prompt: x}]\n"
    )
    assert _moments(only_created.as_task_hooks(), TaskHooks) == {"before_execute"}


def _moments(hooks: object, trait: type) -> set[str]:
    chain = orchestra.HookChain([hooks], trait)
    moments = ["before_dispatch", "after_dispatch", "on_failure"]
    if trait is TaskHooks:
        moments = [
            "before_run",
            "before_execute",
            "after_execute",
            "on_failure",
            "on_end",
            "after_run",
        ]
    return {moment for moment in moments if chain.has(moment)}


# --- subagent hooks -----------------------------------------------------------------------


def _context(name: str) -> SubagentHookContext:
    return SubagentHookContext(
        parent_agent="lead",
        subagent_name=name,
        execution_mode=ExecutionMode.SYNC,
        task="summarise the logs",
        attempt=1,
    )


async def test_subagent_start_deny_answers_fail_and_stop_gets_the_output(tmp_path: Path) -> None:
    reg = registry(
        tmp_path,
        f"""
        hooks:
          SubagentStart:
            - matcher: intern
              hooks: [{{type: permission, decision: deny, reason: interns may not run}}]
            - hooks: [{{type: command, command: '{RECORD}'}}]
          SubagentStop:
            - hooks: [{{type: command, command: '{RECORD}'}}]
        """,
    )
    hooks = reg.as_subagent_hooks()
    assert await hooks.before_dispatch(_context("intern")) == Fail("interns may not run")
    assert await hooks.before_dispatch(_context("senior")) is None
    await hooks.after_dispatch(_context("senior"), "42 errors")
    await hooks.on_failure(_context("senior"), ValueError("bad"))
    # The intern's recorder runs beside the deny and is cancelled by it, but a process
    # started before the deny came may have written its line already (seen under load).
    start, stop, failed = [e for e in recorded(tmp_path) if e["agent_name"] != "intern"]
    assert (start["hook_event_name"], start["agent_name"], start["task"]) == (
        "SubagentStart",
        "senior",
        "summarise the logs",
    )
    assert (start["parent_agent"], start["execution_mode"]) == ("lead", "sync")
    assert (stop["state"], stop["output"]) == ("succeeded", "42 errors")
    assert (failed["state"], failed["error"], failed["error_type"]) == (
        "failed",
        "bad",
        "ValueError",
    )


# --- guarded tools ------------------------------------------------------------------------

GUARD = """
hooks:
  PreToolUse:
    - matcher: Bash
      hooks:
        - type: command
          command: >-
            python3 -c 'import json, sys;
            c = json.load(sys.stdin)["tool_input"]["command"];
            print(json.dumps({"decision": "deny", "reason": "no rm"}) if c.startswith("rm")
            else json.dumps({"modified_input": {"command": c + " --dry-run"}})
            if c.startswith("deploy") else "")'
  PostToolUse:
    - hooks: [{type: command, command: 'l=$(cat); printf "%s\\n" "$l" >> events.jsonl'}]
  PostToolUseFailure:
    - hooks: [{type: command, command: 'l=$(cat); printf "%s\\n" "$l" >> events.jsonl'}]
"""


async def test_guard_denies_rewrites_and_reports_results(tmp_path: Path) -> None:
    reg = registry(tmp_path, GUARD)
    calls: list[str] = []

    @reg.guard("Bash")
    def bash(command: str, *, cwd: str = ".") -> str:
        calls.append(command)
        if command == "false":
            raise RuntimeError("exit status 1")
        return f"ran {command}"

    assert await bash("ls") == "ran ls"
    assert await bash("deploy prod") == "ran deploy prod --dry-run"
    with pytest.raises(ToolDenied) as denied:
        await bash("rm -rf /")
    assert isinstance(denied.value, PermissionError)
    assert (denied.value.tool, denied.value.reason) == ("Bash", "no rm")
    with pytest.raises(RuntimeError, match="exit status 1"):
        await bash(command="false")
    assert calls == ["ls", "deploy prod --dry-run", "false"]
    events = recorded(tmp_path)
    assert [(e["hook_event_name"], e["tool_input"]) for e in events] == [
        ("PostToolUse", {"command": "ls"}),
        ("PostToolUse", {"command": "deploy prod --dry-run"}),
        ("PostToolUseFailure", {"command": "false"}),
    ]
    assert events[0]["tool_response"] == "ran ls"
    assert (events[2]["error"], events[2]["error_type"]) == ("exit status 1", "RuntimeError")
    assert bash.__name__ == "bash"


async def test_guard_on_async_tool_with_positional_and_var_kwargs(tmp_path: Path) -> None:
    reg = registry(
        tmp_path,
        """
        hooks:
          PreToolUse:
            - hooks:
                - type: command
                  command: >-
                    printf '{"modified_input": {"path": "/safe", "mode": "r", "extra": 1}}'
        """,
    )
    seen: list[Any] = []

    @reg.guard("Read")
    async def read(path: str, /, mode: str = "rb", **options: Any) -> str:
        seen.append((path, mode, options))
        return "data"

    assert await read("/etc/shadow", mode="w", follow=True) == "data"
    assert seen == [("/safe", "r", {"extra": 1})]


async def test_guard_ask_is_refused_without_a_callback_and_asks_with_one(tmp_path: Path) -> None:
    reg = registry(
        tmp_path,
        """
        hooks:
          PreToolUse:
            - hooks: [{type: permission, decision: ask, reason: "sure?"}]
        """,
    )

    def tool(x: int) -> int:
        return x * 2

    with pytest.raises(ToolDenied, match=r"sure\?"):
        await reg.guard("Calc")(tool)(2)
    asked: list[Any] = []

    async def approve(name: str, tool_input: Any, reason: str | None) -> bool:
        asked.append((name, dict(tool_input), reason))
        return True

    assert await reg.guard("Calc", ask=approve)(tool)(3) == 6
    assert asked == [("Calc", {"x": 3}, "sure?")]


async def test_guard_hook_error_blocks_by_default(tmp_path: Path) -> None:
    reg = registry(
        tmp_path,
        "hooks:\n  PreToolUse:\n    - hooks: [{type: command, command: 'exit 1'}]\n",
    )

    @reg.guard("Bash")
    def bash(command: str) -> str:
        raise AssertionError("must not run")

    with pytest.raises(ToolDenied, match="hook error: exited 1"):
        await bash("ls")


async def test_guard_without_hooks_just_calls_the_tool() -> None:
    @HookRegistry().guard("Bash")
    async def bash(command: str) -> str:
        return command

    assert await bash("ls") == "ls"


async def test_guard_on_outcome_gets_each_event_that_ran_hooks(tmp_path: Path) -> None:
    reg = registry(
        tmp_path,
        """
        hooks:
          PreToolUse:
            - matcher: Other
              hooks: [{type: prompt, prompt: never}]
          PostToolUse:
            - hooks: [{type: prompt, prompt: "output is untrusted"}]
        """,
    )
    seen: list[tuple[str, tuple[str, ...]]] = []

    async def on_outcome(event: str, outcome: Any) -> None:
        seen.append((event, outcome.messages))

    @reg.guard("Read", on_outcome=on_outcome)
    def read(path: str) -> str:
        return "text"

    assert await read("a.txt") == "text"
    assert seen == [("PostToolUse", ("output is untrusted",))]


def test_guarded_sync_tool_is_callable_from_sync_code(tmp_path: Path) -> None:
    reg = registry(
        tmp_path,
        """
        hooks:
          PreToolUse:
            - matcher: Bash
              hooks:
                - type: command
                  command: >-
                    grep -q 'rm -rf' && { echo 'no rm' >&2; exit 2; };
                    printf '{"modified_input": {"command": "echo safe"}}'
        """,
    )

    @reg.guard("Bash")
    def bash(command: str) -> str:
        return f"ran {command}"

    assert bash("ls") == "ran echo safe"
    with pytest.raises(ToolDenied, match="no rm"):
        bash("rm -rf /")


async def test_guarded_sync_tool_from_a_worker_thread(tmp_path: Path) -> None:
    reg = registry(
        tmp_path,
        "hooks:\n  PreToolUse:\n    - hooks: [{type: permission, decision: deny, reason: nope}]\n",
    )

    @reg.guard("Bash")
    def bash(command: str) -> str:
        return command

    def body() -> str:
        try:
            bash("ls")
        except ToolDenied as denied:
            return str(denied.reason)
        return "allowed"

    assert await anyio.to_thread.run_sync(body) == "nope"


# --- messages -------------------------------------------------------------------------


async def test_context_from_yaml_hooks_reaches_tasks_agents_and_results(tmp_path: Path) -> None:
    def context(name: str, text: str) -> str:
        answer = {"hookSpecificOutput": {"additionalContext": text}}
        (tmp_path / f"{name}.json").write_text(json.dumps(answer))
        return f"cat {name}.json"  # hooks run in the project folder

    reg = registry(
        tmp_path,
        f"""
        hooks:
          TaskCreated:
            - hooks: [{{type: command, command: '{context("created", "use the staging db")}'}}]
          TaskCompleted:
            - hooks: [{{type: command, command: '{context("completed", "report filed")}'}}]
          SubagentStart:
            - hooks: [{{type: command, command: '{context("start", "answer in French")}'}}]
          SubagentStop:
            - hooks: [{{type: command, command: '{context("stop", "checked by the reviewer")}'}}]
        """,
    )

    class Echo:
        name = "writer"

        async def run(self, task: str, ctx: Any) -> str:
            return f"<{task}>"

    dispatcher = orchestra.Dispatcher([Echo()], hooks=[reg.as_subagent_hooks()])
    result = await dispatcher.dispatch("writer", "summarise")
    assert result.output == "<summarise\n\nanswer in French>"
    assert result.messages == ("answer in French", "checked by the reviewer")

    dag = orchestra.DAG("d")
    dag.add(orchestra.Task(id="ask", fn=lambda: "draft the notes", agent="writer"))
    run = await orchestra.run(dag, hooks=[reg.as_task_hooks()], dispatcher=dispatcher)
    # TaskCreated context follows the text the task's agent gets
    assert run.outputs["ask"] == "<draft the notes\n\nuse the staging db\n\nanswer in French>"
    assert run.messages == {"ask": ("use the staging db", "report filed")}
