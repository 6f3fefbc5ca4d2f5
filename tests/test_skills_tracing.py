"""Skills hooks under tracing: a span per hook call and per guarded tool, TRACEPARENT."""

from __future__ import annotations

from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import orchestra.tracing as ot
from orchestra import DAG, ToolDenied, run
from orchestra.skills import HookRegistry, PermissionHook, load

pytestmark = pytest.mark.anyio


async def test_hook_span_and_traceparent_reach_the_command(
    tmp_path: Path, spans: InMemorySpanExporter
) -> None:
    config = tmp_path / "orchestra.yaml"
    config.write_text(
        "hooks:\n  PreToolUse:\n    - matcher: Bash\n      hooks:\n"
        "        - type: command\n"
        "          command: 'printf %s \"$TRACEPARENT\" > tp; echo no >&2; exit 2'\n"
    )
    registry = load(config, project_dir=tmp_path)

    @registry.guard("Bash")
    def bash(command: str) -> str:
        return command

    with pytest.raises(ToolDenied):
        await bash("rm -rf /")
    hook, tool = spans.get_finished_spans()
    assert hook.name == "hook PreToolUse"
    assert hook.attributes is not None
    assert hook.attributes[ot.ATTR_HOOK_SOURCE] == f"{config}:5"
    assert hook.attributes[ot.ATTR_HOOK_TYPE] == "command"
    assert hook.attributes[ot.ATTR_HOOK_SUBJECT] == "Bash"
    assert hook.attributes[ot.ATTR_DECISION] == "block"
    assert tool.name == "execute_tool Bash"
    assert tool.attributes is not None
    assert tool.attributes[ot.ATTR_TOOL_DECISION] == "deny"
    assert hook.parent is not None
    assert hook.parent.span_id == tool.context.span_id
    trace_id, span_id = (tmp_path / "tp").read_text().split("-")[1:3]
    assert (int(trace_id, 16), int(span_id, 16)) == (hook.context.trace_id, hook.context.span_id)


async def test_hook_error_is_recorded_on_its_span(
    tmp_path: Path, spans: InMemorySpanExporter
) -> None:
    config = tmp_path / "orchestra.yaml"
    config.write_text("hooks:\n  Stop:\n    - hooks: [{type: command, command: 'exit 3'}]\n")
    outcome = await load(config, project_dir=tmp_path).fire("Stop", {})
    assert outcome.records[0].error == "exited 3"
    (span,) = spans.get_finished_spans()
    assert span.attributes is not None
    assert span.attributes[ot.ATTR_ERROR_TYPE] == "HookRunError"
    assert not span.status.is_ok


async def test_fire_follows_the_tracing_switch(
    spans: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    # fire does not read the environment per event: it takes get_tracer()'s last answer,
    # taken again after each change through orchestra.tracing and at each run.
    registry = HookRegistry([PermissionHook(event="PreToolUse", decision="allow")])

    async def fired() -> int:
        await registry.fire("PreToolUse", {"tool_name": "Bash"})
        return len(spans.get_finished_spans())

    assert await fired() == 1
    ot.set_enabled(False)
    assert await fired() == 1
    ot.set_enabled(None)
    assert await fired() == 2
    ot.set_tracer_provider(None)  # the global provider: the API's proxy, records nothing
    assert await fired() == 2
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    ot.set_tracer_provider(provider)
    assert await fired() == 3
    monkeypatch.setenv(ot.ENV_TRACING, "off")
    dag = DAG("switch")
    dag.task(lambda: 1, id="a")
    await run(dag)  # asks get_tracer(), which reads the environment
    assert await fired() == 3
    monkeypatch.delenv(ot.ENV_TRACING)
    assert ot.get_tracer() is not None
    assert await fired() == 4
    provider.shutdown()
