"""The tracing API of orchestra's own engines. Internal: not public, may change any time.

The hook chain, the DAG scheduler, the subagent dispatcher and the skills registry take
their tracing from this module and from nowhere else in ``orchestra.tracing``'s private
modules; users and integrations use the public ``orchestra.tracing`` and
``orchestra.tracing.names``. Engines ask ``get_tracer()`` (or ``RunTelemetry.start()``)
once per run, dispatch or hook chain and hold a recorder whose no-op twin (``NO_RUN``,
``NO_ATTEMPT``) they call unconditionally when nothing records; a path taken once per
event asks ``last_tracer()``, ``get_tracer()``'s last answer.
"""

from orchestra.tracing._run import NO_ATTEMPT as NO_ATTEMPT
from orchestra.tracing._run import NO_RUN as NO_RUN
from orchestra.tracing._run import AttemptSpan as AttemptSpan
from orchestra.tracing._run import RunTelemetry as RunTelemetry
from orchestra.tracing._run import agent_attempt as agent_attempt
from orchestra.tracing._spans import hook_span as hook_span
from orchestra.tracing._spans import record_decision as record_decision
from orchestra.tracing._spans import record_error as record_error
from orchestra.tracing._spans import record_hook_error as record_hook_error
from orchestra.tracing._spans import set_budget_use as set_budget_use
from orchestra.tracing._spans import set_tool_result as set_tool_result
from orchestra.tracing._spans import tool_span as tool_span
from orchestra.tracing._state import get_tracer as get_tracer
from orchestra.tracing._state import last_tracer as last_tracer
from orchestra.tracing.names import STATE_RETRYING as STATE_RETRYING

__all__ = [
    "NO_ATTEMPT",
    "NO_RUN",
    "STATE_RETRYING",
    "AttemptSpan",
    "RunTelemetry",
    "agent_attempt",
    "get_tracer",
    "hook_span",
    "last_tracer",
    "record_decision",
    "record_error",
    "record_hook_error",
    "set_budget_use",
    "set_tool_result",
    "tool_span",
]
