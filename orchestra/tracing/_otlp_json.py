"""The OTLP JSON file format: encoding finished spans, and reading such a file back.

One line is one ``ExportTraceServiceRequest`` (``resourceSpans`` -> ``scopeSpans`` ->
``spans``), as the OpenTelemetry Collector's file exporter writes and its
``otlpjsonfile`` receiver reads. The spans are encoded by OpenTelemetry's own OTLP/JSON
encoder (``opentelemetry-exporter-otlp-json-common``, the one its JSON exporters use:
ids in hex, enums as integers, 64-bit integers as strings), never by a copy of it here.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan

__all__ = [
    "decode_attributes",
    "encode_request",
    "read_jsonl",
    "read_requests",
    "spans_of",
]


def encode_request(spans: Sequence[ReadableSpan]) -> dict[str, Any]:
    """Finished spans as one OTLP/JSON ``ExportTraceServiceRequest`` object.

    Spans are grouped by resource and instrumentation scope, as an OTLP exporter sends
    them.
    """
    from opentelemetry.exporter.otlp.json.common.trace_encoder import encode_spans

    return encode_spans(spans).to_dict()


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
