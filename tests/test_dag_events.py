"""The DAG's own moments as YAML events, through registry.as_task_hooks(), in real runs."""

from __future__ import annotations

import json
import logging
import textwrap
from pathlib import Path
from typing import Any

import pytest

import orchestra
from orchestra import TaskHooks, TaskState
from orchestra.skills import EVENTS, HookRegistry, load

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


_REPLIES = iter(range(1_000_000))


def answer(tmp_path: Path, obj: object) -> str:
    """A command that prints ``obj`` as JSON (after reading its event)."""
    path = tmp_path / f"reply{next(_REPLIES)}.json"
    path.write_text(json.dumps(obj))
    return f"cat > /dev/null; cat {path}"


def test_catalog_names_the_dag_events_and_what_each_may_do() -> None:
    assert EVENTS["RunStart"].can_block
    assert EVENTS["RunStart"].matcher_field == "dag"
    start = EVENTS["AttemptStart"]
    assert (start.can_block, start.can_modify, start.can_skip) == (True, True, True)
    assert start.input_field == "inputs"
    assert start.matcher_field == "task_id"
    assert not EVENTS["AttemptEnd"].can_block
    assert not EVENTS["AttemptRetry"].can_block
    assert EVENTS["EdgeSelected"].can_block
    assert EVENTS["RunEnd"].matcher_field == "state"
    assert [name for name, spec in EVENTS.items() if spec.can_skip] == ["AttemptStart"]


async def test_every_moment_fires_in_order_with_its_fields(tmp_path: Path) -> None:
    events = ("RunStart", "AttemptStart", "AttemptEnd", "AttemptRetry", "RunEnd")
    reg = registry(
        tmp_path,
        "hooks:\n"
        + "".join(
            f"  {e}:\n    - hooks: [{{type: command, command: '{RECORD}'}}]\n" for e in events
        ),
    )
    dag = orchestra.DAG("flow")
    calls: list[int] = []

    @dag.task(metadata={"type": "env_habitat__make"})
    def make() -> dict[str, Any]:
        return {"rows": {1, 2}, "when": b"now"}

    @dag.task(deps=[make], retries=1)
    def flaky(make: dict[str, Any]) -> int:
        calls.append(1)
        if len(calls) == 1:
            raise ValueError("first time")
        return len(make["rows"])

    result = await orchestra.run(dag, hooks=[reg.as_task_hooks()])
    assert result.ok
    assert result.outputs["flaky"] == 2
    seen = [(e["hook_event_name"], e.get("task_id"), e.get("attempt")) for e in recorded(tmp_path)]
    assert seen == [
        ("RunStart", None, None),
        ("AttemptStart", "make", 1),
        ("AttemptEnd", "make", 1),
        ("AttemptStart", "flaky", 1),
        ("AttemptEnd", "flaky", 1),
        ("AttemptRetry", "flaky", 2),
        ("AttemptStart", "flaky", 2),
        ("AttemptEnd", "flaky", 2),
        ("RunEnd", None, None),
    ]
    by = {(e["hook_event_name"], e.get("task_id"), e.get("attempt")): e for e in recorded(tmp_path)}
    run_start = by[("RunStart", None, None)]
    assert run_start["dag"] == "flow"
    assert run_start["task_ids"] == ["make", "flaky"]
    assert by[("AttemptEnd", "make", 1)]["output"] == {"rows": [1, 2], "when": "now"}
    first = by[("AttemptStart", "flaky", 1)]
    assert first["type"] is None
    assert first["max_attempts"] == 2
    assert first["inputs"] == {"make": {"rows": [1, 2], "when": "now"}}  # JSON-safe
    assert by[("AttemptStart", "make", 1)]["type"] == "env_habitat__make"
    failed = by[("AttemptEnd", "flaky", 1)]
    assert (failed["state"], failed["error"], failed["error_type"]) == (
        "failed",
        "first time",
        "ValueError",
    )
    retry = by[("AttemptRetry", "flaky", 2)]
    assert (retry["error"], retry["max_attempts"]) == ("first time", 2)
    end = by[("RunEnd", None, None)]
    assert (end["state"], end["ok"], end["failed"]) == ("succeeded", True, [])
    assert end["states"] == {"make": "succeeded", "flaky": "succeeded"}


async def test_attempt_start_modify_merges_skip_skips_block_fails(tmp_path: Path) -> None:
    first = answer(tmp_path, {"modified_input": {"b": 40}})
    second = answer(tmp_path, {"modified_input": {"b": 41}})
    skip = answer(tmp_path, {"decision": "skip", "reason": "not now"})
    reg = registry(
        tmp_path,
        f"""
        hooks:
          AttemptStart:
            - matcher: add
              hooks: [{{type: command, command: '{first}'}}]
            - matcher: add
              hooks: [{{type: command, command: '{second}'}}]
            - matcher: later
              hooks: [{{type: command, command: '{skip}'}}]
            - matcher: guarded
              hooks: [{{type: command, command: 'echo no way >&2; exit 2'}}]
        """,
    )
    dag = orchestra.DAG("d")
    ran: list[str] = []

    @dag.task
    def a() -> object:
        return object()  # not JSON: the hooks get its str(), the body keeps the object

    @dag.task(deps=[a])
    def add(a: object, b: int = 0) -> tuple[bool, int]:
        ran.append("add")
        return isinstance(a, object) and not isinstance(a, str), b + 1

    @dag.task
    def later() -> None:
        ran.append("later")

    @dag.task
    def guarded() -> None:
        ran.append("guarded")

    result = await orchestra.run(dag, hooks=[reg.as_task_hooks()])
    assert result.outputs["add"] == (True, 42)  # the second hook saw the first's change
    assert result.states["later"] is TaskState.SKIPPED
    assert result.reasons["later"].endswith("not now")
    assert result.states["guarded"] is TaskState.FAILED
    assert "no way" in str(result.errors["guarded"])
    assert sorted(ran) == ["add"]


async def test_an_output_at_attempt_start_is_the_result_without_running(tmp_path: Path) -> None:
    cache = answer(tmp_path, {"output": {"from": "cache"}})
    reg = registry(
        tmp_path,
        f"""
        hooks:
          AttemptStart:
            - matcher: cached
              hooks: [{{type: command, command: '{cache}'}}]
          AttemptEnd:
            - matcher: after
              hooks: [{{type: command, command: '{answer(tmp_path, {"output": "rewritten"})}'}}]
        """,
    )
    dag = orchestra.DAG("d")
    ran: list[str] = []

    @dag.task
    def cached() -> str:
        ran.append("cached")
        return "computed"

    @dag.task(deps=[cached])
    def after(cached: dict[str, str]) -> str:
        ran.append("after")
        return cached["from"]

    result = await orchestra.run(dag, hooks=[reg.as_task_hooks()])
    assert ran == ["after"]
    assert result.states["cached"] is TaskState.SUCCEEDED
    assert result.outputs == {"cached": {"from": "cache"}, "after": "rewritten"}


async def test_a_skip_on_an_event_that_cannot_skip_is_noted_and_changes_nothing(
    tmp_path: Path,
) -> None:
    skip = answer(tmp_path, {"decision": "skip"})
    reg = registry(
        tmp_path, f"hooks:\n  AttemptEnd:\n    - hooks: [{{type: command, command: '{skip}'}}]\n"
    )
    outcome = await reg.fire("AttemptEnd", {"task_id": "t"})
    assert not outcome.skip
    assert not outcome.blocked
    assert outcome.records[0].note == "skip ignored: AttemptEnd cannot skip"
    skip_a = answer(tmp_path, {"decision": "skip", "reason": "a"})
    block_b = answer(tmp_path, {"decision": "block", "reason": "b"})
    reg = registry(
        tmp_path,
        "hooks:\n  AttemptStart:\n"
        f"    - hooks: [{{type: command, command: '{skip_a}'}}]\n"
        f"    - hooks: [{{type: command, command: '{block_b}'}}]\n",
    )
    outcome = await reg.fire("AttemptStart", {"task_id": "t", "inputs": {}})
    assert outcome.blocked
    assert not outcome.skip
    assert outcome.reason == "b"


async def test_run_start_block_ends_the_run_before_any_task(tmp_path: Path) -> None:
    reg = registry(
        tmp_path,
        """
        hooks:
          RunStart:
            - matcher: nightly
              hooks: [{type: command, command: 'echo frozen >&2; exit 2'}]
          RunEnd:
            - matcher: failed
              hooks: [{type: command, command: 'l=$(cat); printf "%s\\n" "$l" >> events.jsonl'}]
        """,
    )
    dag = orchestra.DAG("nightly")
    ran: list[str] = []

    @dag.task
    def a() -> None:
        ran.append("a")

    result = await orchestra.run(dag, hooks=[reg.as_task_hooks()])
    assert ran == []
    assert not result.ok
    assert result.states["a"] is TaskState.CANCELLED
    assert "frozen" in result.reasons["a"]
    (end,) = recorded(tmp_path)
    assert (end["hook_event_name"], end["state"]) == ("RunEnd", "failed")


async def test_yaml_hook_errors_are_on_the_result_and_logged_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    reg = registry(
        tmp_path,
        """
        hooks:
          TaskCreated:
            - hooks: [{type: command, command: 'exit 1'}]
          RunEnd:
            - hooks: [{type: command, command: 'exit 3'}]
        """,
    )
    dag = orchestra.DAG("d")
    dag.add(orchestra.Task(id="t", fn=lambda: 1))
    with caplog.at_level(logging.WARNING, logger="orchestra"):
        result = await orchestra.run(dag, hooks=[reg.as_task_hooks()])
    assert result.ok
    path = tmp_path / "orchestra.yaml"
    messages = [str(e) for e in result.hook_errors]
    assert [(e.moment, e.subject) for e in result.hook_errors] == [
        ("before_execute", "t"),
        ("after_run", "d"),
    ]
    assert messages[0].startswith(f"{path}:3: TaskCreated command hook: exited 1")
    assert messages[1].startswith(f"{path}:5: RunEnd command hook: exited 3")
    logged = [r.getMessage() for r in caplog.records if r.name == "orchestra"]
    assert logged == messages


async def test_a_registry_without_dag_events_adds_no_moment() -> None:
    reg = HookRegistry()
    hooks = reg.as_task_hooks()
    chain = orchestra.HookChain([hooks])
    moments = ("before_run", "before_execute", "after_execute", "on_failure", "on_end")
    assert not any(chain.has(m) for m in (*moments, "after_run"))
    only_end = load_text("hooks:\n  AttemptEnd:\n    - hooks: [{type: command, command: 'true'}]\n")
    chain = orchestra.HookChain([only_end.as_task_hooks()])
    assert [m for m in (*moments, "after_run") if chain.has(m)] == [
        "before_run",
        "after_execute",
        "on_failure",
        "after_run",
    ]
    assert isinstance(hooks, TaskHooks)


def load_text(text: str) -> HookRegistry:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "orchestra.yaml"
        path.write_text(text)
        return load(path)


def branching(ran: list[str]) -> orchestra.DAG:
    dag = orchestra.DAG("branchy")

    @dag.task(branch=True)
    def choose() -> str:
        ran.append("choose")
        return "left"

    @dag.task(deps=[choose])
    def left() -> str:
        ran.append("left")
        return "L"

    @dag.task(deps=[choose])
    def right() -> str:
        ran.append("right")
        return "R"

    return dag


async def test_a_branch_without_a_redirecting_hook_follows_its_choice(tmp_path: Path) -> None:
    reg = registry(
        tmp_path,
        f"hooks:\n  EdgeSelected:\n    - hooks: [{{type: command, command: '{RECORD}'}}]\n",
    )
    ran: list[str] = []
    result = await orchestra.run(branching(ran), hooks=[reg.as_task_hooks()])
    assert ran == ["choose", "left"]
    assert result.states["right"] is TaskState.SKIPPED
    (event,) = recorded(tmp_path)
    assert event["hook_event_name"] == "EdgeSelected"
    assert (event["task_id"], event["selected"]) == ("choose", ["left"])
    assert (event["edge_from"], event["edge_to"]) == ("choose", "left")


async def test_an_edge_selected_hook_redirects_or_blocks_the_choice(tmp_path: Path) -> None:
    redirect = answer(tmp_path, {"output": "right"})
    reg = registry(
        tmp_path,
        f"hooks:\n  EdgeSelected:\n    - hooks: [{{type: command, command: '{redirect}'}}]\n",
    )
    ran: list[str] = []
    result = await orchestra.run(branching(ran), hooks=[reg.as_task_hooks()])
    assert ran == ["choose", "right"]
    assert result.states["left"] is TaskState.SKIPPED
    assert result.states["right"] is TaskState.SUCCEEDED
    assert result.outputs["choose"] == "right"  # the choice, as the hook made it

    reg = registry(
        tmp_path, "hooks:\n  EdgeSelected:\n    - hooks: [{type: command, command: 'exit 2'}]\n"
    )
    ran = []
    result = await orchestra.run(branching(ran), hooks=[reg.as_task_hooks()])
    assert ran == ["choose"]  # a block follows no edge
    assert result.states["left"] is TaskState.SKIPPED
    assert result.states["right"] is TaskState.SKIPPED

    elsewhere = answer(tmp_path, {"output": "nowhere"})
    reg = registry(
        tmp_path,
        f"hooks:\n  EdgeSelected:\n    - hooks: [{{type: command, command: '{elsewhere}'}}]\n",
    )
    result = await orchestra.run(branching([]), hooks=[reg.as_task_hooks()])
    assert result.states["choose"] is TaskState.FAILED  # not a direct downstream task
    assert "'nowhere', which is not one of its direct downstream tasks" in str(
        result.errors["choose"]
    )


async def test_subagent_hook_errors_in_a_dag_run_are_on_its_result(tmp_path: Path) -> None:
    reg = registry(
        tmp_path, "hooks:\n  SubagentStop:\n    - hooks: [{type: command, command: 'exit 4'}]\n"
    )

    class Echo:
        name = "writer"

        async def run(self, task: str, ctx: Any) -> str:
            return f"<{task}>"

    dispatcher = orchestra.Dispatcher([Echo()], hooks=[reg.as_subagent_hooks()])
    dag = orchestra.DAG("d")
    dag.add(orchestra.Task(id="ask", fn=lambda: "notes", agent="writer"))
    result = await orchestra.run(dag, dispatcher=dispatcher)
    assert result.outputs["ask"] == "<notes>"
    (error,) = result.hook_errors
    assert (error.moment, error.subject) == ("after_dispatch", "writer")
    assert str(error).startswith(f"{tmp_path / 'orchestra.yaml'}:3: SubagentStop command hook")


def test_bad_dag_event_config_is_refused_with_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "orchestra.yaml"
    path.write_text(
        textwrap.dedent(
            """
            hooks:
              AttemptStrat:
                - hooks: [{type: command, command: 'true'}]
              AttemptStart:
                - matcher: "env_habitat__*"
                  hooks: [{type: command, command: 'true'}]
                - matcher: "(a"
                  hooks: [{type: command, command: 'true'}]
                - hooks: [{type: command, command: 'true', phase: guard}]
              RunEnd:
                - hooks: [{type: command, command: 'true', on_error: block, timeout: "1"}]
            """
        ).lstrip("\n")
    )
    with pytest.raises(orchestra.ConfigError) as caught:
        load(path)
    text = str(caught.value)
    where = [line.strip().split(": ")[0] for line in text.splitlines()[1:]]
    assert where == [f"{path}:{n}" for n in (2, 5, 7, 9, 11, 11)]
    assert "unknown event (did you mean 'AttemptStart'?)" in text
    assert "not a glob" in text
    assert "write 'env_habitat__.*'" in text
    assert "not a valid RE2 regular expression" in text
    assert "AttemptStart has no phases" in text
    assert "RunEnd cannot block" in text
    assert "timeout: expected seconds" in text


async def test_a_branch_answer_that_names_no_task_is_the_engines_error(tmp_path: Path) -> None:
    reg = registry(
        tmp_path,
        f"hooks:\n  EdgeSelected:\n    - hooks: [{{type: command, command: '{RECORD}'}}]\n",
    )
    dag = orchestra.DAG("d")

    @dag.task(branch=True)
    def choose() -> int:
        return 3

    @dag.task(deps=[choose])
    def after() -> None:
        return None

    result = await orchestra.run(dag, hooks=[reg.as_task_hooks()])
    assert result.states["choose"] is TaskState.FAILED
    assert "must return the id" in str(result.errors["choose"])
    assert not result.hook_errors  # the hook saw an empty choice, without an error
    (event,) = recorded(tmp_path)
    assert event["selected"] == []
