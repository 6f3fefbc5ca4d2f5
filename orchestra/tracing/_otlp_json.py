"""The OTLP JSON file format: encoding finished spans, and reading such a file back.

One line is one ``ExportTraceServiceRequest`` (``resourceSpans`` -> ``scopeSpans`` ->
``spans``), as the OpenTelemetry Collector's file exporter writes and its
``otlpjsonfile`` receiver reads. The spans are encoded by the OTLP exporter's own encoder
(``opentelemetry-exporter-otlp-proto-common``) into the official ``opentelemetry-proto``
messages, then by protobuf's JSON mapping. OTLP/JSON differs from that mapping in two
ways, both applied here: trace and span ids are hex strings (not base64), and enums are
integers.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )
    from opentelemetry.sdk.trace import ReadableSpan

__all__ = [
    "decode_attributes",
    "encode_request",
    "read_jsonl",
    "read_requests",
    "request_json",
    "spans_of",
]

# The fields that hold ids (bytes in the proto messages, hex in OTLP/JSON).
_SPAN_IDS = ("traceId", "spanId", "parentSpanId")
_LINK_IDS = ("traceId", "spanId")


def _hex(ids: dict[str, Any], keys: Sequence[str]) -> None:
    for key in keys:
        value = ids.get(key)
        if value:
            ids[key] = base64.b64decode(value).hex()


def encode_request(spans: Sequence[ReadableSpan]) -> dict[str, Any]:
    """Finished spans as one OTLP/JSON ``ExportTraceServiceRequest`` object.

    Spans are grouped by resource and instrumentation scope, as an OTLP exporter sends
    them.
    """
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    return request_json(encode_spans(spans))


def request_json(request: ExportTraceServiceRequest) -> dict[str, Any]:
    """An ``ExportTraceServiceRequest`` message as its OTLP/JSON object (ids in hex)."""
    from google.protobuf.json_format import MessageToDict

    body: dict[str, Any] = MessageToDict(request, use_integers_for_enums=True)
    for resource_spans in body.get("resourceSpans", ()):
        for scope_spans in resource_spans.get("scopeSpans", ()):
            for span in scope_spans.get("spans", ()):
                _hex(span, _SPAN_IDS)
                for link in span.get("links", ()):
                    _hex(link, _LINK_IDS)
    return body


def _decode_value(value: Mapping[str, Any]) -> Any:
    if "stringValue" in value:
        return value["stringValue"]
    if "boolValue" in value:
        return bool(value["boolValue"])
    if "intValue" in value:
        return int(value["intValue"])
    if "doubleValue" in value:
        return float(value["doubleValue"])
    if "arrayValue" in value:
        return [_decode_value(v) for v in value["arrayValue"].get("values", [])]
    if "bytesValue" in value:
        return base64.b64decode(value["bytesValue"])
    if "kvlistValue" in value:
        return decode_attributes(value["kvlistValue"].get("values", []))
    return None


def decode_attributes(attributes: Iterable[Mapping[str, Any]] | None) -> dict[str, Any]:
    """An OTLP/JSON key/value list (a span's ``attributes``) back to a plain dict."""
    return {item["key"]: _decode_value(item.get("value", {})) for item in attributes or ()}


def read_requests(path: str | Path) -> Iterator[dict[str, Any]]:
    """The ``ExportTraceServiceRequest`` objects of an OTLP JSON file, one per line.

    Blank lines are skipped.

    Raises:
        ValueError: for a line that is not an OTLP/JSON trace request, naming the file
            and line.
    """
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                request = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{lineno}: not JSON: {exc.msg}") from None
            if not isinstance(request, dict) or not (
                isinstance(request.get("resourceSpans"), list) or request == {}
            ):
                raise ValueError(
                    f"{path}:{lineno}: not an OTLP JSON trace request "
                    "(an object with 'resourceSpans')"
                )
            yield request


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """Read an OTLP JSON trace file (``configure(jsonl=...)``): every span, in file order.

    Each span is an OTLP/JSON ``Span`` object (``traceId``, ``spanId``,
    ``parentSpanId``, ``name``, ``startTimeUnixNano``, ``attributes``...; ids in hex),
    whatever resource and scope it was sent under. Files written by the OpenTelemetry
    Collector's file exporter read the same way.

    Raises:
        ValueError: for a line that is not an OTLP/JSON trace request, naming the file
            and line.
    """
    return [span for request in read_requests(path) for span in spans_of(request)]


def spans_of(request: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """The spans of one OTLP/JSON ``ExportTraceServiceRequest``, whatever their resource."""
    for resource_spans in request.get("resourceSpans") or ():
        for scope_spans in resource_spans.get("scopeSpans") or ():
            yield from scope_spans.get("spans") or ()
