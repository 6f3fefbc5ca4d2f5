"""The one seam every engine drives hooks through: the attempt driver (and its answers).

A bridge (an integration, or orchestra's own engines) writes no attempt loop: it feeds an
``AttemptDriver``'s ``TaskAttempts`` what happened (``started``, ``succeeded(output)``,
``failed(error)``) and carries out what it answers:

- ``DoRun(inputs)``: run the body with these inputs;
- ``DoSleep(delay)``: wait, then start the next attempt;
- ``DoGive(output)``: the work SUCCEEDED with this output (also when a hook gave it:
  ``Replace(GiveOutput(value))`` in ``before_execute``, a graph executor's ``block``);
- ``DoSkip(reason)``: the work is given up, the run goes on;
- ``DoFail(error, reason)``: the work FAILED: raise ``error``.

The driver owns the merge (``HookChain``), the attempt cap (``DEFAULT_MAX_ATTEMPTS``), the
run's ``RetryBudget``, the reasons and ``on_end`` exactly once; it has a sync form (for
engines that call hooks from synchronous code) and an async one.

Imports: ``orchestra.bridge`` sits above ``orchestra.dag``, ``orchestra.agents`` and
``orchestra.skills`` (it may import them and the layers below), and none of them imports
it: the scheduler and the dispatcher share the driver's decision rule through
``orchestra._attempts``, below all of them. Integrations import it (public names only).
"""

from orchestra._attempts import DEFAULT_MAX_ATTEMPTS as DEFAULT_MAX_ATTEMPTS
from orchestra._attempts import RetryBudget as RetryBudget
from orchestra._decisions import GiveOutput as GiveOutput
from orchestra._exports import export as _export
from orchestra.bridge._answers import Answer as Answer
from orchestra.bridge._answers import DoFail as DoFail
from orchestra.bridge._answers import DoGive as DoGive
from orchestra.bridge._answers import DoRun as DoRun
from orchestra.bridge._answers import DoSkip as DoSkip
from orchestra.bridge._answers import DoSleep as DoSleep
from orchestra.bridge._answers import Ended as Ended
from orchestra.bridge._answers import carry as carry
from orchestra.bridge._attempts import AttemptDriver as AttemptDriver
from orchestra.bridge._attempts import ContextFactory as ContextFactory
from orchestra.bridge._attempts import SpanFactory as SpanFactory
from orchestra.bridge._attempts import TaskAttempts as TaskAttempts

__all__ = [
    "DEFAULT_MAX_ATTEMPTS",
    "Answer",
    "AttemptDriver",
    "ContextFactory",
    "DoFail",
    "DoGive",
    "DoRun",
    "DoSkip",
    "DoSleep",
    "Ended",
    "GiveOutput",
    "RetryBudget",
    "SpanFactory",
    "TaskAttempts",
    "carry",
]

_export(globals())
