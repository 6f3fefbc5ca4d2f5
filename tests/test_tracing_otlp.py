"""The JSONL exporter writes the OTLP JSON file format; ``read_jsonl`` reads it back."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Link, SpanKind

import orchestra
import orchestra.tracing as ot
from orchestra.tracing import _spans


def to_proto(line: str) -> ExportTraceServiceRequest:
    """One line of the file as the Collector's ``otlpjsonfile`` receiver reads it.

    OTLP/JSON writes ids in hex where protobuf's JSON mapping has base64: turn them back,
    then let protobuf parse the rest (unknown fields are errors).
    """
    request = json.loads(line)

    def b64(holder: dict[str, Any], *keys: str) -> None:
        for key in keys:
            if key in holder:
                holder[key] = base64.b64encode(bytes.fromhex(holder[key])).decode()

    for resource_spans in request["resourceSpans"]:
        for scope_spans in resource_spans["scopeSpans"]:
            for span in scope_spans["spans"]:
                b64(span, "traceId", "spanId", "parentSpanId")
                for link in span.get("links", ()):
                    b64(link, "traceId", "spanId")
    return json_format.ParseDict(request, ExportTraceServiceRequest())


def traced(path: Path, processor: str) -> InMemorySpanExporter:
    """Spans of every shape, written to ``path`` and kept in memory too."""
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "otlp-test"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    jsonl = ot.JsonlSpanExporter(path)
    provider.add_span_processor(
        SimpleSpanProcessor(jsonl) if processor == "simple" else BatchSpanProcessor(jsonl)
    )
    tracer = provider.get_tracer("orchestra", "1.2.3")
    other = provider.get_tracer("other-scope")
    with tracer.start_as_current_span(
        "root",
        kind=SpanKind.SERVER,
        attributes={"i": 1, "f": 0.5, "b": True, "s": "é", "ints": [1, 2], "strs": ["a"]},
    ) as root:
        root.add_event("ev", {"k": "v"})
        with tracer.start_as_current_span(
            "child",
            kind=SpanKind.CLIENT,
            links=[Link(root.get_span_context(), {ot.ATTR_LINK_TYPE: "x"})],
        ) as child:
            _spans.record_error(child, ValueError("boom"))
        with other.start_as_current_span("elsewhere"):
            pass
    provider.shutdown()
    return memory


@pytest.mark.parametrize("processor", ["simple", "batch"])
def test_every_line_parses_back_into_the_request_the_otlp_exporter_sends(
    tmp_path: Path, processor: str
) -> None:
    path = tmp_path / "spans.jsonl"
    memory = traced(path, processor)
    lines = path.read_text(encoding="utf-8").splitlines()
    requests = [to_proto(line) for line in lines]
    if processor == "simple":  # one export, one line, per span
        assert len(lines) == 3
        expected = [encode_spans([span]) for span in memory.get_finished_spans()]
        assert requests == expected
    else:  # one batch: one line, grouped by resource and scope
        assert len(lines) == 1
        (request,) = requests
        assert request == encode_spans(memory.get_finished_spans())
        (resource_spans,) = request.resource_spans
        scopes = {s.scope.name: len(s.spans) for s in resource_spans.scope_spans}
        assert scopes == {"orchestra": 2, "other-scope": 1}


def test_the_file_is_otlp_json(tmp_path: Path) -> None:
    path = tmp_path / "spans.jsonl"
    memory = traced(path, "batch")
    sdk = {s.name: s for s in memory.get_finished_spans()}
    (request,) = map(json.loads, path.read_text().splitlines())
    (resource_spans,) = request["resourceSpans"]
    resource = ot.decode_attributes(resource_spans["resource"]["attributes"])
    assert resource["service.name"] == "otlp-test"
    scope = resource_spans["scopeSpans"][0]
    assert scope["scope"] == {"name": "orchestra", "version": "1.2.3"}
    spans = {s["name"]: s for s in scope["spans"]}
    root, child = spans["root"], spans["child"]
    root_ctx = sdk["root"].get_span_context()
    assert root_ctx is not None
    # ids are lower-case hex, not base64; enums are integers; 64-bit ints are strings
    assert root["traceId"] == f"{root_ctx.trace_id:032x}"
    assert root["spanId"] == f"{root_ctx.span_id:016x}"
    assert "parentSpanId" not in root
    assert child["parentSpanId"] == root["spanId"]
    assert child["links"][0]["spanId"] == root["spanId"]
    assert root["kind"] == 2
    assert child["kind"] == 3
    assert child["status"] == {"code": 2, "message": "ValueError: boom"}
    assert root["startTimeUnixNano"] == str(sdk["root"].start_time)
    assert {"key": "i", "value": {"intValue": "1"}} in root["attributes"]
    assert ot.decode_attributes(root["attributes"]) == {
        "i": 1,
        "f": 0.5,
        "b": True,
        "s": "é",
        "ints": [1, 2],
        "strs": ["a"],
    }
    assert ot.decode_attributes(child["links"][0]["attributes"]) == {ot.ATTR_LINK_TYPE: "x"}
    assert root["events"][0]["name"] == "ev"
    # in the order they ended
    assert [s["name"] for s in ot.read_jsonl(path)] == ["child", "root", "elsewhere"]


def test_a_run_traced_to_a_file_reads_back(tmp_path: Path) -> None:
    dag = orchestra.DAG("etl")

    @dag.task
    def extract() -> int:
        return 1

    @dag.task(deps=[extract])
    def load(extract: int) -> int:
        return extract

    path = tmp_path / "run.jsonl"
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(ot.JsonlSpanExporter(path)))
    ot.set_tracer_provider(provider)
    try:
        result = orchestra.run_sync(dag)
    finally:
        ot.set_tracer_provider(None)
        provider.shutdown()
    for line in path.read_text().splitlines():
        to_proto(line)
    (run,) = [s for s in ot.read_jsonl(path) if s["name"] == "run etl"]
    attrs = ot.decode_attributes(run["attributes"])
    assert attrs[ot.ATTR_RUN_ID] == result.run_id
    assert json.loads(attrs[ot.ATTR_DAG_DEPS]) == {"extract": [], "load": ["extract"]}


def test_read_jsonl_reads_what_the_collector_writes(tmp_path: Path) -> None:
    # A line as the Collector's file exporter writes it: hex ids, fields it sets and we
    # do not (flags, droppedAttributesCount), several resources.
    line = {
        "resourceSpans": [
            {
                "resource": {
                    "attributes": [{"key": "service.name", "value": {"stringValue": "a"}}]
                },
                "scopeSpans": [
                    {
                        "scope": {"name": "s"},
                        "spans": [
                            {
                                "traceId": "5b8efff798038103d269b633813fc60c",
                                "spanId": "eee19b7ec3c1b174",
                                "parentSpanId": "eee19b7ec3c1b173",
                                "flags": 256,
                                "name": "I'm a server span",
                                "kind": 2,
                                "startTimeUnixNano": "1544712660000000000",
                                "endTimeUnixNano": "1544712661000000000",
                                "droppedAttributesCount": 0,
                                "attributes": [{"key": "k", "value": {"intValue": "7"}}],
                                "status": {},
                            }
                        ],
                    }
                ],
            },
            {"resource": {}, "scopeSpans": [{"spans": [{"name": "second", "spanId": "01"}]}]},
        ]
    }
    path = tmp_path / "collector.jsonl"
    path.write_text(json.dumps(line) + "\n\n{}\n")
    spans = ot.read_jsonl(path)
    assert [s["name"] for s in spans] == ["I'm a server span", "second"]
    assert ot.decode_attributes(spans[0]["attributes"]) == {"k": 7}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json\n", r"bad\.jsonl:2: not JSON"),
        ("[1, 2]\n", r"bad\.jsonl:2: not an OTLP JSON trace request"),
        ('{"name": "a span, one per line, as orchestra 0.1 wrote"}\n', r"bad\.jsonl:2: not an"),
        ('{"resourceSpans": {}}\n', r"bad\.jsonl:2: not an OTLP JSON trace request"),
    ],
)
def test_read_jsonl_names_bad_lines(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"resourceSpans": []}\n' + content)
    with pytest.raises(ValueError, match=message):
        ot.read_jsonl(path)


def test_jsonl_exporter_never_raises(tmp_path: Path) -> None:
    jsonl = ot.JsonlSpanExporter(tmp_path / "spans.jsonl")
    (tmp_path / "spans.jsonl").unlink()
    (tmp_path / "spans.jsonl").mkdir()  # now the path cannot be written
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(jsonl))
    with provider.get_tracer("t").start_as_current_span("x"):
        pass
    provider.shutdown()
    assert jsonl.export([]).name == "FAILURE"  # shut down with its processor
    assert ot.JsonlSpanExporter(tmp_path / "other.jsonl").export([]).name == "SUCCESS"
