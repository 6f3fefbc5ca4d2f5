"""The executor seam: what runs task bodies, and the capabilities an executor may have.

``Executor`` is all the scheduler needs (``execute(task, kwargs)``); an executor that ships
work elsewhere (a cluster: ``orchestra_dask.DaskExecutor``) may also implement any of the
capability ``Protocol`` classes here, each checked once per run with ``isinstance``:
``KeepsOutputsRemote`` (``fetch``), ``ReleasesOutputs`` (``release``),
``ChoosesKeptOutputs`` (``keeps_output``), ``AppliesTimeouts`` (``applies_timeouts``) and
``ChainsSubmissions`` (``chain``). ``Executor``'s docstring says what the scheduler does
with each. Implement them in your own executor; the scheduler's own table of what a
run's executor can do stays private.
"""

from orchestra._exports import export as _export
from orchestra.dag._executor import AgentDispatcher as AgentDispatcher
from orchestra.dag._executor import AppliesTimeouts as AppliesTimeouts
from orchestra.dag._executor import ChainsSubmissions as ChainsSubmissions
from orchestra.dag._executor import ChoosesKeptOutputs as ChoosesKeptOutputs
from orchestra.dag._executor import Executor as Executor
from orchestra.dag._executor import KeepsOutputsRemote as KeepsOutputsRemote
from orchestra.dag._executor import LocalExecutor as LocalExecutor
from orchestra.dag._executor import ReleasesOutputs as ReleasesOutputs

__all__ = [
    "AgentDispatcher",
    "AppliesTimeouts",
    "ChainsSubmissions",
    "ChoosesKeptOutputs",
    "Executor",
    "KeepsOutputsRemote",
    "LocalExecutor",
    "ReleasesOutputs",
]

_export(globals())
