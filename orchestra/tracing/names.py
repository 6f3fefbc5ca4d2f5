"""Span names, attribute names, event names and metric names of orchestra's telemetry.

Every name orchestra puts on a span lives here, under one ``orchestra.*`` namespace, or is
an OpenTelemetry semantic-convention name where one exists (GenAI for agents and tools,
``error.type``, ``process.exit.code``). ``docs/reference/tracing-attributes.md`` lists them
all; a test keeps the two in step. Use them to read orchestra's spans::

    from orchestra.tracing import names

    failed = [s for s in spans if s.attributes.get(names.ATTR_TASK_STATE) == "failed"]
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "ATTR_AGENT_ATTEMPT",
    "ATTR_AGENT_DELEGATED_FROM",
    "ATTR_AGENT_MODE",
    "ATTR_AGENT_PARENT",
    "ATTR_DAG_DEPS",
    "ATTR_DAG_NAME",
    "ATTR_DECISION",
    "ATTR_DECISION_AGENT",
    "ATTR_DECISION_ATTEMPT",
    "ATTR_DECISION_BY",
    "ATTR_DECISION_DELAY",
    "ATTR_DECISION_REASON",
    "ATTR_ERROR_TYPE",
    "ATTR_HOOK_EVENT",
    "ATTR_HOOK_MATCHER",
    "ATTR_HOOK_NAME",
    "ATTR_HOOK_OUTPUT",
    "ATTR_HOOK_SOURCE",
    "ATTR_HOOK_SUBJECT",
    "ATTR_HOOK_TYPE",
    "ATTR_LINK_TYPE",
    "ATTR_PROCESS_EXIT_CODE",
    "ATTR_RUN_FAILED",
    "ATTR_RUN_ID",
    "ATTR_RUN_MAX_CONCURRENCY",
    "ATTR_RUN_OK",
    "ATTR_RUN_TASKS",
    "ATTR_TASK_ATTEMPT",
    "ATTR_TASK_EXECUTOR",
    "ATTR_TASK_ID",
    "ATTR_TASK_RETRIES",
    "ATTR_TASK_STATE",
    "ATTR_TOOL_DECISION",
    "EVENT_DECISION",
    "EVENT_HOOK_ERROR",
    "EVENT_TASK_NOT_RUN",
    "GEN_AI_AGENT_NAME",
    "GEN_AI_INPUT_MESSAGES",
    "GEN_AI_OPERATION_NAME",
    "GEN_AI_OUTPUT_MESSAGES",
    "GEN_AI_TOOL_CALL_ARGUMENTS",
    "GEN_AI_TOOL_CALL_RESULT",
    "GEN_AI_TOOL_NAME",
    "LINK_PREVIOUS_ATTEMPT",
    "METRIC_DECISIONS",
    "METRIC_HOOK_DURATION",
    "METRIC_TASK_ATTEMPTS",
    "METRIC_TASK_DURATION",
    "OP_EXECUTE_TOOL",
    "OP_INVOKE_AGENT",
    "SPAN_EXECUTE_TOOL",
    "SPAN_HOOK",
    "SPAN_INVOKE_AGENT",
    "SPAN_RUN",
    "SPAN_TASK",
    "STATE_RETRYING",
]

# --- span names (format strings) ----------------------------------------------------------

SPAN_RUN: Final = "run {dag}"
"""One span per DAG run, the root of the run's trace (``run {dag}``)."""
SPAN_TASK: Final = "task {task}"
"""One span per task attempt (``task {id}``); a retried attempt links to the one before."""
SPAN_HOOK: Final = "hook {event}"
"""One span per hook call: a Python hook method or one YAML hook (``hook {event}``)."""
SPAN_INVOKE_AGENT: Final = "invoke_agent {agent}"
"""One span per subagent dispatch attempt (GenAI semantic conventions)."""
SPAN_EXECUTE_TOOL: Final = "execute_tool {tool}"
"""One span per call of a guarded tool (GenAI semantic conventions)."""

# --- GenAI semantic conventions -----------------------------------------------------------

GEN_AI_OPERATION_NAME: Final = "gen_ai.operation.name"
"""``invoke_agent`` on agent spans, ``execute_tool`` on tool spans."""
GEN_AI_AGENT_NAME: Final = "gen_ai.agent.name"
"""The name of the agent a dispatch runs on."""
GEN_AI_TOOL_NAME: Final = "gen_ai.tool.name"
"""The name of a guarded tool."""
GEN_AI_INPUT_MESSAGES: Final = "gen_ai.input.messages"
"""Content (opt-in): the text dispatched to an agent, as GenAI input messages JSON."""
GEN_AI_OUTPUT_MESSAGES: Final = "gen_ai.output.messages"
"""Content (opt-in): the agent's output, as GenAI output messages JSON."""
GEN_AI_TOOL_CALL_ARGUMENTS: Final = "gen_ai.tool.call.arguments"
"""Content (opt-in): the input a guarded tool was called with, as JSON."""
GEN_AI_TOOL_CALL_RESULT: Final = "gen_ai.tool.call.result"
"""Content (opt-in): what a guarded tool returned, as JSON (or its repr)."""
OP_INVOKE_AGENT: Final = "invoke_agent"
"""The value of ``gen_ai.operation.name`` on agent spans."""
OP_EXECUTE_TOOL: Final = "execute_tool"
"""The value of ``gen_ai.operation.name`` on tool spans."""

# --- other semantic conventions -----------------------------------------------------------

ATTR_ERROR_TYPE: Final = "error.type"
"""The class name of the error that ended a span with status ERROR."""
ATTR_PROCESS_EXIT_CODE: Final = "process.exit.code"
"""The exit code of a command hook's process."""

# --- runs ---------------------------------------------------------------------------------

ATTR_DAG_NAME: Final = "orchestra.dag.name"
"""The DAG's name (run spans, task spans, metrics)."""
ATTR_DAG_DEPS: Final = "orchestra.dag.deps"
"""The DAG's shape, on the run span: a JSON object mapping every task id, in the DAG's
order, to the list of ids it depends on (how a trace reader draws the graph)."""
ATTR_RUN_ID: Final = "orchestra.run.id"
"""The run's unique id, as in ``RunResult.run_id`` and every ``TaskHookContext``."""
ATTR_RUN_TASKS: Final = "orchestra.run.tasks"
"""How many tasks the DAG has."""
ATTR_RUN_MAX_CONCURRENCY: Final = "orchestra.run.max_concurrency"
"""The run's ``max_concurrency``."""
ATTR_RUN_OK: Final = "orchestra.run.ok"
"""Whether the run ended ok (``RunResult.ok``)."""
ATTR_RUN_FAILED: Final = "orchestra.run.failed"
"""How many tasks ended FAILED, UPSTREAM_FAILED or CANCELLED."""

# --- tasks --------------------------------------------------------------------------------

ATTR_TASK_ID: Final = "orchestra.task.id"
"""The task's id."""
ATTR_TASK_ATTEMPT: Final = "orchestra.task.attempt"
"""The attempt number, 1-based."""
ATTR_TASK_STATE: Final = "orchestra.task.state"
"""How the attempt ended: a ``TaskState`` value, or ``retrying`` when it is retried."""
ATTR_TASK_RETRIES: Final = "orchestra.task.retries"
"""The task's own ``retries`` setting."""
ATTR_TASK_EXECUTOR: Final = "orchestra.task.executor"
"""The agent that executes the task, for tasks with ``agent=``."""
STATE_RETRYING: Final = "retrying"
"""The ``orchestra.task.state`` of an attempt that failed and is retried."""
ATTR_LINK_TYPE: Final = "orchestra.link.type"
"""On a link: why the spans are linked (``previous_attempt``)."""
LINK_PREVIOUS_ATTEMPT: Final = "previous_attempt"
"""The ``orchestra.link.type`` of a retried attempt's link to the attempt before."""
EVENT_TASK_NOT_RUN: Final = "orchestra.task.not_run"
"""Run-span event for a task that never started (skipped, upstream failed, cancelled)."""

# --- decisions ----------------------------------------------------------------------------

ATTR_DECISION: Final = "orchestra.decision"
"""The decision taken: ``retry``, ``skip``, ``fail``, ``delegate``, ``deny``, ``block``,
``allow`` or ``ask``."""
ATTR_DECISION_BY: Final = "orchestra.decision.by"
"""Who took it: a hook (``RetryPolicy.on_failure``, ``PreToolUse command
orchestra.yaml:12``), ``task.retries`` (the task's own policy) or ``orchestra`` (a cap or
budget)."""
ATTR_DECISION_REASON: Final = "orchestra.decision.reason"
"""The reason the decision gave, if any."""
ATTR_DECISION_DELAY: Final = "orchestra.decision.delay"
"""The delay of a ``Retry``, in seconds."""
ATTR_DECISION_AGENT: Final = "orchestra.decision.agent"
"""The agent a ``Delegate`` moves the work to."""
ATTR_DECISION_ATTEMPT: Final = "orchestra.decision.attempt"
"""The attempt the decision was taken for (on the decision event)."""
EVENT_DECISION: Final = "orchestra.decision"
"""Span event recording a decision, with the ``orchestra.decision.*`` attributes."""

# --- hooks --------------------------------------------------------------------------------

ATTR_HOOK_EVENT: Final = "orchestra.hook.event"
"""The moment (``before_execute``, ``on_failure``...) or event (``PreToolUse``...)."""
ATTR_HOOK_TYPE: Final = "orchestra.hook.type"
"""``python``, ``command``, ``prompt``, ``permission``, ``http`` or ``mcp_tool``."""
ATTR_HOOK_NAME: Final = "orchestra.hook.name"
"""The hook's name: a Python hook's class, a YAML hook's type and source."""
ATTR_HOOK_SOURCE: Final = "orchestra.hook.source"
"""Where the hook is defined, ``file:line``."""
ATTR_HOOK_MATCHER: Final = "orchestra.hook.matcher"
"""The matcher of a YAML hook group."""
ATTR_HOOK_SUBJECT: Final = "orchestra.hook.subject"
"""What the hook was called about: a task id, an agent or a tool name."""
ATTR_HOOK_OUTPUT: Final = "orchestra.hook.output"
"""Content (opt-in): a YAML hook's answer as JSON (decision, reason, modified input,
messages, stderr)."""
ATTR_TOOL_DECISION: Final = "orchestra.tool.decision"
"""On a tool span: ``allow`` when the call went ahead, ``deny`` or ``block`` if not."""
EVENT_HOOK_ERROR: Final = "orchestra.hook.error"
"""Span event recording a hook error that was isolated (it counted as no opinion)."""

# --- agents -------------------------------------------------------------------------------

ATTR_AGENT_ATTEMPT: Final = "orchestra.agent.attempt"
"""The attempt number with this agent, 1-based."""
ATTR_AGENT_MODE: Final = "orchestra.agent.mode"
"""The ``ExecutionMode`` value: ``sync``, ``fork`` or ``teammate``."""
ATTR_AGENT_PARENT: Final = "orchestra.agent.parent"
"""The agent (or DAG) that dispatched the work."""
ATTR_AGENT_DELEGATED_FROM: Final = "orchestra.agent.delegated_from"
"""The agents tried before this one in the delegation chain."""

# --- metrics ------------------------------------------------------------------------------

METRIC_TASK_DURATION: Final = "orchestra.task.duration"
"""Histogram, seconds: a task from its first attempt to its terminal state."""
METRIC_HOOK_DURATION: Final = "orchestra.hook.duration"
"""Histogram, seconds: one hook call."""
METRIC_TASK_ATTEMPTS: Final = "orchestra.task.attempts"
"""Counter: task attempts started."""
METRIC_DECISIONS: Final = "orchestra.decisions"
"""Counter: decisions taken, by ``orchestra.decision`` kind."""
