"""The spans of an SDK run, in one trace (internal).

::

    invoke_workflow {name}          the run (opened by the entry points, else lazily)
    ├── invoke_agent {agent}        one per agent dispatch (orchestra's agent span)
    │   ├── chat {model}            one per model call: model, token usage (GenAI)
    │   ├── execute_tool {tool}     one per guarded tool call
    │   └── hook {event}            hook calls
    └── ...

Names and attributes are OpenTelemetry's GenAI semantic conventions or orchestra's own,
all in ``orchestra.tracing.names``.
"""

from __future__ import annotations

import contextlib
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Final

from opentelemetry import trace

from orchestra import ExecutionMode
from orchestra.tracing import get_tracer
from orchestra.tracing.names import (
    ATTR_AGENT_ATTEMPT,
    ATTR_AGENT_DELEGATED_FROM,
    ATTR_AGENT_MODE,
    ATTR_AGENT_PARENT,
    ATTR_RUN_ID,
    GEN_AI_AGENT_NAME,
    GEN_AI_CONVERSATION_ID,
    GEN_AI_OPERATION_NAME,
    GEN_AI_PROVIDER_NAME,
    GEN_AI_REQUEST_MODEL,
    GEN_AI_RESPONSE_ID,
    GEN_AI_USAGE_INPUT_TOKENS,
    GEN_AI_USAGE_OUTPUT_TOKENS,
    GEN_AI_WORKFLOW_NAME,
    OP_CHAT,
    OP_INVOKE_AGENT,
    OP_INVOKE_WORKFLOW,
    SPAN_INVOKE_AGENT,
)

if TYPE_CHECKING:
    from opentelemetry.trace import Span

    from orchestra import SubagentHookContext

__all__ = [
    "SPAN_CHAT",
    "SPAN_WORKFLOW",
    "agent_span",
    "current",
    "llm_span",
    "llm_span_end",
    "run_span",
]

_PROVIDER_OPENAI: Final = "openai"

SPAN_WORKFLOW: Final = "invoke_workflow {workflow}"
"""The span of one SDK run (GenAI ``invoke_workflow``)."""
SPAN_CHAT: Final = "chat {model}"
"""The span of one model call (GenAI ``chat``)."""


def _under(parent: Span | None) -> Any:
    return trace.set_span_in_context(parent) if parent is not None else None


def run_span(workflow: str, run_id: str, conversation: str | None = None) -> Span | None:
    """Start the run's span (a child of the caller's current span, if any)."""
    tracer = get_tracer()
    if tracer is None:
        return None
    attributes: dict[str, Any] = {
        GEN_AI_OPERATION_NAME: OP_INVOKE_WORKFLOW,
        GEN_AI_WORKFLOW_NAME: workflow,
        ATTR_RUN_ID: run_id,
    }
    if conversation is not None:
        attributes[GEN_AI_CONVERSATION_ID] = conversation
    return tracer.start_span(SPAN_WORKFLOW.format(workflow=workflow), attributes=attributes)


def agent_span(ctx: SubagentHookContext, parent: Span | None) -> Span | None:
    """Start an agent dispatch's ``invoke_agent`` span under the run's span."""
    tracer = get_tracer()
    if tracer is None:
        return None
    attributes: dict[str, Any] = {
        GEN_AI_OPERATION_NAME: OP_INVOKE_AGENT,
        GEN_AI_AGENT_NAME: ctx.subagent_name,
        ATTR_AGENT_MODE: ExecutionMode.SYNC.value,
        ATTR_AGENT_ATTEMPT: ctx.attempt,
    }
    if ctx.parent_agent is not None:
        attributes[ATTR_AGENT_PARENT] = ctx.parent_agent
    if ctx.delegated_from:
        attributes[ATTR_AGENT_DELEGATED_FROM] = list(ctx.delegated_from)
    return tracer.start_span(
        SPAN_INVOKE_AGENT.format(agent=ctx.subagent_name),
        context=_under(parent),
        attributes=attributes,
    )


def model_name(agent: Any) -> str | None:
    """The model an agent calls, when it names one (a string, or a model object's ``model``)."""
    model = getattr(agent, "model", None)
    if isinstance(model, str):
        return model
    name = getattr(model, "model", None)
    return name if isinstance(name, str) else None


def llm_span(agent: Any, parent: Span | None) -> Span | None:
    """Start a model call's ``chat {model}`` span under the agent's span."""
    tracer = get_tracer()
    if tracer is None:
        return None
    model = model_name(agent)
    attributes: dict[str, Any] = {
        GEN_AI_OPERATION_NAME: OP_CHAT,
        GEN_AI_PROVIDER_NAME: _PROVIDER_OPENAI,
        GEN_AI_AGENT_NAME: str(agent.name),
    }
    if model is not None:
        attributes[GEN_AI_REQUEST_MODEL] = model
    name = SPAN_CHAT.format(model=model) if model else "chat"
    return tracer.start_span(name, context=_under(parent), attributes=attributes)


def llm_span_end(span: Span, response: Any) -> None:
    """End a model call's span with the response's id and token usage."""
    usage = getattr(response, "usage", None)
    if usage is not None:
        span.set_attribute(GEN_AI_USAGE_INPUT_TOKENS, int(usage.input_tokens))
        span.set_attribute(GEN_AI_USAGE_OUTPUT_TOKENS, int(usage.output_tokens))
    response_id = getattr(response, "response_id", None)
    if response_id:
        span.set_attribute(GEN_AI_RESPONSE_ID, str(response_id))
    span.end()


def current(span: Span | None) -> AbstractContextManager[object]:
    """Make ``span`` the current span (hook spans become its children); None: no change."""
    if span is None:
        return contextlib.nullcontext()
    return trace.use_span(span, end_on_exit=False)
