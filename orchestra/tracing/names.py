"""Span names, attribute names, event names and metric names of orchestra's telemetry.

Every name orchestra puts on a span lives here, under one ``orchestra.*`` namespace, or is
an OpenTelemetry semantic-convention name where one exists (GenAI for agents and tools,
``error.type``, ``process.exit.code``). ``docs/reference/tracing-attributes.md`` lists them
all; a test keeps the two in step. Use them to read orchestra's spans::

    from orchestra.tracing import names

    failed = [s for s in spans if s.attributes.get(names.ATTR_TASK_STATE) == "failed"]
"""

from typing import Final as _Final

__all__ = [
    "ATTR_AGENT_ATTEMPT",
    "ATTR_AGENT_DELEGATED_FROM",
    "ATTR_AGENT_MODE",
    "ATTR_AGENT_PARENT",
    "ATTR_BRANCH_CHOSEN",
    "ATTR_BUDGET_EXCEEDED",
    "ATTR_BUDGET_PREFIX",
    "ATTR_DAG_DEPS",
    "ATTR_DAG_NAME",
    "ATTR_DECISION",
    "ATTR_DECISION_AGENT",
    "ATTR_DECISION_ATTEMPT",
    "ATTR_DECISION_BY",
    "ATTR_DECISION_DELAY",
    "ATTR_DECISION_REASON",
    "ATTR_ERROR_TYPE",
    "ATTR_HOOK_ENFORCED",
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
    "EVENT_BUDGET_WOULD_EXCEED",
    "EVENT_DECISION",
    "EVENT_HOOK_ERROR",
    "EVENT_TASK_NOT_RUN",
    "GEN_AI_AGENT_NAME",
    "GEN_AI_CONVERSATION_ID",
    "GEN_AI_INPUT_MESSAGES",
    "GEN_AI_OPERATION_NAME",
    "GEN_AI_OUTPUT_MESSAGES",
    "GEN_AI_PROVIDER_NAME",
    "GEN_AI_REQUEST_MODEL",
    "GEN_AI_RESPONSE_ID",
    "GEN_AI_TOOL_CALL_ARGUMENTS",
    "GEN_AI_TOOL_CALL_ID",
    "GEN_AI_TOOL_CALL_RESULT",
    "GEN_AI_TOOL_NAME",
    "GEN_AI_USAGE_INPUT_TOKENS",
    "GEN_AI_USAGE_OUTPUT_TOKENS",
    "GEN_AI_WORKFLOW_NAME",
    "LINK_PREVIOUS_ATTEMPT",
    "METRIC_DECISIONS",
    "METRIC_HOOK_DURATION",
    "METRIC_TASK_ATTEMPTS",
    "METRIC_TASK_DURATION",
    "OP_CHAT",
    "OP_EXECUTE_TOOL",
    "OP_INVOKE_AGENT",
    "OP_INVOKE_WORKFLOW",
    "SPAN_EXECUTE_TOOL",
    "SPAN_HOOK",
    "SPAN_INVOKE_AGENT",
    "SPAN_RUN",
    "SPAN_TASK",
    "STATE_RETRYING",
]

# --- span names (format strings) ----------------------------------------------------------

SPAN_RUN: _Final = "run {dag}"
"""One span per DAG run, the root of the run's trace (``run {dag}``)."""
SPAN_TASK: _Final = "task {task}"
"""One span per task attempt (``task {id}``); a retried attempt links to the one before."""
SPAN_HOOK: _Final = "hook {event}"
"""One span per hook call: a Python hook method or one YAML hook (``hook {event}``)."""
SPAN_INVOKE_AGENT: _Final = "invoke_agent {agent}"
"""One span per subagent dispatch attempt (GenAI semantic conventions)."""
SPAN_EXECUTE_TOOL: _Final = "execute_tool {tool}"
"""One span per call of a guarded tool (GenAI semantic conventions)."""

# --- GenAI semantic conventions -----------------------------------------------------------

GEN_AI_OPERATION_NAME: _Final = "gen_ai.operation.name"
"""``invoke_agent`` on agent spans, ``execute_tool`` on tool spans."""
GEN_AI_AGENT_NAME: _Final = "gen_ai.agent.name"
"""The name of the agent a dispatch runs on."""
GEN_AI_TOOL_NAME: _Final = "gen_ai.tool.name"
"""The name of a guarded tool."""
GEN_AI_INPUT_MESSAGES: _Final = "gen_ai.input.messages"
"""Content (opt-in): the text dispatched to an agent, as GenAI input messages JSON."""
GEN_AI_OUTPUT_MESSAGES: _Final = "gen_ai.output.messages"
"""Content (opt-in): the agent's output, as GenAI output messages JSON."""
GEN_AI_TOOL_CALL_ARGUMENTS: _Final = "gen_ai.tool.call.arguments"
"""Content (opt-in): the input a guarded tool was called with, as JSON."""
GEN_AI_TOOL_CALL_RESULT: _Final = "gen_ai.tool.call.result"
"""Content (opt-in): what a guarded tool returned, as JSON (or its repr)."""
OP_INVOKE_AGENT: _Final = "invoke_agent"
"""The value of ``gen_ai.operation.name`` on agent spans."""
OP_EXECUTE_TOOL: _Final = "execute_tool"
"""The value of ``gen_ai.operation.name`` on tool spans."""
GEN_AI_TOOL_CALL_ID: _Final = "gen_ai.tool.call.id"
"""The engine's id of one tool call (a guarded tool span's, when the engine gives one)."""
GEN_AI_WORKFLOW_NAME: _Final = "gen_ai.workflow.name"
"""An agent bridge's run span: the workflow (the first agent's name, or the run's own)."""
GEN_AI_CONVERSATION_ID: _Final = "gen_ai.conversation.id"
"""An agent bridge's run span: the conversation (session) the run continues."""
GEN_AI_PROVIDER_NAME: _Final = "gen_ai.provider.name"
"""A model call's span: who serves the model (``openai``)."""
GEN_AI_REQUEST_MODEL: _Final = "gen_ai.request.model"
"""A model call's span: the model asked."""
GEN_AI_RESPONSE_ID: _Final = "gen_ai.response.id"
"""A model call's span: the provider's id of the response."""
GEN_AI_USAGE_INPUT_TOKENS: _Final = "gen_ai.usage.input_tokens"
"""A model call's span: the input tokens it used."""
GEN_AI_USAGE_OUTPUT_TOKENS: _Final = "gen_ai.usage.output_tokens"
"""A model call's span: the output tokens it used."""
OP_INVOKE_WORKFLOW: _Final = "invoke_workflow"
"""The value of ``gen_ai.operation.name`` on an agent bridge's run span."""
OP_CHAT: _Final = "chat"
"""The value of ``gen_ai.operation.name`` on a model call's span."""

# --- other semantic conventions -----------------------------------------------------------

ATTR_ERROR_TYPE: _Final = "error.type"
"""The class name of the error that ended a span with status ERROR."""
ATTR_PROCESS_EXIT_CODE: _Final = "process.exit.code"
"""The exit code of a command hook's process."""

# --- runs ---------------------------------------------------------------------------------

ATTR_DAG_NAME: _Final = "orchestra.dag.name"
"""The DAG's name (run spans, task spans, metrics)."""
ATTR_DAG_DEPS: _Final = "orchestra.dag.deps"
"""The DAG's shape, on the run span: a JSON object mapping every task id, in the DAG's
order, to the list of ids it depends on (how a trace reader draws the graph)."""
ATTR_RUN_ID: _Final = "orchestra.run.id"
"""The run's unique id, as in ``RunResult.run_id`` and every ``TaskHookContext``."""
ATTR_RUN_TASKS: _Final = "orchestra.run.tasks"
"""How many tasks the DAG has."""
ATTR_RUN_MAX_CONCURRENCY: _Final = "orchestra.run.max_concurrency"
"""The run's ``max_concurrency``."""
ATTR_RUN_OK: _Final = "orchestra.run.ok"
"""Whether the run ended ok (``RunResult.ok``)."""
ATTR_RUN_FAILED: _Final = "orchestra.run.failed"
"""How many tasks ended FAILED, UPSTREAM_FAILED or CANCELLED."""

# --- tasks --------------------------------------------------------------------------------

ATTR_TASK_ID: _Final = "orchestra.task.id"
"""The task's id."""
ATTR_TASK_ATTEMPT: _Final = "orchestra.task.attempt"
"""The attempt number, 1-based."""
ATTR_TASK_STATE: _Final = "orchestra.task.state"
"""How the attempt ended: a ``TaskState`` value, or ``retrying`` when it is retried."""
ATTR_TASK_RETRIES: _Final = "orchestra.task.retries"
"""The task's own ``retries`` setting."""
ATTR_TASK_EXECUTOR: _Final = "orchestra.task.executor"
"""The agent that executes the task, for tasks with ``agent=``."""
ATTR_BRANCH_CHOSEN: _Final = "orchestra.branch.chosen"
"""On a branch task's attempt: the ids of the direct downstream tasks it chose to follow."""
STATE_RETRYING: _Final = "retrying"
"""The ``orchestra.task.state`` of an attempt that failed and is retried."""
ATTR_LINK_TYPE: _Final = "orchestra.link.type"
"""On a link: why the spans are linked (``previous_attempt``)."""
LINK_PREVIOUS_ATTEMPT: _Final = "previous_attempt"
"""The ``orchestra.link.type`` of a retried attempt's link to the attempt before."""
EVENT_TASK_NOT_RUN: _Final = "orchestra.task.not_run"
"""Run-span event for a task that never started (skipped, upstream failed, cancelled)."""

# --- budgets ------------------------------------------------------------------------------

ATTR_BUDGET_PREFIX: _Final = "orchestra.budget."
"""The prefix of a run's budget figures, on its span (a DAG run's, a dispatch attempt's, an
agent run's): ``orchestra.budget.<kind>.used`` and ``orchestra.budget.<kind>.limit`` for
each kind the ``Budget`` limits (``model_calls``, ``tool_calls``, ``input_tokens``,
``output_tokens``, ``cost_usd``)."""
ATTR_BUDGET_EXCEEDED: _Final = "orchestra.budget.exceeded"
"""The reason of the refusal or end a budget enforced in the run (``budget: tool calls
2/2``), if any."""
EVENT_BUDGET_WOULD_EXCEED: _Final = "orchestra.budget.would_exceed"
"""Span event of a budget in audit mode (``enforce=False``) for each call it would have
refused or ended the run at; its ``orchestra.decision.reason`` says which limit."""

# --- decisions ----------------------------------------------------------------------------

ATTR_DECISION: _Final = "orchestra.decision"
"""The decision taken: ``retry``, ``skip``, ``fail``, ``delegate``, ``deny``, ``block``,
``allow`` or ``ask``."""
ATTR_DECISION_BY: _Final = "orchestra.decision.by"
"""Who took it: a hook (``RetryPolicy.on_failure``, ``PreToolUse command
orchestra.yaml:12``), ``task.retries`` (the task's own policy) or ``orchestra`` (a cap or
budget)."""
ATTR_DECISION_REASON: _Final = "orchestra.decision.reason"
"""The reason the decision gave, if any."""
ATTR_DECISION_DELAY: _Final = "orchestra.decision.delay"
"""The delay of a ``Retry``, in seconds."""
ATTR_DECISION_AGENT: _Final = "orchestra.decision.agent"
"""The agent a ``Delegate`` moves the work to."""
ATTR_DECISION_ATTEMPT: _Final = "orchestra.decision.attempt"
"""The attempt the decision was taken for (on the decision event)."""
EVENT_DECISION: _Final = "orchestra.decision"
"""Span event recording a decision, with the ``orchestra.decision.*`` attributes."""

# --- hooks --------------------------------------------------------------------------------

ATTR_HOOK_EVENT: _Final = "orchestra.hook.event"
"""The moment (``before_execute``, ``on_failure``...) or event (``PreToolUse``...)."""
ATTR_HOOK_TYPE: _Final = "orchestra.hook.type"
"""``python``, ``command``, ``prompt``, ``permission``, ``http`` or ``mcp_tool``."""
ATTR_HOOK_NAME: _Final = "orchestra.hook.name"
"""The hook's name: a Python hook's class, a YAML hook's type and source."""
ATTR_HOOK_SOURCE: _Final = "orchestra.hook.source"
"""Where the hook is defined, ``file:line``."""
ATTR_HOOK_MATCHER: _Final = "orchestra.hook.matcher"
"""The matcher of a YAML hook group."""
ATTR_HOOK_SUBJECT: _Final = "orchestra.hook.subject"
"""What the hook was called about: a task id, an agent or a tool name."""
ATTR_HOOK_ENFORCED: _Final = "orchestra.hook.enforced"
"""``False`` on the span of a hook in audit mode (``enforce: false``): its decision, on the
same span, changed nothing. Absent on enforced hooks."""
ATTR_HOOK_OUTPUT: _Final = "orchestra.hook.output"
"""Content (opt-in): a YAML hook's answer as JSON (decision, reason, modified input,
messages, stderr)."""
ATTR_TOOL_DECISION: _Final = "orchestra.tool.decision"
"""On a tool span: ``allow`` when the call went ahead, ``deny`` or ``block`` if not."""
EVENT_HOOK_ERROR: _Final = "orchestra.hook.error"
"""Span event recording a hook error that was isolated (it counted as no opinion)."""

# --- agents -------------------------------------------------------------------------------

ATTR_AGENT_ATTEMPT: _Final = "orchestra.agent.attempt"
"""The attempt number with this agent, 1-based."""
ATTR_AGENT_MODE: _Final = "orchestra.agent.mode"
"""The ``ExecutionMode`` value: ``sync``, ``fork`` or ``teammate``."""
ATTR_AGENT_PARENT: _Final = "orchestra.agent.parent"
"""The agent (or DAG) that dispatched the work."""
ATTR_AGENT_DELEGATED_FROM: _Final = "orchestra.agent.delegated_from"
"""The agents tried before this one in the delegation chain."""

# --- metrics ------------------------------------------------------------------------------

METRIC_TASK_DURATION: _Final = "orchestra.task.duration"
"""Histogram, seconds: a task from its first attempt to its terminal state."""
METRIC_HOOK_DURATION: _Final = "orchestra.hook.duration"
"""Histogram, seconds: one hook call."""
METRIC_TASK_ATTEMPTS: _Final = "orchestra.task.attempts"
"""Counter: task attempts started."""
METRIC_DECISIONS: _Final = "orchestra.decisions"
"""Counter: decisions taken, by ``orchestra.decision`` kind."""
