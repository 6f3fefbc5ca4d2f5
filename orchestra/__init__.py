"""orchestra: lifecycle hooks for orchestration.

Subclass ``TaskHooks`` or ``SubagentHooks``, override the moments you care about, and
plug the object into the DAG scheduler (``run``) or a subagent dispatcher. Decisions
(``Retry``, ``Skip``, ``Fail``, ``Delegate``, ``Replace``) are plain values; several hooks' answers
merge by precedence (see ``merge``). ``HookChain`` is the seam other engines call hooks
through.
"""

import typing as _typing

from orchestra._exports import lazy as _lazy

if _typing.TYPE_CHECKING:
    from orchestra._budget import Budget as Budget
    from orchestra._chain import HookChain as HookChain
    from orchestra._decisions import *  # noqa: F403  # exported: the names of _DECISIONS
    from orchestra._errors import BudgetExceeded as BudgetExceeded
    from orchestra._errors import ConfigError as ConfigError
    from orchestra._errors import DAGError as DAGError
    from orchestra._errors import DispatchError as DispatchError
    from orchestra._errors import HookError as HookError
    from orchestra._errors import JournalError as JournalError
    from orchestra._errors import OrchestraError as OrchestraError
    from orchestra._errors import TaskFailed as TaskFailed
    from orchestra._errors import ToolDenied as ToolDenied
    from orchestra._hooks import ExecutionMode as ExecutionMode
    from orchestra._hooks import RunContext as RunContext
    from orchestra._hooks import SubagentHookContext as SubagentHookContext
    from orchestra._hooks import SubagentHooks as SubagentHooks
    from orchestra._hooks import TaskHookContext as TaskHookContext
    from orchestra._hooks import TaskHooks as TaskHooks
    from orchestra._retry import RetryPolicy as RetryPolicy
    from orchestra._spending import BudgetUse as BudgetUse
    from orchestra.agents import Dispatcher as Dispatcher
    from orchestra.agents import Subagent as Subagent
    from orchestra.agents import SubagentResult as SubagentResult
    from orchestra.dag import DAG as DAG
    from orchestra.dag import Executor as Executor
    from orchestra.dag import LocalExecutor as LocalExecutor
    from orchestra.dag import RunResult as RunResult
    from orchestra.dag import Task as Task
    from orchestra.dag import TaskOptions as TaskOptions
    from orchestra.dag import TaskState as TaskState
    from orchestra.dag import TriggerRule as TriggerRule
    from orchestra.dag import run as run
    from orchestra.dag import run_sync as run_sync
    from orchestra.journal import Journal as Journal

__version__ = "0.1.0"

_DECISIONS: _typing.Final = ("Decision", "Delegate", "Fail", "Replace", "Retry", "Skip", "merge")
"""The names ``orchestra._decisions`` exports, listed once, here (not there: ``import
orchestra`` loads nothing): every class of its ``Decision`` union, the union and ``merge``."""

__all__ = [
    *_DECISIONS,
    "DAG",
    "Budget",
    "BudgetExceeded",
    "BudgetUse",
    "ConfigError",
    "DAGError",
    "DispatchError",
    "Dispatcher",
    "ExecutionMode",
    "Executor",
    "HookChain",
    "HookError",
    "Journal",
    "JournalError",
    "LocalExecutor",
    "OrchestraError",
    "RetryPolicy",
    "RunContext",
    "RunResult",
    "Subagent",
    "SubagentHookContext",
    "SubagentHooks",
    "SubagentResult",
    "Task",
    "TaskFailed",
    "TaskHookContext",
    "TaskHooks",
    "TaskOptions",
    "TaskState",
    "ToolDenied",
    "TriggerRule",
    "run",
    "run_sync",
]

# Every name is loaded when first used (PEP 562), so that ``import orchestra`` costs next
# to nothing (``orchestra --help`` loads no engine): the core's names all at once, at the
# first use of any of them (then they show their public paths, as eager imports did);
# the subagent dispatcher and the journal package each when used, as some programs only
# need them.
_CORE: _typing.Final = {
    **dict.fromkeys(_DECISIONS, "orchestra._decisions"),
    "Budget": "orchestra._budget",
    "HookChain": "orchestra._chain",
    "BudgetExceeded": "orchestra._errors",
    "ConfigError": "orchestra._errors",
    "DAGError": "orchestra._errors",
    "DispatchError": "orchestra._errors",
    "HookError": "orchestra._errors",
    "JournalError": "orchestra._errors",
    "OrchestraError": "orchestra._errors",
    "TaskFailed": "orchestra._errors",
    "ToolDenied": "orchestra._errors",
    "ExecutionMode": "orchestra._hooks",
    "RunContext": "orchestra._hooks",
    "SubagentHookContext": "orchestra._hooks",
    "SubagentHooks": "orchestra._hooks",
    "TaskHookContext": "orchestra._hooks",
    "TaskHooks": "orchestra._hooks",
    "RetryPolicy": "orchestra._retry",
    "BudgetUse": "orchestra._spending",
    "DAG": "orchestra.dag",
    "Executor": "orchestra.dag",
    "LocalExecutor": "orchestra.dag",
    "RunResult": "orchestra.dag",
    "Task": "orchestra.dag",
    "TaskOptions": "orchestra.dag",
    "TaskState": "orchestra.dag",
    "TriggerRule": "orchestra.dag",
    "run": "orchestra.dag",
    "run_sync": "orchestra.dag",
}
_ALONE: _typing.Final = {
    "Dispatcher": "orchestra.agents",
    "Subagent": "orchestra.agents",
    "SubagentResult": "orchestra.agents",
    "Journal": "orchestra.journal",
}
_SUBPACKAGES: _typing.Final = frozenset({"agents", "bridge", "dag", "journal", "skills", "tracing"})
_load = _lazy(globals(), {**_CORE, **_ALONE})


def __getattr__(name: str) -> _typing.Any:
    if name in _CORE:
        for each in _CORE:  # the core at once, as ``import orchestra`` loaded it before
            _load(each)
        return globals()[name]
    if name in _SUBPACKAGES:  # reachable after ``import orchestra``, as they were
        import importlib

        return importlib.import_module(f"orchestra.{name}")
    return _load(name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
