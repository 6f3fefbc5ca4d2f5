"""DAGs of tasks, their anyio scheduler and the executor seam."""

from orchestra._attempts import DEFAULT_MAX_ATTEMPTS as DEFAULT_MAX_ATTEMPTS
from orchestra._exports import export as _export
from orchestra.dag._executor import AgentDispatcher as AgentDispatcher
from orchestra.dag._executor import Executor as Executor
from orchestra.dag._executor import LocalExecutor as LocalExecutor
from orchestra.dag._model import DAG as DAG
from orchestra.dag._model import Task as Task
from orchestra.dag._model import TaskOptions as TaskOptions
from orchestra.dag._model import TaskState as TaskState
from orchestra.dag._model import TriggerRule as TriggerRule
from orchestra.dag._result import RunResult as RunResult
from orchestra.dag._run import run as run
from orchestra.dag._run import run_sync as run_sync

__all__ = [
    "DAG",
    "DEFAULT_MAX_ATTEMPTS",
    "AgentDispatcher",
    "Executor",
    "LocalExecutor",
    "RunResult",
    "Task",
    "TaskOptions",
    "TaskState",
    "TriggerRule",
    "run",
    "run_sync",
]

_export(globals())
