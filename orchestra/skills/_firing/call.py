"""One hook call: its timeout, its errors, its phase, its span.

``attempt`` runs one hook and always answers a ``HookRecord``: a hook never crashes the
caller. A hook error (``HookRunError``, a timeout, any other exception, a result its
phase forbids) is recorded with its message; what it means is its ``on_error``'s, decided
by the ``Combiner``.

Under tracing, the call is a ``hook {event}`` span, current while the hook runs (its
``TRACEPARENT``). The span gets the decision and its reason cut to 256 characters, or
the error as its summary: nothing the hook itself wrote (its stdout, stderr, a response
body) goes on it unless content capture is on.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any, Final

import anyio
import attrs
from opentelemetry.trace import Span, Tracer

from orchestra.skills._firing.outcome import HookRecord
from orchestra.skills._hooks.claude_output import PAYLOAD_RULES, by_payload
from orchestra.skills._hooks.judge import Judge
from orchestra.skills._hooks.spec import HookCall, HookSpec
from orchestra.skills._persistent.pool import HookProcesses
from orchestra.skills._persistent.waiters import Gate
from orchestra.skills._protocol.result import HookRunError
from orchestra.tracing import capture_content, traceparent
from orchestra.tracing._engine import hook_span, record_decision, record_error
from orchestra.tracing.names import ATTR_HOOK_ENFORCED, ATTR_HOOK_OUTPUT

__all__ = ["attempt", "background", "traced_attempt"]

# Extra seconds a runner gets past a hook's own timeout before it is cancelled from here
# (the runners enforce the timeout themselves; this only guards against a runner bug).
_RUNNER_GRACE: Final = 5.0
_REASON_CHARS: Final = 256


async def traced_attempt(
    hook: HookSpec,
    data: Mapping[str, Any],
    project_dir: str,
    tracer: Tracer,
    subject: str | None,
    body: bytes | None,
    judge: Judge | None,
    processes: HookProcesses | None,
    slots: Gate | None,
) -> HookRecord:
    """``attempt`` in a ``hook {event}`` span, current while the hook runs.

    Args:
        hook: the hook.
        data: the event JSON's fields.
        project_dir: the hooks' working directory.
        tracer: the tracer.
        subject: the value its matcher was matched against, for the span.
        body: ``data`` already encoded, if the caller has it.
        judge: the registry's judge, for hooks that ask a model.
        processes: the registry's persistent hook processes.
        slots: the slots it runs in (one held while it runs; its timeout, its duration
            and its span start once it has one), or None.
    """
    if slots is not None and not slots.take():
        await slots.wait()
    try:
        with hook_span(
            tracer,
            hook.event,
            hook_type=hook.type,
            name=f"{hook.type} {hook.source}",
            source=hook.source,
            subject=subject,
            matcher=hook.matcher,
        ) as span:
            if not hook.enforce:
                span.set_attribute(ATTR_HOOK_ENFORCED, False)
            tp = traceparent()
            if tp is not None:  # the hook's own span, for hooks that read only stdin
                data = {**data, "traceparent": tp}
                body = None
            call = HookCall(hook.event, data, project_dir, body, judge, processes)
            record = await attempt(hook, call, None)
            _trace(span, record)
    finally:
        if slots is not None:
            slots.release()
    return record


async def attempt(hook: HookSpec, call: HookCall, slots: Gate | None) -> HookRecord:
    """Run one hook in one of ``slots``, under its timeout (plus a grace), and record it."""
    if slots is not None and not slots.take():
        await slots.wait()
    try:
        started = time.perf_counter()
        try:
            if hook.keeps_timeout():  # no guard timer needed (saves a cancel scope per call)
                result = await hook.run(call)
            else:
                with anyio.fail_after(hook.timeout + _RUNNER_GRACE):
                    result = await hook.run(call)
        except HookRunError as exc:
            error = exc
        except TimeoutError:
            error = HookRunError(f"timed out after {hook.timeout:g} s")
        except Exception as exc:  # a hook never crashes the caller; its error is recorded
            error = HookRunError(f"{type(exc).__name__}: {exc}", summary=type(exc).__name__)
        else:
            if hook.event in PAYLOAD_RULES:
                result = by_payload(hook.event, call.data, result, hook.claude_code)
            broken = hook.phase_error(result) if hook.phase is not None else None
            if broken is None:
                duration = time.perf_counter() - started
                record = HookRecord(hook, result, None, result.exit_code, result.stderr, duration)
                return background(record) if hook.background else record
            error = HookRunError(broken, exit_code=result.exit_code, stderr=result.stderr)
    finally:
        if slots is not None:
            slots.release()
    duration = time.perf_counter() - started
    return HookRecord(
        hook,
        None,
        str(error),
        error.exit_code,
        error.stderr,
        duration,
        error_summary=error.summary,
    )


def background(record: HookRecord) -> HookRecord:
    """A background (``async``) hook's record: its answer may not block nor modify."""
    result = record.result
    if result is None or (result.decision is None and result.modified_input is None):
        return record
    return attrs.evolve(
        record,
        result=attrs.evolve(result, decision=None, modified_input=None),
        note="async hook: its decision and input change count as none",
    )


def _trace(span: Span, record: HookRecord) -> None:
    """Put a hook's answer (or error) and exit code on its span; output only if opted in."""
    attribute = record.hook.exit_code_attribute
    if record.exit_code is not None and attribute is not None:
        span.set_attribute(attribute, record.exit_code)
    content = capture_content()
    result = record.result
    if record.error is not None:
        shown = record.error if content else (record.error_summary or record.error)
        record_error(span, HookRunError(shown, exit_code=record.exit_code))
    elif result is not None and result.decision is not None:
        reason = result.reason[:_REASON_CHARS] if result.reason is not None else None
        record_decision(span, result.decision, record.hook.source, reason=reason)
    if content:
        output: dict[str, Any] = {"error": record.error, "stderr": record.stderr}
        if result is not None:
            output = {
                "decision": result.decision,
                "reason": result.reason,
                "modified_input": result.modified_input,
                "messages": list(result.messages),
                "stderr": record.stderr,
            }
        span.set_attribute(ATTR_HOOK_OUTPUT, json.dumps(output, default=str))
