"""Hook spans carry no raw hook output unless content capture is on; reasons are cut to 256."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import http_server
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import orchestra.tracing as ot
from orchestra.skills import CommandHook, HookRegistry, HttpHook

pytestmark = pytest.mark.anyio

RAW = "RAW-OUTPUT-" + "x" * 1000  # what a hook printed: it may hold anything


def everything(span: ReadableSpan) -> str:
    """Every text a span carries: attributes, events' attributes, status."""
    parts: list[Any] = [dict(span.attributes or {}), span.status.description]
    parts += [(event.name, dict(event.attributes or {})) for event in span.events]
    return json.dumps(parts, default=str)


async def fire(hook: Any, tmp_path: Path, spans: InMemorySpanExporter) -> ReadableSpan:
    await HookRegistry([hook], project_dir=tmp_path).fire("PreToolUse", {"tool_name": "Bash"})
    (span,) = spans.get_finished_spans()
    return span


def command(text: str) -> CommandHook:
    return CommandHook(event="PreToolUse", command=text)


@pytest.mark.parametrize(
    "hook",
    [
        pytest.param(command(f"printf '%s' '{RAW}' >&2; exit 2"), id="exit-2-stderr"),
        pytest.param(
            command(f'printf \'{{"decision": "deny", "reason": "%s"}}\' {RAW}'), id="stdout"
        ),
    ],
)
async def test_a_reason_goes_on_the_span_cut_to_256(
    hook: CommandHook, tmp_path: Path, spans: InMemorySpanExporter
) -> None:
    span = await fire(hook, tmp_path, spans)
    reason = (span.attributes or {})[ot.ATTR_DECISION_REASON]
    assert isinstance(reason, str)
    assert len(reason) == 256
    assert reason.startswith("RAW-OUTPUT-xxx")
    assert RAW not in everything(span)


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        (f"printf '%s' '{RAW}'; exit 1", "exited 1"),
        (f'printf \'{{"decision": "%s"}}\' {RAW}', "invalid JSON output"),
        (f"echo '{RAW}'", "invalid JSON output"),
    ],
)
async def test_a_hook_error_shows_no_output_on_the_span(
    text: str, shown: str, tmp_path: Path, spans: InMemorySpanExporter
) -> None:
    span = await fire(command(text), tmp_path, spans)
    assert span.status.description == f"HookRunError: {shown}"
    assert "RAW-OUTPUT" not in everything(span)


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    url, process = http_server.start()
    yield url
    http_server.stop(process)


async def test_an_http_error_body_stays_off_the_span(
    server: str, tmp_path: Path, spans: InMemorySpanExporter
) -> None:
    hook = HttpHook(event="PreToolUse", url=f"{server}/500", tls="off", allow_private_network=True)
    span = await fire(hook, tmp_path, spans)
    assert span.status.description == "HookRunError: http 500"
    assert "the guard crashed" not in everything(span)  # the body of /500


async def test_with_content_capture_the_output_and_the_whole_error_are_there(
    tmp_path: Path, spans: InMemorySpanExporter
) -> None:
    ot.set_capture_content(True)
    span = await fire(command(f"printf '%s' '{RAW}' >&2; exit 3"), tmp_path, spans)
    assert span.status.description == "HookRunError: exited 3"
    assert json.loads((span.attributes or {})[ot.ATTR_HOOK_OUTPUT])["stderr"] == RAW  # type: ignore[arg-type]
    spans.clear()
    hook = command(f'printf \'{{"decision": "%s"}}\' {RAW}')
    span = await fire(hook, tmp_path, spans)
    assert RAW in everything(span)  # the full error, which quotes the output
