"""Hook, agent and tool spans inside a run, and the trace context in real hook processes."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import orchestra
import orchestra.tracing as ot
from orchestra import (
    DAG,
    Delegate,
    Dispatcher,
    Subagent,
    SubagentHookContext,
    SubagentHooks,
    ToolDenied,
)
from orchestra.agents import AgentContext
from orchestra.skills import load

pytestmark = pytest.mark.anyio


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def sid(span: ReadableSpan) -> int:
    ctx = span.get_span_context()
    assert ctx is not None
    return ctx.span_id


def tid(span: ReadableSpan) -> int:
    ctx = span.get_span_context()
    assert ctx is not None
    return ctx.trace_id


def parent(span: ReadableSpan, spans: tuple[ReadableSpan, ...]) -> ReadableSpan:
    assert span.parent is not None
    return next(s for s in spans if sid(s) == span.parent.span_id)  # type: ignore[union-attr]


async def test_traceparent_reaches_a_real_command_hook_process(
    tmp_path: Path, exporter: InMemorySpanExporter
) -> None:
    (tmp_path / "orchestra.yaml").write_text(
        "hooks:\n"
        "  TaskCreated:\n"
        "    - hooks:\n"
        "        - type: command\n"
        # a real process: writes the env var it got, and its stdin JSON
        "          command: 'printf %s \"$TRACEPARENT\" > traceparent.txt; cat > stdin.json'\n"
    )
    registry = load(tmp_path / "orchestra.yaml", project_dir=tmp_path)
    dag = DAG("hooked")
    dag.task(lambda: 1, id="a")
    result = await orchestra.run(dag, hooks=[registry.as_task_hooks()])
    assert result.ok
    spans = exporter.get_finished_spans()
    (run,) = [s for s in spans if s.name == "run hooked"]
    (hook,) = [s for s in spans if s.name == "hook TaskCreated"]
    assert tid(hook) == tid(run)
    # hook span -> python adapter's hook span -> task span -> run span
    assert parent(parent(hook, spans), spans).name == "task a"
    assert attrs(hook)[ot.ATTR_HOOK_TYPE] == "command"
    assert attrs(hook)[ot.ATTR_PROCESS_EXIT_CODE] == 0
    assert str(attrs(hook)[ot.ATTR_HOOK_SOURCE]).endswith("orchestra.yaml:4")
    version, trace_id, span_id, _flags = (tmp_path / "traceparent.txt").read_text().split("-")
    assert version == "00"
    assert int(trace_id, 16) == tid(run)
    assert int(span_id, 16) == sid(hook)  # the hook process continues from its own span
    stdin = json.loads((tmp_path / "stdin.json").read_text())
    assert stdin["traceparent"] == (tmp_path / "traceparent.txt").read_text()
    assert stdin["hook_event_name"] == "TaskCreated"


class _Recorder(BaseHTTPRequestHandler):
    seen: list[dict[str, str]] = []  # noqa: RUF012  # one list per test server class

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        type(self).seen.append({k.lower(): v for k, v in self.headers.items()})
        body = b"{}"
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


async def test_http_hook_gets_w3c_headers(tmp_path: Path, exporter: InMemorySpanExporter) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    _Recorder.seen = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        (tmp_path / "orchestra.yaml").write_text(
            "hooks:\n"
            "  Notification:\n"
            "    - hooks:\n"
            "        - type: http\n"
            f"          url: http://127.0.0.1:{server.server_port}/hook\n"
            "          tls: 'off'\n"
            "          allow_private_network: true\n"  # the test server is on loopback
        )
        registry = load(tmp_path / "orchestra.yaml", project_dir=tmp_path)
        tracer = ot.get_tracer()
        assert tracer is not None
        with tracer.start_as_current_span("caller"):
            await registry.fire("Notification", {"message": "hi"})
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)
    spans = exporter.get_finished_spans()
    (hook,) = [s for s in spans if s.name == "hook Notification"]
    (headers,) = _Recorder.seen
    _, trace_id, span_id, _ = headers["traceparent"].split("-")
    assert int(trace_id, 16) == tid(hook)
    assert int(span_id, 16) == sid(hook)


class Busy(Subagent):
    name = "busy"

    async def run(self, task: str, ctx: AgentContext) -> str:
        raise RuntimeError("busy")


class Fallback(Subagent):
    name = "fallback"

    def __init__(self, tools: dict[str, Any]) -> None:
        self.tools = tools

    async def run(self, task: str, ctx: AgentContext) -> str:
        out = await self.tools["Bash"](command="ls")
        try:
            await self.tools["Bash"](command="rm -rf /")
        except ToolDenied:
            out += " (rm refused)"
        return out


class Router(SubagentHooks):
    def on_failure(self, ctx: SubagentHookContext, error: BaseException) -> Delegate | None:
        return Delegate("fallback", "busy") if ctx.subagent_name == "busy" else None


async def test_agent_and_tool_spans_inside_a_task(
    tmp_path: Path, exporter: InMemorySpanExporter
) -> None:
    (tmp_path / "orchestra.yaml").write_text(
        "hooks:\n"
        "  PreToolUse:\n"
        "    - matcher: Bash\n"
        "      hooks:\n"
        "        - type: command\n"
        "          command: \"grep -q 'rm -rf' && { echo no >&2; exit 2; }; exit 0\"\n"
    )
    registry = load(tmp_path / "orchestra.yaml", project_dir=tmp_path)

    async def bash(command: str) -> str:
        return f"ran {command}"

    tools: dict[str, Any] = {"Bash": registry.guard("Bash")(bash)}
    dag = DAG("agents")
    dag.task(lambda: "secret task text", id="work", agent="busy")
    async with Dispatcher([Busy(), Fallback(tools)], hooks=[Router()]) as dispatcher:
        result = await orchestra.run(dag, dispatcher=dispatcher)
    assert result.ok, result.errors
    spans = exporter.get_finished_spans()
    (run,) = [s for s in spans if s.name == "run agents"]
    assert {tid(s) for s in spans} == {tid(run)}
    (task,) = [s for s in spans if s.name == "task work"]
    assert attrs(task)[ot.ATTR_TASK_EXECUTOR] == "busy"
    (busy,) = [s for s in spans if s.name == "invoke_agent busy"]
    (fallback,) = [s for s in spans if s.name == "invoke_agent fallback"]
    assert parent(busy, spans) is task
    assert parent(fallback, spans) is task
    assert attrs(busy)[ot.GEN_AI_OPERATION_NAME] == "invoke_agent"
    assert attrs(busy)[ot.GEN_AI_AGENT_NAME] == "busy"
    assert attrs(busy)[ot.ATTR_DECISION] == "delegate"
    assert attrs(busy)[ot.ATTR_DECISION_BY] == "Router.on_failure"
    assert attrs(fallback)[ot.ATTR_AGENT_DELEGATED_FROM] == ("busy",)
    tools_spans = [s for s in spans if s.name == "execute_tool Bash"]
    assert [parent(s, spans) for s in tools_spans] == [fallback, fallback]
    assert [attrs(s)[ot.ATTR_TOOL_DECISION] for s in tools_spans] == ["allow", "deny"]
    denied = tools_spans[1]
    (guard,) = [s for s in spans if s.parent is not None and parent(s, spans) is denied]
    assert guard.name == "hook PreToolUse"
    assert attrs(guard)[ot.ATTR_DECISION] == "block"
    assert attrs(guard)[ot.ATTR_PROCESS_EXIT_CODE] == 2
    # content capture is off by default
    dumped = json.dumps([attrs(s) for s in spans], default=str)
    assert "secret task text" not in dumped
    assert "rm -rf" not in dumped


async def test_content_capture_opt_in(tmp_path: Path, exporter: InMemorySpanExporter) -> None:
    (tmp_path / "orchestra.yaml").write_text(
        "hooks:\n"
        "  PreToolUse:\n"
        "    - matcher: Bash\n"
        "      hooks:\n"
        "        - type: command\n"
        '          command: \'echo \'\'{"decision": "allow", "reason": "fine"}\'\'\'\n'
    )
    registry = load(tmp_path / "orchestra.yaml", project_dir=tmp_path)

    @registry.guard("Bash")
    async def bash(command: str) -> str:
        return f"ran {command}"

    await bash(command="ls -la")
    ot.set_capture_content(True)
    await bash(command="ls -la")
    off_hook, off_tool, on_hook, on_tool = exporter.get_finished_spans()
    assert ot.ATTR_HOOK_OUTPUT not in attrs(off_hook)
    assert ot.GEN_AI_TOOL_CALL_ARGUMENTS not in attrs(off_tool)
    assert ot.GEN_AI_TOOL_CALL_RESULT not in attrs(off_tool)
    output = json.loads(attrs(on_hook)[ot.ATTR_HOOK_OUTPUT])
    assert (output["decision"], output["reason"]) == ("allow", "fine")
    assert json.loads(attrs(on_tool)[ot.GEN_AI_TOOL_CALL_ARGUMENTS]) == {"command": "ls -la"}
    assert json.loads(attrs(on_tool)[ot.GEN_AI_TOOL_CALL_RESULT]) == "ran ls -la"
