"""The graph executor's hook files (seed 000) as sources, run on orchestra's DAGs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import orchestra
from orchestra import ConfigError, TaskState
from orchestra.skills import load

pytestmark = pytest.mark.anyio

LOG = 'line=$(cat); echo "$line" >> log.jsonl'


def reply(tmp_path: Path, name: str, obj: object) -> str:
    """A hook command that logs its event, then prints ``obj`` as its answer."""
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(obj))
    return f"{LOG}; cat {path}"


def logged(tmp_path: Path) -> list[dict[str, Any]]:
    path = tmp_path / "log.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def graph_file(tmp_path: Path, hooks: list[dict[str, Any]], *, bare: bool = False) -> Path:
    """A graph definition with a ``hooks`` list (or a bare ``hooks.json`` list)."""
    if bare:
        path = tmp_path / "workspace" / "hooks.json"
        path.parent.mkdir(exist_ok=True)
        path.write_text(json.dumps(hooks, indent=2))
    else:
        path = tmp_path / "graph.json"
        graph = {"nodes": [{"id": "load"}, {"id": "train"}], "edges": [], "hooks": hooks}
        path.write_text(json.dumps(graph, indent=2))
    return path


def pipeline(ran: list[str]) -> orchestra.DAG:
    dag = orchestra.DAG("pipeline")

    @dag.task(metadata={"type": "env_habitat__load"})
    def load_data(rows: int = 1) -> dict[str, int]:
        ran.append("load_data")
        return {"rows": rows}

    @dag.task(deps=[load_data], metadata={"type": "train"})
    def train(load_data: dict[str, int]) -> dict[str, int]:
        ran.append("train")
        return {"score": load_data["rows"] * 10}

    @dag.task(deps=[train], metadata={"type": "report"})
    def report(train: dict[str, int]) -> str:
        ran.append("report")
        return f"report of {train}"

    return dag


@pytest.mark.parametrize("bare", [False, True])
async def test_modify_merge_replace_block_and_events_in_order(tmp_path: Path, bare: bool) -> None:
    path = graph_file(
        tmp_path,
        [
            {"event": "GraphStart", "command": LOG},
            {
                "event": "PreNodeExecute",
                "match_node_type": "env_habitat__*",
                "command": reply(
                    tmp_path, "m1", {"action": "modify", "modified_data": {"rows": 3}}
                ),
            },
            {
                "event": "PreNodeExecute",
                "match_node_type": "env_habitat__*",
                "command": reply(
                    tmp_path, "m2", {"action": "modify", "modified_data": {"rows": 4}}
                ),
            },
            {
                "event": "PostNodeExecute",
                "match_node_type": "train",
                "command": reply(
                    tmp_path, "p", {"action": "modify", "modified_data": {"score": 99}}
                ),
            },
            {
                "event": "PreNodeExecute",
                "match_node_id": "report",
                "match_node_type": "nothing",  # the id wins over the type
                "command": reply(tmp_path, "b", {"action": "block"}),
            },
            {"event": "PreNodeExecute", "enabled": False, "command": "exit 1"},
            {"event": "GraphComplete", "command": LOG},
            {"event": "GraphError", "command": LOG},
        ],
        bare=bare,
    )
    ran: list[str] = []
    dag = pipeline(ran)

    @dag.task(deps=["report"])
    def publish(report: dict[str, Any]) -> str:
        ran.append("publish")
        return f"published {report}"

    reg = load(path, project_dir=tmp_path)
    assert len(reg.hooks) == 7  # the disabled one is not loaded
    result = await orchestra.run(dag, hooks=[reg.as_task_hooks()])
    assert result.ok
    assert not result.hook_errors
    assert ran == ["load_data", "train", "publish"]  # report blocked, its dependent ran
    assert result.outputs["load_data"] == {"rows": 4}  # modifies accumulate in list order
    assert result.outputs["train"] == {"score": 99}  # replaced after the node
    assert result.states["report"] is TaskState.SUCCEEDED
    assert result.outputs["report"] == {}
    assert result.outputs["publish"] == "published {}"
    events = [(e["event"], e.get("node_id")) for e in logged(tmp_path)]
    assert events == [
        ("GraphStart", None),
        ("PreNodeExecute", "load_data"),
        ("PreNodeExecute", "load_data"),
        ("PostNodeExecute", "train"),
        ("PreNodeExecute", "report"),
        ("GraphComplete", None),
    ]
    pre = [e for e in logged(tmp_path) if e["event"] == "PreNodeExecute"]
    assert pre[0]["node_type"] == "env_habitat__load"
    assert pre[0]["inputs"] == {}
    assert pre[1]["inputs"] == {"rows": 3}  # the second hook saw the first's change
    assert pre[2]["inputs"] == {"train": {"score": 99}}
    assert logged(tmp_path)[0]["graph"] == "pipeline"


async def test_graph_error_on_a_failed_run_and_failures_fail_open(tmp_path: Path) -> None:
    path = graph_file(
        tmp_path,
        [
            {"event": "GraphStart", "command": LOG},
            {"event": "PreNodeExecute", "command": "exit 3"},
            {"event": "PreNodeExecute", "command": "echo '{not json'"},
            {"event": "PreNodeExecute", "command": "sleep 5", "timeout_ms": 50},
            {"event": "PreNodeExecute", "command": reply(tmp_path, "x", {"action": "explode"})},
            {"event": "GraphComplete", "command": LOG},
            {"event": "GraphError", "command": LOG},
        ],
    )
    dag = orchestra.DAG("broken")

    @dag.task
    def fails() -> None:
        raise RuntimeError("boom")

    reg = load(path, project_dir=tmp_path)
    result = await orchestra.run(dag, hooks=[reg.as_task_hooks()])
    assert result.states["fails"] is TaskState.FAILED  # the hooks' failures did not stop it
    assert isinstance(result.errors["fails"], RuntimeError)
    errors = [str(e) for e in result.hook_errors]
    assert len(errors) == 4
    assert "exited 3" in errors[0]
    assert "invalid JSON output" in errors[1]
    assert "timed out after 0.05 s" in errors[2]
    assert "action must be one of" in errors[3]
    assert [e["event"] for e in logged(tmp_path)] == [
        "GraphStart",
        "PreNodeExecute",
        "GraphComplete",  # always, as the seed fires it
        "GraphError",
    ]
    error = logged(tmp_path)[-1]
    assert (error["status"], error["failed"]) == ("failed", ["fails"])


async def test_type_matching_exact_prefix_and_star(tmp_path: Path) -> None:
    path = graph_file(
        tmp_path,
        [
            {"event": "PreNodeExecute", "match_node_type": "train", "command": LOG},
            {"event": "PreNodeExecute", "match_node_type": "env_*", "command": LOG},
            {"event": "PreNodeExecute", "match_node_type": "*", "command": LOG},
            {"event": "PreNodeExecute", "match_node_type": "env_habitat__load_x", "command": LOG},
        ],
    )
    reg = load(path, project_dir=tmp_path)
    seen = [
        [reg.hooks.index(h) for h in reg.hooks_for("AttemptStart", {"task_id": t, "type": kind})]
        for t, kind in (("a", "train"), ("b", "env_habitat__load"), ("c", None), ("d", "trainer"))
    ]
    assert seen == [[0, 2], [1, 2], [2], [2]]


def test_bad_input_is_refused_with_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "graph.json"
    path.write_text(
        "{\n"
        '  "nodes": [],\n'
        '  "hooks": [\n'
        '    {"event": "PreNodeExecutes", "command": "true"},\n'
        '    {"event": "GraphStart", "command": 3},\n'
        '    {"event": "PreNodeExecute", "command": "true",\n'
        '     "timeout_ms": "fast"},\n'
        '    {"event": "PreNodeExecute", "command": "true", "match_node_type": "env_*_x"},\n'
        '    {"event": "PreNodeExecute", "command": "true", "enabled": "yes"},\n'
        '    {"event": "PreNodeExecute", "command": "true", "match_node_typ": "a"},\n'
        '    "not a hook"\n'
        "  ]\n"
        "}\n"
    )
    with pytest.raises(ConfigError) as caught:
        load(path)
    lines = str(caught.value).splitlines()[1:]
    assert [line.strip().split(": ")[0] for line in lines] == [
        f"{path}:{n}" for n in (4, 5, 7, 8, 9, 10, 11)
    ]
    text = str(caught.value)
    assert "unknown event 'PreNodeExecutes' (did you mean 'PreNodeExecute'?)" in text
    assert "hooks[1].command: expected a non-empty string, got a number (3)" in text
    assert "hooks[2].timeout_ms: expected whole milliseconds" in text
    assert "only '*' alone or a trailing '*'" in text
    assert "hooks[4].enabled: expected true or false" in text
    assert "(did you mean 'match_node_type'?)" in text
    assert "hooks[6]: expected an object, got a string" in text
