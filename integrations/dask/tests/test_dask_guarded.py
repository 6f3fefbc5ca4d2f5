"""A ``@registry.guard`` tool called in a task body on a dask worker is guarded there.

The registry travels to the worker as its sources and options (``load``'s files and
keyword arguments), never as live state: the worker loads it again, once per process.
"""

from __future__ import annotations

import pickle
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from distributed import Client
from orchestra_dask import DaskExecutor

import orchestra
from orchestra import TaskState, ToolDenied
from orchestra.skills import HookRegistry, load

pytestmark = pytest.mark.anyio

DENY_RM = """
hooks:
  PreToolUse:
    - matcher: Bash
      hooks:
        - type: command
          command: "grep -q 'rm -rf' && echo 'no rm -rf here' >&2 && exit 2 || exit 0"
"""


def registry(tmp_path: Path) -> HookRegistry:
    config = tmp_path / "orchestra.yaml"
    config.write_text(textwrap.dedent(DENY_RM))
    return load(config, project_dir=tmp_path)


def test_a_loaded_registry_pickles_as_its_sources_and_options(tmp_path: Path) -> None:
    """Another process loads the same files; this one shares the registry it has."""
    hooks = registry(tmp_path)
    blob = pickle.dumps(hooks)
    assert pickle.loads(blob) is hooks  # the same process: no second registry
    (tmp_path / "registry.pickle").write_bytes(blob)
    script = (
        "import pickle, sys; r = pickle.load(open(sys.argv[1], 'rb')); "
        "print(len(r.hooks), r.hooks[0].event, r.project_dir)"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "registry.pickle")],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert done.stdout.split() == ["1", "PreToolUse", hooks.project_dir]


async def test_a_guarded_tool_in_a_task_body_is_guarded_on_the_worker(
    client: Client, tmp_path: Path
) -> None:
    hooks = registry(tmp_path)

    @hooks.guard("Bash")
    def bash(command: str) -> str:
        return f"ran {command}"

    dag = orchestra.DAG("guarded")

    @dag.task
    def safe() -> str:
        return bash(command="ls")

    @dag.task
    def unsafe() -> Any:
        try:
            bash(command="rm -rf /")
        except ToolDenied as exc:
            return f"denied: {exc}"
        return "ran"

    result = await orchestra.run(dag, executor=DaskExecutor(client))
    assert result.states == {"safe": TaskState.SUCCEEDED, "unsafe": TaskState.SUCCEEDED}
    assert result.outputs["safe"] == "ran ls"
    assert "no rm -rf here" in result.outputs["unsafe"]


def test_a_registry_made_in_code_travels_as_its_hooks(tmp_path: Path) -> None:
    made = HookRegistry(registry(tmp_path).hooks, project_dir=tmp_path)
    again = pickle.loads(pickle.dumps(made))
    assert again is not made  # made again from its hooks, with none of its live state
    assert again.hooks == made.hooks
    assert again.project_dir == made.project_dir
