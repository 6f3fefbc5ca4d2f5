"""The public names of every integration: pinned, shown at their public path, and built
on public ``orchestra`` names only (``orchestra.HookChain`` is their seam)."""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

import pytest

PINNED = {
    "orchestra_claude_agent_sdk": ["with_hooks"],
    "orchestra_dask": ["SUBMIT_OPTIONS", "DaskExecutor", "RemoteOutput"],
    "orchestra_hamilton": ["HookAdapter"],
    "orchestra_openai_agents": [
        "AskCallback",
        "HostedTools",
        "OnDeny",
        "OrchestraRunHooks",
        "answer_approval",
        "guard_agent",
        "guard_tool",
        "is_guarded",
        "pending_request",
    ],
    "orchestra_postgres": ["SCHEMA_VERSION", "PostgresJournal"],
    "orchestra_prefect": ["DEFAULT_MAX_RETRIES", "SKIPPED", "hooked", "task_state"],
}
_PRIVATE_IMPORT = re.compile(r"^\s*(from|import)\s+orchestra(\.[a-z_]+)*\._", re.MULTILINE)


@pytest.mark.parametrize("package", sorted(PINNED))
def test_all_is_pinned(package: str) -> None:
    module = importlib.import_module(package)
    assert sorted(module.__all__) == sorted(PINNED[package])
    for name in module.__all__:
        assert hasattr(module, name), name


@pytest.mark.parametrize("package", sorted(PINNED))
def test_classes_and_functions_show_their_public_path(package: str) -> None:
    module = importlib.import_module(package)
    shown = {
        name: getattr(module, name).__module__
        for name in module.__all__
        if inspect.isclass(getattr(module, name)) or inspect.isfunction(getattr(module, name))
    }
    assert shown == dict.fromkeys(shown, package)


@pytest.mark.parametrize("package", sorted(PINNED))
def test_only_public_orchestra_names_are_imported(package: str) -> None:
    folder = Path(importlib.import_module(package).__file__ or "").parent
    offenders = [
        path.name for path in folder.rglob("*.py") if _PRIVATE_IMPORT.search(path.read_text())
    ]
    assert offenders == []
