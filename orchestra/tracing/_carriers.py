"""Context carriers: the current trace context into and out of env vars and headers.

Environment variables follow the OpenTelemetry environment-carrier specification: the
W3C names upper-cased (``TRACEPARENT``, ``TRACESTATE``, ``BAGGAGE``), written into a new
dict handed to a child process, never into ``os.environ``. HTTP headers use the W3C
names (``traceparent``, ``tracestate``). Both go through the globally configured text-map
propagator (W3C trace context and baggage by default).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, MutableMapping
from types import ModuleType

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.propagators.textmap import Getter, Setter

__all__ = ["extract_env", "inject_env", "inject_headers", "traceparent"]


class _EnvSetter(Setter[MutableMapping[str, str]]):
    def set(self, carrier: MutableMapping[str, str], key: str, value: str) -> None:
        carrier[key.upper()] = value


class _EnvGetter(Getter[Mapping[str, str]]):
    def get(self, carrier: Mapping[str, str], key: str) -> list[str] | None:
        value = carrier.get(key.upper())
        return None if value is None else [value]

    def keys(self, carrier: Mapping[str, str]) -> list[str]:
        return [k.lower() for k in carrier]


_ENV_SETTER = _EnvSetter()
_ENV_GETTER = _EnvGetter()


def _propagate() -> ModuleType:
    """``opentelemetry.propagate``, imported when first used (it reads entry points: ~7 ms)."""
    from opentelemetry import propagate

    return propagate


def inject_env(
    env: Mapping[str, str] | None = None, *, context: otel_context.Context | None = None
) -> dict[str, str]:
    """Return a copy of ``env`` with the trace context as ``TRACEPARENT``/``TRACESTATE``.

    Hand the result to a child process (``subprocess.run(..., env=...)``) so it can
    continue the trace. ``os.environ`` is never modified.

    Args:
        env: the environment to start from (default: a copy of ``os.environ``).
        context: the context to inject (default: the current one). With no valid span in
            it, the copy is returned without trace variables added.
    """
    out = dict(os.environ if env is None else env)
    _propagate().inject(out, context=context, setter=_ENV_SETTER)
    return out


def extract_env(env: Mapping[str, str] | None = None) -> otel_context.Context:
    """The trace context a parent process passed in ``TRACEPARENT``/``TRACESTATE``.

    Use it in a hook script or a process started by one, to continue the trace::

        ctx = orchestra.tracing.extract_env()
        with tracer.start_as_current_span("my step", context=ctx):
            ...

    Args:
        env: the environment to read (default: ``os.environ``).
    """
    extracted: otel_context.Context = _propagate().extract(
        os.environ if env is None else env, getter=_ENV_GETTER
    )
    return extracted


def inject_headers(
    headers: Mapping[str, str] | None = None, *, context: otel_context.Context | None = None
) -> dict[str, str]:
    """Return a copy of ``headers`` with the W3C ``traceparent``/``tracestate`` headers.

    Args:
        headers: the headers to start from (default: none).
        context: the context to inject (default: the current one).
    """
    out = dict(headers or {})
    _propagate().inject(out, context=context)
    return out


def traceparent(context: otel_context.Context | None = None) -> str | None:
    """The W3C ``traceparent`` of the current (or given) span, or None if there is none."""
    span_context = trace.get_current_span(context).get_span_context()
    if not span_context.is_valid:
        return None
    return (
        f"00-{span_context.trace_id:032x}-{span_context.span_id:016x}-"
        f"{int(span_context.trace_flags):02x}"
    )
