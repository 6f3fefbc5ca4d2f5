"""The graph executor's full example (seed 000), re-created in its spirit, end to end.

A saved graph (``graph.json``: nodes with their types, edges, graph-level hooks, a node's
own hooks under ``config.hooks``, a disabled hook) beside a workspace ``hooks.json``, and
the seed's style of hook scripts (``hooks/*.py``, each reading the event JSON on stdin and
printing ``{"action": ..., "modified_data": ...}``): a seed injected into every
``env_habitat__*`` node, the training metrics rounded after the node, a deploy gate that
blocks on a low score, a failure log on the training node, a notification at
``GraphComplete`` and a page at ``GraphError``, a hook that times out and one that is not
enabled. The graph is run twice, as its executor would run it: once to the end (the deploy
blocked), once with the training node failing.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import orchestra
from orchestra import TaskState
from orchestra.skills import load

pytestmark = pytest.mark.anyio

SCRIPTS = {
    "log_event.py": """
import json, sys
event = json.load(sys.stdin)
with open("events.jsonl", "a") as log:
    log.write(json.dumps(event) + "\\n")
print(json.dumps({"action": "continue"}))
""",
    "inject_seed.py": """
import json, sys
event = json.load(sys.stdin)
print(json.dumps({"action": "modify", "modified_data": {"seed": int(sys.argv[1])}}))
""",
    "round_metrics.py": """
import json, sys
event = json.load(sys.stdin)
outputs = dict(event["outputs"] or {})
if "loss" in outputs:
    outputs["loss"] = round(outputs["loss"], 2)
    print(json.dumps({"action": "modify", "modified_data": outputs}))
else:
    print(json.dumps({"action": "continue"}))
""",
    "guard_deploy.py": """
import json, sys
event = json.load(sys.stdin)
score = event["inputs"]["evaluate"]["score"]
if score < float(sys.argv[1]):
    sys.stderr.write(f"score {score} is below {sys.argv[1]}\\n")
    print(json.dumps({"action": "block"}))
else:
    print(json.dumps({"action": "continue"}))
""",
    "log_failure.py": """
import json, sys
event = json.load(sys.stdin)
if event["error"] is not None:
    with open("failures.log", "a") as log:
        log.write(f"{event['node_id']} attempt {event['attempt']}: {event['error']}\\n")
""",
    "notify.py": """
import json, sys
event = json.load(sys.stdin)
with open("notify.log", "a") as log:
    log.write(f"{event['graph']} {event['status']} failed={event['failed']}\\n")
""",
    "page.py": """
import json, sys
event = json.load(sys.stdin)
with open("pages.log", "a") as log:
    log.write(f"PAGE {event['graph']}: {', '.join(event['failed'])}\\n")
""",
    "slow.py": """
import json, sys, time
json.load(sys.stdin)
time.sleep(30)
""",
}


def py(name: str, *args: str) -> str:
    return " ".join([sys.executable, f"hooks/{name}", *args])


def workspace(root: Path) -> Path:
    """The seed's workspace: its scripts, ``hooks.json`` and the saved ``graph.json``."""
    (root / "hooks").mkdir()
    for name, text in SCRIPTS.items():
        (root / "hooks" / name).write_text(text.lstrip())
    workspace_hooks = [
        {"event": "GraphStart", "command": py("log_event.py")},
        {"event": "PostNodeExecute", "command": py("log_event.py")},
    ]
    (root / "hooks.json").write_text(json.dumps(workspace_hooks, indent=2))
    graph = {
        "name": "habitat-pointnav",
        "nodes": [
            {"id": "load_env", "type": "env_habitat__load", "config": {"scene": "apartment_1"}},
            {
                "id": "train",
                "type": "train",
                "config": {
                    "steps": 1000,
                    "hooks": [{"event": "PostNodeExecute", "command": py("log_failure.py")}],
                },
            },
            {"id": "evaluate", "type": "eval"},
            {"id": "deploy", "type": "deploy"},
        ],
        "edges": [
            {"from": "load_env", "to": "train"},
            {"from": "train", "to": "evaluate"},
            {"from": "evaluate", "to": "deploy"},
        ],
        "hooks": [
            {
                "event": "PreNodeExecute",
                "match_node_type": "env_habitat__*",
                "command": py("inject_seed.py", "42"),
                "timeout_ms": 5000,
            },
            {
                "event": "PostNodeExecute",
                "match_node_type": "train",
                "command": py("round_metrics.py"),
                "timeout_ms": 5000,
            },
            {
                "event": "PreNodeExecute",
                "match_node_type": "eval",
                "command": py("slow.py"),
                "timeout_ms": 300,
            },
            {
                "event": "PreNodeExecute",
                "match_node_id": "deploy",
                "command": py("guard_deploy.py", "0.9"),
                "timeout_ms": 5000,
            },
            {"event": "GraphComplete", "command": py("notify.py")},
            {"event": "GraphError", "command": py("page.py")},
            {"event": "GraphStart", "command": "exit 1", "enabled": False},
        ],
    }
    (root / "graph.json").write_text(json.dumps(graph, indent=2))
    return root


def node_bodies(fail: bool) -> dict[str, Callable[..., Any]]:
    """What each node type does (the executor's node implementations)."""

    def load_env(seed: int = 0) -> dict[str, Any]:
        return {"scene": "apartment_1", "seed": seed}

    def train(load_env: dict[str, Any]) -> dict[str, Any]:
        if fail:
            raise FloatingPointError(f"loss is nan with seed {load_env['seed']}")
        return {"loss": 0.123456, "seed": load_env["seed"]}

    def evaluate(train: dict[str, Any]) -> dict[str, Any]:
        return {"score": round(1 - train["loss"], 2)}

    def deploy(evaluate: dict[str, Any]) -> str:
        raise AssertionError("the deploy gate blocks this node")

    return {"env_habitat__load": load_env, "train": train, "eval": evaluate, "deploy": deploy}


def graph_dag(root: Path, fail: bool = False) -> orchestra.DAG:
    """The saved graph as an orchestra DAG: one task per node, its type as metadata."""
    graph = json.loads((root / "graph.json").read_text())
    dag = orchestra.DAG(graph["name"])
    bodies = node_bodies(fail)
    for node in graph["nodes"]:
        deps = [edge["from"] for edge in graph["edges"] if edge["to"] == node["id"]]
        dag.task(id=node["id"], deps=deps, metadata={"type": node["type"]})(bodies[node["type"]])
    return dag


def read(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


async def test_the_full_example_runs_to_the_end_with_its_deploy_blocked(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    registry = load(root / "hooks.json", root / "graph.json", project_dir=root)
    assert len(registry.hooks) == 9  # 2 + 6 enabled graph-level + 1 on the train node

    result = await orchestra.run(graph_dag(root), hooks=[registry.as_task_hooks()])

    assert result.ok
    assert result.outputs["load_env"] == {"scene": "apartment_1", "seed": 42}
    assert result.outputs["train"] == {"loss": 0.12, "seed": 42}  # rounded after the node
    assert result.outputs["evaluate"] == {"score": 0.88}
    assert result.outputs["deploy"] == {}  # blocked: its body did not run
    assert result.states["deploy"] is TaskState.SUCCEEDED
    # the slow hook timed out: the run went on (fail-open), the error is on the result
    [timed_out] = result.hook_errors
    assert str(timed_out).startswith(f"{root / 'graph.json'}:")  # named by file:line
    assert "timed out after 0.3 s" in str(timed_out)
    events = [json.loads(line) for line in read(root / "events.jsonl")]
    assert [(e["event"], e.get("node_id")) for e in events] == [
        ("GraphStart", None),
        ("PostNodeExecute", "load_env"),
        ("PostNodeExecute", "train"),  # the workspace hook runs before the graph's rounding
        ("PostNodeExecute", "evaluate"),
    ]
    assert events[0]["graph"] == "habitat-pointnav"
    assert events[2]["outputs"] == {"loss": 0.123456, "seed": 42}
    assert read(root / "notify.log") == ["habitat-pointnav succeeded failed=[]"]
    assert read(root / "failures.log") == []
    assert read(root / "pages.log") == []


async def test_the_full_example_logs_and_pages_a_failed_training(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    registry = load(root / "hooks.json", root / "graph.json", project_dir=root)

    result = await orchestra.run(graph_dag(root, fail=True), hooks=[registry.as_task_hooks()])

    assert not result.ok
    assert result.states["train"] is TaskState.FAILED
    assert isinstance(result.errors["train"], FloatingPointError)
    assert result.states["evaluate"] is TaskState.UPSTREAM_FAILED
    assert result.states["deploy"] is TaskState.UPSTREAM_FAILED
    assert not result.hook_errors  # the slow hook's node never ran
    events = [json.loads(line) for line in read(root / "events.jsonl")]
    failed = [e for e in events if e.get("node_id") == "train"]
    assert [(e["event"], e["outputs"], e["error"]) for e in failed] == [
        ("PostNodeExecute", None, "loss is nan with seed 42")
    ]
    assert read(root / "failures.log") == ["train attempt 1: loss is nan with seed 42"]
    # `failed`: every node that did not end well, those after the failure too
    not_run = "['train', 'evaluate', 'deploy']"
    assert read(root / "notify.log") == [f"habitat-pointnav failed failed={not_run}"]
    assert read(root / "pages.log") == ["PAGE habitat-pointnav: train, evaluate, deploy"]
