"""OpenTelemetry tracing of runs, task attempts, hook calls, subagents and guarded tools.

orchestra uses the OpenTelemetry API only and never installs a tracer provider by
itself: configure one (``configure(jsonl="out.jsonl")``, the ``orchestra`` CLI's
``--trace``/``--otlp``, or your own SDK setup) and every run becomes one trace::

    run {dag}                       the run
    ├── task {id}                   one span per task attempt (retries link back)
    │   ├── hook {event}            one span per hook call, with its decision
    │   └── invoke_agent {name}     one span per subagent dispatch (GenAI conventions)
    │       └── execute_tool {name} one span per guarded tool call

Whether tracing is on is decided per run, never at import time, so a provider installed
after ``import orchestra`` is used. With no SDK provider installed, or with tracing
switched off (``ORCHESTRA_TRACING=off`` or ``set_enabled(False)``), a run skips all span
work. Payload content stays off spans unless you opt in (``capture_content=True`` or
``ORCHESTRA_CAPTURE_CONTENT=1``). Every span, attribute, event and metric name is a
constant in ``orchestra.tracing.names``. An integration that starts its own spans puts
decisions and errors on them with ``record_decision`` and ``record_error``, as orchestra's
engines do; ``orchestra.tracing.testing.recording()`` records spans in a test.
"""

import typing as _typing

from orchestra._exports import export as _export
from orchestra._exports import lazy as _lazy
from orchestra.tracing import names as names
from orchestra.tracing._carriers import extract_env as extract_env
from orchestra.tracing._carriers import inject_env as inject_env
from orchestra.tracing._carriers import inject_headers as inject_headers
from orchestra.tracing._carriers import traceparent as traceparent
from orchestra.tracing._spans import record_decision as record_decision
from orchestra.tracing._spans import record_error as record_error
from orchestra.tracing._state import ENV_CAPTURE_CONTENT as ENV_CAPTURE_CONTENT
from orchestra.tracing._state import ENV_TRACING as ENV_TRACING
from orchestra.tracing._state import capture_content as capture_content
from orchestra.tracing._state import get_tracer as get_tracer
from orchestra.tracing._state import is_enabled as is_enabled
from orchestra.tracing._state import set_capture_content as set_capture_content
from orchestra.tracing._state import set_enabled as set_enabled
from orchestra.tracing._state import set_meter_provider as set_meter_provider
from orchestra.tracing._state import set_tracer_provider as set_tracer_provider

if _typing.TYPE_CHECKING:
    from orchestra.tracing._configure import configure as configure
    from orchestra.tracing._jsonl import JsonlSpanExporter as JsonlSpanExporter
    from orchestra.tracing._otlp_json import decode_attributes as decode_attributes
    from orchestra.tracing._otlp_json import read_jsonl as read_jsonl

__all__ = [
    "ENV_CAPTURE_CONTENT",
    "ENV_TRACING",
    "JsonlSpanExporter",
    "capture_content",
    "configure",
    "decode_attributes",
    "extract_env",
    "get_tracer",
    "inject_env",
    "inject_headers",
    "is_enabled",
    "names",
    "read_jsonl",
    "record_decision",
    "record_error",
    "set_capture_content",
    "set_enabled",
    "set_meter_provider",
    "set_tracer_provider",
    "traceparent",
]


# Loaded when first used: the exporter needs the OpenTelemetry SDK, configure() and the
# file reader are needed by some programs only (``import orchestra`` stays light).
_load = _lazy(
    globals(),
    {
        "JsonlSpanExporter": "orchestra.tracing._jsonl",
        "configure": "orchestra.tracing._configure",
        "decode_attributes": "orchestra.tracing._otlp_json",
        "read_jsonl": "orchestra.tracing._otlp_json",
    },
)


def __getattr__(name: str) -> _typing.Any:
    # The name constants moved to orchestra.tracing.names; the old spelling still reads.
    if name in names.__all__:
        return getattr(names, name)
    return _load(name)


_export(globals())
