"""The tracing layer: switches, provider lookup, carriers, the JSONL exporter, configure()."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from opentelemetry import trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

import orchestra.tracing as ot
from orchestra.tracing import _spans, names

ROOT = Path(__file__).resolve().parent.parent


def test_no_sdk_means_no_tracer() -> None:
    # The global provider of this test process is the API's proxy: nothing records.
    assert isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)
    assert ot.get_tracer() is None
    from orchestra.tracing._state import get_instruments

    assert get_instruments() is None


def test_override_provider_gives_a_tracer(exporter: InMemorySpanExporter) -> None:
    tracer = ot.get_tracer()
    assert tracer is not None
    assert ot.get_tracer() is tracer  # cached per provider
    with tracer.start_as_current_span("x"):
        pass
    assert [s.name for s in exporter.get_finished_spans()] == ["x"]
    assert exporter.get_finished_spans()[0].instrumentation_scope.name == "orchestra"


def test_switch_off_by_argument(exporter: InMemorySpanExporter) -> None:
    ot.set_enabled(False)
    assert not ot.is_enabled()
    assert ot.get_tracer() is None
    ot.set_enabled(None)
    assert ot.get_tracer() is not None


def test_switch_off_by_env(exporter: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch) -> None:
    for value in ("off", "OFF", "0", "false", "no"):
        monkeypatch.setenv(ot.ENV_TRACING, value)
        assert ot.get_tracer() is None
    monkeypatch.setenv(ot.ENV_TRACING, "on")
    assert ot.get_tracer() is not None
    ot.set_enabled(True)  # the argument wins over the environment
    monkeypatch.setenv(ot.ENV_TRACING, "off")
    assert ot.get_tracer() is not None


def test_content_capture_off_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ot.ENV_CAPTURE_CONTENT, raising=False)
    assert not ot.capture_content()
    monkeypatch.setenv(ot.ENV_CAPTURE_CONTENT, "1")
    assert ot.capture_content()
    ot.set_capture_content(False)
    try:
        assert not ot.capture_content()
    finally:
        ot.set_capture_content(None)


def test_inject_env_does_not_touch_os_environ(exporter: InMemorySpanExporter) -> None:
    tracer = ot.get_tracer()
    assert tracer is not None
    before = dict(os.environ)
    with tracer.start_as_current_span("parent") as span:
        env = ot.inject_env({"PATH": "/bin"})
        tp = ot.traceparent()
        ctx = span.get_span_context()
    assert dict(os.environ) == before
    assert "TRACEPARENT" not in os.environ
    assert env["PATH"] == "/bin"
    assert env["TRACEPARENT"].startswith(f"00-{ctx.trace_id:032x}-{ctx.span_id:016x}-")
    assert env["TRACEPARENT"] == tp
    assert ot.traceparent() is None  # no span current any more
    # extract back: the same span context, as a remote parent
    extracted = trace.get_current_span(ot.extract_env(env)).get_span_context()
    assert (extracted.trace_id, extracted.span_id) == (ctx.trace_id, ctx.span_id)
    assert extracted.is_remote


def test_inject_env_without_span_adds_nothing() -> None:
    env = ot.inject_env({"A": "1"})
    assert env == {"A": "1"}
    assert ot.traceparent() is None


def test_tracestate_and_headers(exporter: InMemorySpanExporter) -> None:
    parent = ot.extract_env(
        {
            "TRACEPARENT": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            "TRACESTATE": "vendor=abc",
        }
    )
    tracer = ot.get_tracer()
    assert tracer is not None
    with tracer.start_as_current_span("child", context=parent):
        env = ot.inject_env({})
        headers = ot.inject_headers({"X-Other": "1"})
        tp = ot.traceparent()
    assert env["TRACEPARENT"].startswith("00-0af7651916cd43dd8448eb211c80319c-")
    assert env["TRACESTATE"] == "vendor=abc"
    assert headers["traceparent"] == env["TRACEPARENT"] == tp
    assert headers["tracestate"] == "vendor=abc"
    assert headers["X-Other"] == "1"
    child = exporter.get_finished_spans()[0]
    assert child.parent is not None
    assert child.parent.span_id == 0xB7AD6B7169203331


def test_decision_and_hook_helpers(exporter: InMemorySpanExporter) -> None:
    from orchestra import Retry

    reader = InMemoryMetricReader()
    ot.set_meter_provider(MeterProvider(metric_readers=[reader]))
    try:
        tracer = ot.get_tracer()
        assert tracer is not None
        with _spans.hook_span(
            tracer, "on_failure", hook_type="python", name="Policy", subject="t"
        ) as span:
            _spans.record_decision(span, Retry(2.0), "Policy.on_failure", attempt=1)
        with pytest.raises(KeyError), _spans.hook_span(tracer, "x", hook_type="python", name="H"):
            raise KeyError("k")
        metrics = reader.get_metrics_data()
    finally:
        ot.set_meter_provider(None)
    hook, failed = exporter.get_finished_spans()
    assert hook.name == "hook on_failure"
    assert dict(hook.attributes or {}) == {
        ot.ATTR_HOOK_EVENT: "on_failure",
        ot.ATTR_HOOK_TYPE: "python",
        ot.ATTR_HOOK_NAME: "Policy",
        ot.ATTR_HOOK_SUBJECT: "t",
        ot.ATTR_DECISION: "retry",
        ot.ATTR_DECISION_BY: "Policy.on_failure",
        ot.ATTR_DECISION_DELAY: 2.0,
    }
    assert hook.events[0].name == ot.EVENT_DECISION
    assert dict(hook.events[0].attributes or {})[ot.ATTR_DECISION_ATTEMPT] == 1
    assert failed.status.status_code is StatusCode.ERROR
    assert failed.events[0].name == "exception"
    assert metrics is not None
    names = {
        m.name for rm in metrics.resource_metrics for sm in rm.scope_metrics for m in sm.metrics
    }
    assert names == {ot.METRIC_HOOK_DURATION, ot.METRIC_DECISIONS}


def test_content_capture_on_agent_and_tool_spans(exporter: InMemorySpanExporter) -> None:
    tracer = ot.get_tracer()
    assert tracer is not None
    for capture in (False, True):
        ot.set_capture_content(capture)
        with _spans.agent_span(
            tracer, "writer", task="secret prompt", mode="sync", parent=None, attempt=1
        ) as span:
            _spans.set_agent_output(span, "secret output")
        with _spans.tool_span(tracer, "Bash", arguments={"command": "ls"}) as span:
            _spans.set_tool_result(span, {"out": "secret"})
    off_agent, off_tool, on_agent, on_tool = exporter.get_finished_spans()
    assert off_agent.name == "invoke_agent writer"
    assert off_agent.attributes is not None
    assert off_tool.attributes is not None
    assert off_agent.attributes[ot.GEN_AI_OPERATION_NAME] == "invoke_agent"
    assert off_agent.attributes[ot.GEN_AI_AGENT_NAME] == "writer"
    assert off_tool.name == "execute_tool Bash"
    assert off_tool.attributes[ot.GEN_AI_TOOL_NAME] == "Bash"
    assert off_tool.attributes[ot.GEN_AI_OPERATION_NAME] == "execute_tool"
    for span in (off_agent, off_tool):
        assert "secret" not in json.dumps(dict(span.attributes or {}))
        assert "ls" not in json.dumps(dict(span.attributes or {}))
    assert "secret prompt" in str((on_agent.attributes or {})[ot.GEN_AI_INPUT_MESSAGES])
    assert "secret output" in str((on_agent.attributes or {})[ot.GEN_AI_OUTPUT_MESSAGES])
    assert json.loads(str((on_tool.attributes or {})[ot.GEN_AI_TOOL_CALL_ARGUMENTS])) == {
        "command": "ls"
    }


def test_configure_installs_global_provider_in_a_subprocess(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    script = textwrap.dedent(
        f"""
        import orchestra.tracing as ot
        from opentelemetry import trace
        assert ot.get_tracer() is None
        provider = ot.configure(jsonl={str(out)!r})
        assert trace.get_tracer_provider() is provider
        with ot.get_tracer().start_as_current_span("hello"):
            pass
        # configure() again reuses the global SDK provider instead of replacing it
        assert ot.configure() is provider
        """
    )
    subprocess.run([sys.executable, "-c", script], check=True, cwd=ROOT, timeout=60)
    assert [s["name"] for s in ot.read_jsonl(out)] == ["hello"]


def test_name_constants_are_namespaced() -> None:
    for name in names.__all__:
        if name.startswith("ATTR_") or name.startswith("METRIC_") or name.startswith("EVENT_"):
            value = getattr(names, name)
            assert value.startswith(("orchestra.", "error.", "process.")), name
        if name.startswith("GEN_AI_"):
            assert getattr(names, name).startswith("gen_ai."), name


def test_reference_page_lists_every_name() -> None:
    page = (ROOT / "docs" / "reference" / "tracing-attributes.md").read_text()
    for name in names.__all__:
        assert f"`{getattr(names, name)}`" in page, name
        assert f"`{name}`" in page, name


def test_public_names() -> None:
    assert len(set(ot.__all__)) == len(ot.__all__)
    for name in ot.__all__:
        obj = getattr(ot, name)
        if callable(obj):
            assert obj.__doc__, name
            if name != "JsonlSpanExporter":  # loaded lazily, with the SDK
                assert obj.__module__ == "orchestra.tracing", name
