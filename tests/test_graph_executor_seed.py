"""The graph executor's hooks as its own document (seed 000) says they behave.

The hook scripts are written as the seed writes its own: a Python script that reads the
event JSON on stdin (``node_id``, ``node_type``, ``inputs``; ``outputs`` and ``error``
after a node) and prints ``{"action": ..., "modified_data": ...}``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

import orchestra
from orchestra import TaskState
from orchestra.skills import load
from orchestra.skills._sources.graph import GRAPH_ENV_NOTE

pytestmark = pytest.mark.anyio

# The seed's hook scripts (hooks/*.py), each reading the event on stdin.
SCRIPTS = {
    "log_event.py": """
import json, sys
event = json.load(sys.stdin)
with open("events.jsonl", "a") as log:
    log.write(json.dumps(event) + "\\n")
""",
    "add_seed.py": """
import json, sys
event = json.load(sys.stdin)
inputs = event["inputs"]          # the seed's field: the node's inputs
print(json.dumps({"action": "modify", "modified_data": {"seed": 42, "n": len(inputs)}}))
""",
    "log_failure.py": """
import json, sys
event = json.load(sys.stdin)
if event["error"] is not None:    # the seed's fields: outputs (null) and error
    with open("failures.jsonl", "a") as log:
        log.write(json.dumps({"node": event["node_id"], "error": event["error"],
                              "outputs": event["outputs"]}) + "\\n")
print(json.dumps({"action": "modify", "modified_data": {"ignored": True}}))
""",
    "needs_field.py": """
import json, sys
event = json.load(sys.stdin)
sys.stderr.write("needs_field: no key 'budget' in inputs\\n")
sys.exit(1)
""",
    "block.py": """
import json, sys
json.load(sys.stdin)
print(json.dumps({"action": "block"}))
""",
    "slow_mark.py": """
import json, sys, time
event = json.load(sys.stdin)
time.sleep(float(sys.argv[2]))
with open("order.txt", "a") as out:
    out.write(sys.argv[1] + "\\n")
""",
}


def workspace(tmp_path: Path) -> Path:
    """A workspace with the seed's ``hooks/`` scripts."""
    folder = tmp_path / "hooks"
    folder.mkdir(exist_ok=True)
    for name, text in SCRIPTS.items():
        (folder / name).write_text(text.lstrip())
    return tmp_path


def script(name: str, *args: str) -> str:
    return " ".join([sys.executable, f"hooks/{name}", *args])


def lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def two_nodes(fail: bool = False) -> orchestra.DAG:
    dag = orchestra.DAG("habitat")

    @dag.task(metadata={"type": "env_habitat__load"})
    def load_env(seed: int = 0, n: int = -1) -> dict[str, int]:
        return {"seed": seed, "n": n}

    @dag.task(deps=[load_env], metadata={"type": "train"})
    def train(load_env: dict[str, int]) -> dict[str, int]:
        if fail:
            raise ValueError("diverged at step 7")
        return {"score": load_env["seed"]}

    return dag


async def test_node_events_get_the_seeds_fields(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    graph = {
        "nodes": [{"id": "load_env", "type": "env_habitat__load"}, {"id": "train"}],
        "hooks": [
            {"event": "PreNodeExecute", "match_node_type": "env_habitat__*",
             "command": script("add_seed.py")},
            {"event": "PreNodeExecute", "command": script("log_event.py")},
            {"event": "PostNodeExecute", "command": script("log_event.py")},
        ],
    }  # fmt: skip
    (root / "graph.json").write_text(json.dumps(graph))
    reg = load(root / "graph.json", project_dir=root)
    # the difference orchestra keeps (the minimal environment), said once at load
    assert reg.notes == (f"{root / 'graph.json'}:1: {GRAPH_ENV_NOTE}",)
    result = await orchestra.run(two_nodes(), hooks=[reg.as_task_hooks()])
    assert result.ok, result.hook_errors
    assert not result.hook_errors
    assert result.outputs["train"] == {"score": 42}  # add_seed.py read `inputs`
    events = lines(root / "events.jsonl")
    pre = [e for e in events if e["event"] == "PreNodeExecute"]
    post = [e for e in events if e["event"] == "PostNodeExecute"]
    assert [(e["node_id"], e["node_type"]) for e in pre] == [
        ("load_env", "env_habitat__load"),
        ("train", "train"),
    ]
    assert pre[0]["inputs"] == {"seed": 42, "n": 0}  # as the hook before it modified them
    assert pre[1]["inputs"] == {"load_env": {"seed": 42, "n": 0}}
    assert [(e["outputs"], e["error"]) for e in post] == [
        ({"seed": 42, "n": 0}, None),
        ({"score": 42}, None),
    ]
    assert all("data" not in e for e in events)


async def test_failed_nodes_fire_post_node_and_the_run_fires_complete_then_error(
    tmp_path: Path,
) -> None:
    root = workspace(tmp_path)
    hooks = [
        {"event": "PostNodeExecute", "command": script("log_failure.py")},
        {"event": "GraphComplete", "command": script("log_event.py")},
        {"event": "GraphError", "command": script("log_event.py")},
    ]
    (root / "hooks.json").write_text(json.dumps(hooks))
    reg = load(root / "hooks.json", project_dir=root)
    result = await orchestra.run(two_nodes(fail=True), hooks=[reg.as_task_hooks()])
    assert result.states["train"] is TaskState.FAILED
    assert isinstance(result.errors["train"], ValueError)  # the ignored modify changed nothing
    assert not result.hook_errors
    assert lines(root / "failures.jsonl") == [
        {"node": "train", "error": "diverged at step 7", "outputs": None}
    ]
    ends = lines(root / "events.jsonl")
    assert [(e["event"], e["status"], e["failed"]) for e in ends] == [
        ("GraphComplete", "failed", ["train"]),
        ("GraphError", "failed", ["train"]),
    ]


async def test_a_succeeded_run_fires_graph_complete_only(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    hooks = [
        {"event": "GraphComplete", "command": script("log_event.py")},
        {"event": "GraphError", "command": script("log_event.py")},
    ]
    (root / "hooks.json").write_text(json.dumps(hooks))
    reg = load(root / "hooks.json", project_dir=root)
    result = await orchestra.run(two_nodes(), hooks=[reg.as_task_hooks()])
    assert result.ok
    assert [(e["event"], e["status"]) for e in lines(root / "events.jsonl")] == [
        ("GraphComplete", "succeeded")
    ]


async def test_a_failing_hook_records_its_stderr(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    command = script("needs_field.py")
    hooks = [{"event": "PreNodeExecute", "match_node_id": "train", "command": command}]
    (root / "hooks.json").write_text(json.dumps(hooks))
    reg = load(root / "hooks.json", project_dir=root)
    result = await orchestra.run(two_nodes(), hooks=[reg.as_task_hooks()])
    assert result.ok  # fail-open, as the seed
    [error] = result.hook_errors
    assert "exited 1" in str(error)
    assert "needs_field: no key 'budget' in inputs" in str(error)


async def test_hooks_run_in_list_order_and_the_first_block_ends_the_chain(
    tmp_path: Path,
) -> None:
    root = workspace(tmp_path)
    hooks = [
        {"event": "PreNodeExecute", "match_node_id": "train", "command": script("block.py")},
        {"event": "PreNodeExecute", "match_node_id": "train", "command": script("log_event.py")},
        {"event": "PostNodeExecute", "command": script("slow_mark.py", "post-1", "0.3")},
        {"event": "PostNodeExecute", "command": script("slow_mark.py", "post-2", "0")},
        {"event": "GraphComplete", "command": script("slow_mark.py", "complete-1", "0.3")},
        {"event": "GraphComplete", "command": script("block.py")},
        {"event": "GraphComplete", "command": script("slow_mark.py", "never", "0")},
    ]
    (root / "hooks.json").write_text(json.dumps(hooks))
    reg = load(root / "hooks.json", project_dir=root)
    result = await orchestra.run(two_nodes(), hooks=[reg.as_task_hooks()])
    assert result.ok
    assert result.outputs["train"] == {}  # blocked: not run, output {}
    assert lines(root / "events.jsonl") == []  # the hook after the block never ran
    order = (root / "order.txt").read_text().split()
    # in list order (the slow first one still first); train did not run: no
    # PostNodeExecute for it; the block at GraphComplete ended that chain
    assert order == ["post-1", "post-2", "complete-1"]


async def test_node_level_hooks_merge_after_graph_level_after_the_workspace(
    tmp_path: Path,
) -> None:
    root = workspace(tmp_path)
    mark = "slow_mark.py"
    (root / "hooks.json").write_text(
        json.dumps([{"event": "PreNodeExecute", "command": script(mark, "workspace", "0")}])
    )
    graph = {
        "nodes": [
            {"id": "load_env", "type": "env_habitat__load"},
            {"id": "train", "type": "train", "config": {"hooks": [
                {"event": "PreNodeExecute", "command": script(mark, "node:train", "0")},
            ]}},
        ],
        "edges": [{"from": "load_env", "to": "train"}],
        "hooks": [{"event": "PreNodeExecute", "command": script(mark, "graph", "0")}],
    }  # fmt: skip
    (root / "graph.json").write_text(json.dumps(graph))
    reg = load(root / "hooks.json", root / "graph.json", project_dir=root)
    node_hook = reg.hooks[-1]
    assert "node train" in node_hook.describe()  # match_node_id set to its node
    result = await orchestra.run(two_nodes(), hooks=[reg.as_task_hooks()])
    assert result.ok
    assert (root / "order.txt").read_text().split() == [
        "workspace",
        "graph",  # load_env: no node hook
        "workspace",
        "graph",
        "node:train",
    ]


def test_a_node_hook_for_another_node_is_refused(tmp_path: Path) -> None:
    graph = {
        "nodes": [{"id": "train", "config": {"hooks": [
            {"event": "PreNodeExecute", "match_node_id": "eval", "command": "true"},
        ]}}],
    }  # fmt: skip
    (tmp_path / "graph.json").write_text(json.dumps(graph, indent=2))
    with pytest.raises(orchestra.ConfigError) as caught:
        load(tmp_path / "graph.json")
    assert "nodes[0].config.hooks[0].match_node_id" in str(caught.value)
    assert "runs on that node only" in str(caught.value)


async def test_a_saved_graph_without_hooks_is_still_a_graph(tmp_path: Path) -> None:
    graph = {"nodes": [{"id": "load_env", "type": "env_habitat__load"}], "edges": []}
    (tmp_path / "graph.json").write_text(json.dumps(graph))
    reg = load(tmp_path / "graph.json", project_dir=tmp_path)
    assert reg.hooks == ()
    assert not [n for n in reg.notes if "Claude" in n]  # not read as a settings file
    result = await orchestra.run(two_nodes(), hooks=[reg.as_task_hooks()])
    assert result.ok
