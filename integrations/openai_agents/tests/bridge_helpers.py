"""Helpers of the bridge's tests: a real SDK run on the SDK's own scripted model, offline."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

from agents import Agent, RunResult, RunResultStreaming
from agents.testing import ScriptedModel
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from orchestra_openai_agents import OrchestraRunHooks

import orchestra.skills


async def drive(
    bridge: OrchestraRunHooks, agent: Agent[Any], input: Any, mode: str, **kwargs: Any
) -> RunResult | RunResultStreaming:
    """Run through ``bridge.run`` or ``bridge.run_streamed`` (consuming every event)."""
    if mode == "run":
        return await bridge.run(agent, input, **kwargs)
    result = await bridge.run_streamed(agent, input, **kwargs)
    async for _ in result.stream_events():
        pass
    return result


def write_config(
    tmp_path: Path, hooks: dict[str, list[dict[str, Any]]]
) -> orchestra.skills.HookRegistry:
    path = tmp_path / "orchestra.yaml"
    path.write_text(json.dumps({"hooks": hooks}))  # JSON is YAML
    return orchestra.skills.load(path)


def log_hook(log: Path, matcher: str | None = None) -> dict[str, Any]:
    """A command hook appending the event JSON it reads on stdin to ``log``."""
    quoted = shlex.quote(str(log))
    group: dict[str, Any] = {
        "hooks": [{"type": "command", "command": f"cat >> {quoted}; echo >> {quoted}"}]
    }
    if matcher is not None:
        group["matcher"] = matcher
    return group


def permission(decision: str, reason: str, matcher: str | None = None) -> dict[str, Any]:
    group: dict[str, Any] = {
        "hooks": [{"type": "permission", "decision": decision, "reason": reason}]
    }
    if matcher is not None:
        group["matcher"] = matcher
    return group


def events(log: Path) -> list[dict[str, Any]]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def names(log: Path) -> list[str]:
    return [event["hook_event_name"] for event in events(log)]


def tool_outputs(model: ScriptedModel) -> dict[str, str]:
    """The tool outputs the SDK sent back to the model, by call id."""
    out: dict[str, str] = {}
    for call in model.calls:
        for item in call.input if isinstance(call.input, list) else ():
            if isinstance(item, dict) and item.get("type") == "function_call_output":
                out[str(item["call_id"])] = str(item["output"])
    return out


class SpanLedger(SpanProcessor):
    """Counts started and ended spans, so a test can check that every span ended."""

    def __init__(self, exporter: InMemorySpanExporter) -> None:
        self.exporter = exporter
        self.started: list[str] = []
        self.ended: list[str] = []

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        self.started.append(span.name)

    def on_end(self, span: ReadableSpan) -> None:
        self.ended.append(span.name)

    def finished(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def by_name(self) -> dict[str, ReadableSpan]:
        return {span.name: span for span in self.finished()}

    def open(self) -> list[str]:
        """Spans started and not ended."""
        left = list(self.started)
        for name in self.ended:
            left.remove(name)
        return left
