"""One run is one trace: the run, its agents, their model calls, tools and hooks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from agents import Agent, Runner, Usage, function_tool
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call
from bridge_helpers import SpanLedger, drive, write_config
from opentelemetry.sdk.trace import ReadableSpan
from orchestra_openai_agents import OrchestraRunHooks

pytestmark = pytest.mark.anyio


class NamedModel(ScriptedModel):
    model = "gpt-test"  # what the SDK's own models call their model name


def usage(tokens_in: int, tokens_out: int) -> Usage:
    return Usage(
        requests=1,
        input_tokens=tokens_in,
        output_tokens=tokens_out,
        total_tokens=tokens_in + tokens_out,
    )


def parent_of(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def span_id(span: ReadableSpan) -> int:
    assert span.context is not None
    return span.context.span_id


async def test_one_run_is_one_trace(tmp_path: Path, mode: str, spans: SpanLedger) -> None:
    registry = write_config(
        tmp_path, {"PostToolUse": [{"hooks": [{"type": "prompt", "prompt": "noted"}]}]}
    )

    @function_tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    model = NamedModel(
        [
            ModelStep([function_call("add", {"a": 1, "b": 1}, call_id="c1")], usage(12, 5)),
            ModelStep([function_call("transfer_to_math", {}, call_id="c2")], usage(20, 3)),
            ModelStep([assistant_message("2")], usage(30, 1)),
        ]
    )
    math = Agent(name="math", model=model)
    triage = Agent(name="triage", model=model, tools=[add], handoffs=[math])

    await drive(OrchestraRunHooks(registry=registry), triage, "1 + 1?", mode)

    finished = spans.finished()
    assert spans.open() == []
    assert len({s.context.trace_id for s in finished if s.context is not None}) == 1
    by_name: dict[str, list[ReadableSpan]] = {}
    for span in finished:
        by_name.setdefault(span.name, []).append(span)
    [run] = by_name["invoke_workflow triage"]
    assert run.parent is None  # the root
    [triage_span] = by_name["invoke_agent triage"]
    [math_span] = by_name["invoke_agent math"]
    assert parent_of(triage_span) == parent_of(math_span) == span_id(run)
    chats = by_name["chat gpt-test"]
    assert [parent_of(c) for c in chats] == [span_id(triage_span)] * 2 + [span_id(math_span)]
    attributes: Any = chats[0].attributes
    assert attributes["gen_ai.operation.name"] == "chat"
    assert attributes["gen_ai.request.model"] == "gpt-test"
    assert attributes["gen_ai.provider.name"] == "openai"
    assert (attributes["gen_ai.usage.input_tokens"], attributes["gen_ai.usage.output_tokens"]) == (
        12,
        5,
    )
    [tool] = by_name["execute_tool add"]
    assert parent_of(tool) == span_id(triage_span)
    [hook] = by_name["hook PostToolUse"]
    assert parent_of(hook) == span_id(tool)


async def test_a_plain_runner_run_is_one_trace_too(spans: SpanLedger) -> None:
    model = ScriptedModel([[assistant_message("hi")]])
    agent = Agent(name="solo", model=model)
    bridge = OrchestraRunHooks()

    await Runner.run(bridge.guard(agent), "hello", hooks=bridge)

    names = sorted(span.name for span in spans.finished())
    assert names == ["chat", "invoke_agent solo", "invoke_workflow solo"]
    assert spans.open() == []
    assert len({s.context.trace_id for s in spans.finished() if s.context is not None}) == 1


async def test_spans_continue_the_callers_trace(spans: SpanLedger) -> None:
    import orchestra.tracing

    tracer = orchestra.tracing.get_tracer()
    assert tracer is not None
    agent = Agent(name="solo", model=ScriptedModel([[assistant_message("hi")]]))

    with tracer.start_as_current_span("request") as outer:
        await OrchestraRunHooks().run(agent, "hello", run_config={"workflow_name": "support"})

    run = spans.by_name()["invoke_workflow support"]
    assert run.parent is not None
    assert run.parent.span_id == outer.get_span_context().span_id
