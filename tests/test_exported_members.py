"""Each public package exports exactly what it means to, under its public path.

As httpx's ``tests/test_exported_members.py`` and anyio's ``tests/test_all_attributes.py``:
``__all__`` is pinned per package (a change to the public surface is a change to this
file), every public attribute is in it, and every class and function shows the path users
import it from (``orchestra.Retry``, not ``orchestra._decisions.Retry``), so reprs,
pickles and docs name it right.
"""

from __future__ import annotations

import importlib
import inspect
import pickle
import types
from pathlib import Path

import pytest

import orchestra

PINNED: dict[str, set[str]] = {
    "orchestra": {
        # decisions
        "Decision", "Delegate", "Fail", "Replace", "Retry", "Skip", "merge",
        # hooks, their contexts, the engine seam
        "ExecutionMode", "HookChain", "RetryPolicy", "RunContext", "SubagentHookContext",
        "SubagentHooks", "TaskHookContext", "TaskHooks",
        # DAGs and the scheduler
        "DAG", "Executor", "LocalExecutor", "RunResult", "Task", "TaskOptions", "TaskState",
        "TriggerRule", "run", "run_sync",
        # subagents
        "Dispatcher", "Subagent", "SubagentResult",
        # journal
        "Journal",
        # budgets
        "Budget", "BudgetUse",
        # errors
        "BudgetExceeded", "ConfigError", "DAGError", "DispatchError", "HookError", "JournalError",
        "OrchestraError", "TaskFailed", "ToolDenied",
    },
    "orchestra.dag": {
        "AgentDispatcher", "DAG", "DEFAULT_MAX_ATTEMPTS", "Executor", "LocalExecutor",
        "RunResult", "Task", "TaskOptions", "TaskState", "TriggerRule", "run", "run_sync",
    },
    "orchestra.bridge.testing": {
        "TASK_CELLS", "EndRecorder", "TaskEngine", "TaskRun", "check_task_cell",
        "task_matrix_header", "task_matrix_row",
        "TOOL_CELLS", "ToolBody", "ToolEngine", "ToolRun", "check_tool_cell",
        "tool_matrix_header", "tool_matrix_row", "PENDING_FIELDS", "check_pending_request",
        "check_budget_trace",
        "WAY_CELLS", "WayEngine", "check_way_cell", "way_matrix_header", "way_matrix_rows",
        "ASK_CELLS", "AskEngine", "Paused", "check_ask_cell", "ask_matrix_header",
        "ask_matrix_row",
    },
    "orchestra.executors": {
        "AgentDispatcher", "AppliesTimeouts", "ChainsSubmissions", "ChoosesKeptOutputs",
        "Executor", "KeepsOutputsRemote", "LocalExecutor", "ReleasesOutputs",
    },
    "orchestra.agents": {
        "DEFAULT_MAX_ATTEMPTS", "DispatchError", "Dispatcher", "ExecutionMode", "Fork",
        "AgentContext", "Subagent", "SubagentHookContext", "SubagentHooks", "SubagentResult",
    },
    "orchestra.tracing": {
        "ENV_CAPTURE_CONTENT", "ENV_TRACING", "JsonlSpanExporter", "capture_content",
        "configure", "decode_attributes", "extract_env", "get_tracer", "inject_env",
        "inject_headers", "is_enabled", "names", "read_jsonl", "record_decision", "record_error",
        "set_capture_content",
        "set_enabled", "set_meter_provider", "set_tracer_provider", "traceparent",
    },
    "orchestra.bridge": {
        # the attempt driver and its answers
        "Again", "Answer", "AttemptDriver", "ContextFactory", "DEFAULT_MAX_ATTEMPTS", "DoFail",
        "DoGive", "DoRun", "DoSkip", "DoSleep", "Ended", "GiveOutput", "RetryBudget", "SpanFactory",
        "TaskAttempts", "carry", "keep",
        # the attempts of a whole agent run (SubagentHooks)
        "RunAttempts",
        # the tool-call protocol: the call, its answers, the flows and their drivers
        "Mock", "Ask", "AskCallback", "Consult", "DENIED_PREFIX", "Effect", "FailedAnswer",
        "Fire", "OutcomeCallback", "PreAnswer", "Proceed", "Raise", "Refuse", "ToolCall",
        "ToolHooks", "args_sha256", "ask_reason", "blocked_reason", "deny_reason",
        "error_fields", "failed_flow", "mark_decision", "post_flow", "post_tool_use_payload",
        "pre_flow", "refuse_flow",
        "run_blocking", "set_tool_result", "tool_span",
        # a person's answer to a paused call
        "Approval", "DECISIONS", "resume",
        # the ambient policy
        "Policy", "current_policy", "policy_scope", "reset_policy", "resolve_policy", "set_policy",
        # the budgets a run opens
        "RunBudgets", "budgets_of", "charge_model_end", "charge_model_start", "enter_budgets",
        "open_budgets",
        # the hook chains around a tool call an engine runs itself
        "Before", "Carries", "MAX_REJUDGE", "ToolChains", "judge", "no_agents", "split_hooks",
        "DISPATCH_AS_TOOL", "TOOL_AS_TASK",
        # the record of a run an engine drives
        "RunRecord",
    },
    "orchestra.skills": {
        "AgentHook", "AskCallback", "AuditedDecision", "CommandHook", "ConfigError",
        "CriticalHookError",
        "DEFAULT_TIMEOUT", "EVENTS",
        "EventSpec",
        "Guard", "HOOK_TYPES", "HookDecision", "HookOutcome", "HookRecord", "HookRegistry",
        "HookResult", "HookRunError", "HookSpec", "HookType", "HttpHook", "Judge", "JudgeRequest",
        "MAX_COMMAND_BYTES",
        "MAX_FILE_BYTES", "MAX_TIMEOUT", "McpServerSpec", "McpToolHook", "OnError",
        "OpenAICompatibleJudge",
        "OutcomeCallback", "PermissionHook", "PromptHook", "PythonHook", "ReplayChange",
        "ReplayReport",
        "RegistrySubagentHooks", "RegistryTaskHooks", "Sandbox", "Step", "StepEvents", "TlsMode",
        "ToolDenied",
        "load", "post_tool_use_payload", "serve",
    },
}  # fmt: skip

PACKAGES = [*PINNED, "orchestra.tracing.names"]


@pytest.mark.parametrize("package", PINNED)
def test_all_is_pinned(package: str) -> None:
    module = importlib.import_module(package)
    assert len(set(module.__all__)) == len(module.__all__), "a name is listed twice"
    assert set(module.__all__) == PINNED[package]


@pytest.mark.parametrize("package", PACKAGES)
def test_every_public_attribute_is_exported(package: str) -> None:
    module = importlib.import_module(package)
    public = {
        name
        for name, value in vars(module).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }
    assert public <= set(module.__all__), "public but not in __all__"
    for name in module.__all__:
        assert hasattr(module, name), name


def _defined(package: str) -> list[tuple[str, object]]:
    module = importlib.import_module(package)
    return [
        (name, obj)
        for name in module.__all__
        if inspect.isclass(obj := getattr(module, name)) or inspect.isfunction(obj)
    ]


@pytest.mark.parametrize("package", PINNED)
def test_public_names_show_their_public_path(package: str) -> None:
    for name, obj in _defined(package):
        path: str = obj.__module__  # type: ignore[attr-defined]
        if not path.startswith("orchestra"):
            continue  # re-exported from a dependency
        assert not any(part.startswith("_") for part in path.split(".")), (name, path)
        # the path resolves back to the object: repr, pickle and docs all work
        found = importlib.import_module(path)
        for part in obj.__qualname__.split("."):  # type: ignore[attr-defined]
            found = getattr(found, part)
        assert found is obj, (name, path)


@pytest.mark.parametrize("package", PINNED)
def test_public_names_are_documented(package: str) -> None:
    for name, obj in _defined(package):
        assert inspect.getdoc(obj), f"{package}.{name} has no docstring"


def test_reprs_and_pickles_use_public_paths() -> None:
    assert repr(orchestra.Retry) == "<class 'orchestra.Retry'>"
    assert repr(orchestra.HookChain) == "<class 'orchestra.HookChain'>"
    assert repr(orchestra.TaskState.FAILED) == "TaskState.FAILED"
    assert orchestra.TaskState.__module__ == "orchestra.dag"
    assert orchestra.Dispatcher.__module__ == "orchestra.agents"
    assert orchestra.tracing.configure.__module__ == "orchestra.tracing"
    decision = orchestra.Delegate("writer", "too long")
    assert b"orchestra._" not in pickle.dumps(decision)
    assert pickle.loads(pickle.dumps(decision)) == decision


def test_design_contract_names() -> None:
    contract = {
        "Retry", "Skip", "Fail", "Delegate", "Replace", "merge", "RunContext",
        "TaskHooks", "SubagentHooks", "TaskHookContext", "SubagentHookContext", "HookChain",
        "RetryPolicy", "DAG", "Task", "DAGError", "run", "run_sync", "RunResult", "TaskState",
        "ExecutionMode", "DispatchError", "Dispatcher", "Subagent", "SubagentResult",
    }  # fmt: skip
    assert contract <= set(orchestra.__all__)


def test_tracing_constants_read_under_their_old_spelling() -> None:
    # They moved to orchestra.tracing.names; orchestra.tracing.ATTR_* still reads.
    from orchestra.tracing import names

    assert orchestra.tracing.ATTR_DECISION == names.ATTR_DECISION == "orchestra.decision"
    with pytest.raises(AttributeError, match="no attribute 'ATTR_NOPE'"):
        _ = orchestra.tracing.ATTR_NOPE


def test_engines_take_tracing_from_its_one_internal_module() -> None:
    # dag/, agents/, skills/ and the hook chain use orchestra.tracing._engine (declared
    # internal) and the public orchestra.tracing, never tracing's other private modules.
    root = Path(orchestra.__file__).parent
    for module in sorted(root.rglob("*.py")):
        if module.parent.name in ("tracing", "cli"):
            continue
        for line in module.read_text().splitlines():
            words = line.split()
            if words[:1] in (["from"], ["import"]) and "orchestra.tracing._" in line:
                assert "orchestra.tracing._engine" in line, (module.name, line)
