"""Whether tracing is on, which provider records it, and whether content is captured.

Nothing here is decided at import time: the user's tracer provider may be installed after
``import orchestra``. Engines call ``get_tracer()`` once per run (or dispatch, or hook
chain); it returns None, after a few attribute lookups, when nothing would record a span:
tracing switched off, or the global provider is still the API's proxy/no-op provider.
Engines then skip all span work for that run behind one boolean.

A path taken once per event (``HookRegistry.fire``) asks ``last_tracer()`` instead: the
last answer of ``get_tracer()``, kept until the next call of ``get_tracer()`` (each run,
dispatch and guarded tool call asks it) or a change through this module
(``set_enabled``, ``set_tracer_provider``, ``configure``), without reading the
environment or the global provider on each event.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Final, Generic, TypeVar, final

from opentelemetry import metrics, trace

from orchestra.tracing import names as n

__all__ = [
    "ENV_CAPTURE_CONTENT",
    "ENV_TRACING",
    "Instruments",
    "capture_content",
    "forget_tracer",
    "get_instruments",
    "get_tracer",
    "is_enabled",
    "last_tracer",
    "set_capture_content",
    "set_enabled",
    "set_meter_provider",
    "set_tracer_provider",
]

ENV_TRACING: Final = "ORCHESTRA_TRACING"
"""Environment variable: ``off`` (or ``0``, ``false``, ``no``) switches tracing off."""
ENV_CAPTURE_CONTENT: Final = "ORCHESTRA_CAPTURE_CONTENT"
"""Environment variable: ``1`` (or ``true``, ``yes``, ``on``) puts payload content on spans."""

_OFF: Final = frozenset({"off", "0", "false", "no", "disabled", "none"})
_ON: Final = frozenset({"on", "1", "true", "yes", "enabled"})
_NOOP_TRACER_PROVIDERS: Final = (trace.ProxyTracerProvider, trace.NoOpTracerProvider)
_NOOP_METER_PROVIDERS: Final = frozenset({"_ProxyMeterProvider", "NoOpMeterProvider"})
_SCOPE: Final = "orchestra"
_VERSION: Final = "0.1.0"
_P = TypeVar("_P")
_T = TypeVar("_T")


@final
class _Made(Generic[_P, _T]):
    """What was made from a provider (a tracer, the instruments), cached per provider.

    The provider is the one set for orchestra, else the global one; nothing is made from
    a provider that records nothing.
    """

    __slots__ = ("_global", "_idle", "_make", "cached", "provider")

    def __init__(
        self,
        global_provider: Callable[[], _P],
        idle: Callable[[_P], bool],
        make: Callable[[_P], _T],
    ) -> None:
        self._global = global_provider
        self._idle = idle
        self._make = make
        self.provider: _P | None = None  # set for orchestra (None: the global one)
        self.cached: tuple[_P, _T] | None = None

    def set(self, provider: _P | None) -> None:
        """Use ``provider`` from now on (None: the global one); forget what was made."""
        self.provider = provider
        self.cached = None

    def get(self) -> _T | None:
        """What the provider in use gives, made once; None if it records nothing."""
        provider = self.provider
        if provider is None:
            provider = self._global()
        cached = self.cached
        if cached is not None and cached[0] is provider:
            return cached[1]
        if self._idle(provider):
            return None
        made = self._make(provider)
        self.cached = (provider, made)
        return made


@final
class _Settings:
    __slots__ = ("capture", "enabled", "last")

    def __init__(self) -> None:
        self.enabled: bool | None = None
        self.capture: bool | None = None
        # get_tracer()'s last answer, in a tuple (None: ask it again)
        self.last: tuple[trace.Tracer | None] | None = None


_settings: Final = _Settings()


def _env_flag(name: str, *, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    value = value.strip().lower()
    return value not in _OFF if default else value in _ON


def set_enabled(enabled: bool | None) -> None:
    """Switch orchestra's tracing and metrics on or off for this process.

    Args:
        enabled: False switches them off whatever provider is installed, True switches
            them on (spans are still only made when a provider records them), None goes
            back to the ``ORCHESTRA_TRACING`` environment variable (on unless ``off``).
    """
    _settings.enabled = enabled
    _settings.last = None


def is_enabled() -> bool:
    """Whether orchestra's tracing is switched on (by ``set_enabled`` or the environment)."""
    enabled = _settings.enabled
    return _env_flag(ENV_TRACING, default=True) if enabled is None else enabled


def set_capture_content(capture: bool | None) -> None:
    """Put payload content (tool inputs, prompts, outputs, hook output) on spans, or not.

    Args:
        capture: True or False; None goes back to the ``ORCHESTRA_CAPTURE_CONTENT``
            environment variable (off unless ``1``, ``true``, ``yes`` or ``on``).
    """
    _settings.capture = capture


def capture_content() -> bool:
    """Whether payload content goes on spans (off by default)."""
    capture = _settings.capture
    return _env_flag(ENV_CAPTURE_CONTENT, default=False) if capture is None else capture


def set_tracer_provider(provider: trace.TracerProvider | None) -> None:
    """Record orchestra's spans with ``provider`` instead of the global tracer provider.

    This does not touch OpenTelemetry's global provider; it is how a script, a test or a
    benchmark gives orchestra a provider of its own. None goes back to the global one.
    """
    _tracer.set(provider)
    _settings.last = None


def set_meter_provider(provider: metrics.MeterProvider | None) -> None:
    """Record orchestra's metrics with ``provider`` instead of the global meter provider.

    None goes back to the global one.
    """
    _instruments.set(provider)


def get_tracer() -> trace.Tracer | None:
    """The tracer for orchestra's spans, or None when nothing would record them.

    None when tracing is switched off, or when the provider in use is the API's
    proxy or no-op provider (no SDK configured yet). Cheap: engines call it once per run.
    """
    tracer = _tracer.get() if is_enabled() else None
    _settings.last = (tracer,)
    return tracer


def last_tracer() -> trace.Tracer | None:
    """``get_tracer()``'s last answer, or a new one if there is none (internal).

    For paths taken once per event: the environment and the global provider are read
    again at the next ``get_tracer()`` (each run, dispatch and guarded tool call asks
    it) and after ``set_enabled``, ``set_tracer_provider`` or ``configure``.
    """
    last = _settings.last
    return get_tracer() if last is None else last[0]


def forget_tracer() -> None:
    """Make the next ``last_tracer()`` ask ``get_tracer()`` again (internal)."""
    _settings.last = None


@final
class Instruments:
    """The metric instruments of orchestra, made from one meter (internal).

    Attributes:
        task_duration: histogram of task durations, seconds.
        hook_duration: histogram of hook call durations, seconds.
        attempts: counter of task attempts started.
        decisions: counter of decisions taken, by kind.
    """

    __slots__ = ("attempts", "decisions", "hook_duration", "task_duration")

    def __init__(self, meter: metrics.Meter) -> None:
        self.task_duration = meter.create_histogram(
            n.METRIC_TASK_DURATION, unit="s", description="Task duration, all attempts."
        )
        self.hook_duration = meter.create_histogram(
            n.METRIC_HOOK_DURATION, unit="s", description="Duration of one hook call."
        )
        self.attempts = meter.create_counter(
            n.METRIC_TASK_ATTEMPTS, unit="{attempt}", description="Task attempts started."
        )
        self.decisions = meter.create_counter(
            n.METRIC_DECISIONS, unit="{decision}", description="Decisions taken, by kind."
        )


def get_instruments() -> Instruments | None:
    """The metric instruments of orchestra, or None when nothing would record them."""
    return _instruments.get() if is_enabled() else None


_tracer: Final[_Made[trace.TracerProvider, trace.Tracer]] = _Made(
    trace.get_tracer_provider,
    lambda provider: isinstance(provider, _NOOP_TRACER_PROVIDERS),
    lambda provider: provider.get_tracer(_SCOPE, _VERSION),
)
_instruments: Final[_Made[metrics.MeterProvider, Instruments]] = _Made(
    metrics.get_meter_provider,
    lambda provider: type(provider).__name__ in _NOOP_METER_PROVIDERS,
    lambda provider: Instruments(provider.get_meter(_SCOPE, _VERSION)),
)
