"""Subagents and their dispatcher.

A subagent is any object with a ``name`` and an ``async run(task, ctx)`` method. A
``Dispatcher`` hands work to subagents by name, with ``SubagentHooks`` deciding what a
failure means (``Retry``, ``Delegate`` to another agent, ``Fail``), in one of three
``ExecutionMode``s: ``SYNC`` (the caller waits), ``FORK`` (a ``Fork`` handle to await or
cancel) and ``TEAMMATE`` (a session per parent that keeps its state across dispatches).
"""

from orchestra._attempts import DEFAULT_MAX_ATTEMPTS as DEFAULT_MAX_ATTEMPTS
from orchestra._errors import DispatchError as DispatchError
from orchestra._exports import export as _export
from orchestra._hooks import ExecutionMode as ExecutionMode
from orchestra._hooks import SubagentHookContext as SubagentHookContext
from orchestra._hooks import SubagentHooks as SubagentHooks
from orchestra.agents._dispatcher import Dispatcher as Dispatcher
from orchestra.agents._fork import Fork as Fork
from orchestra.agents._types import AgentContext as AgentContext
from orchestra.agents._types import Subagent as Subagent
from orchestra.agents._types import SubagentResult as SubagentResult

__all__ = [
    "DEFAULT_MAX_ATTEMPTS",
    "AgentContext",
    "DispatchError",
    "Dispatcher",
    "ExecutionMode",
    "Fork",
    "Subagent",
    "SubagentHookContext",
    "SubagentHooks",
    "SubagentResult",
]

_export(globals())
