"""OTLP-JSON encoding of attribute values, and reading a JSONL span file back.

The field names are those of the OTLP/JSON protobuf mapping (``traceId``, ``spanId``,
``parentSpanId``, ``startTimeUnixNano``, attributes as ``{"key", "value": {"stringValue":
...}}`` lists); ids are lower-case hex and 64-bit integers are strings, as OTLP/JSON says.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["decode_attributes", "encode_attributes", "encode_value", "read_jsonl"]


def encode_value(value: Any) -> dict[str, Any]:
    """One attribute value as an OTLP ``AnyValue``."""
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, str):
        return {"stringValue": value}
    if isinstance(value, bytes):
        return {"bytesValue": base64.b64encode(value).decode("ascii")}
    if isinstance(value, Sequence):
        return {"arrayValue": {"values": [encode_value(v) for v in value]}}
    return {"stringValue": str(value)}


def encode_attributes(attributes: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """Attributes as an OTLP key/value list."""
    if not attributes:
        return []
    return [{"key": key, "value": encode_value(value)} for key, value in attributes.items()]


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
    """An OTLP key/value list (as in a JSONL span line) back to a plain dict."""
    return {item["key"]: _decode_value(item.get("value", {})) for item in attributes or ()}


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """Read a JSONL span file: one OTLP-JSON span per line, blank lines skipped.

    Raises:
        ValueError: for a line that is not a JSON object, naming the file and line.
    """
    spans: list[dict[str, Any]] = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                span = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{lineno}: not a JSON span: {exc.msg}") from None
            if not isinstance(span, dict):
                raise ValueError(f"{path}:{lineno}: not a JSON span object")
            spans.append(span)
    return spans
