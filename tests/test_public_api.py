from __future__ import annotations

import inspect

import orchestra


def test_all_is_exported_once() -> None:
    assert len(set(orchestra.__all__)) == len(orchestra.__all__)  # ruff keeps it sorted
    for name in orchestra.__all__:
        assert hasattr(orchestra, name), name


def test_every_public_name_is_documented() -> None:
    for name in orchestra.__all__:
        obj = getattr(orchestra, name)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            assert inspect.getdoc(obj), f"orchestra.{name} has no docstring"


def test_design_contract_names() -> None:
    contract = {
        "Retry", "Skip", "Fail", "Delegate", "merge",
        "TaskHooks", "SubagentHooks", "TaskHookContext", "SubagentHookContext",
        "RetryPolicy", "DAG", "Task", "DAGError", "run", "run_sync", "RunResult", "TaskState",
        "ExecutionMode", "DispatchError",
    }  # fmt: skip
    assert contract <= set(orchestra.__all__)
