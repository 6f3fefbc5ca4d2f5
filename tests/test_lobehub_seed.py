"""lobehub's webhooks (seed 004) as its runtime treats them: fail open, empty = no opinion.

A real HTTP server on 127.0.0.1 (a subprocess, ``helpers.http_server``): ``/empty``
answers 204, ``/echo`` answers the request body as ``modified_input``, ``/500`` fails. A
"control webhook" that is down is a port nothing listens on.
"""

from __future__ import annotations

import socket
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import http_server

from orchestra.skills import HookOutcome, ToolDenied, load

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with http_server.running() as url:
        yield url


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def webhook(url: str, extra: str = "") -> str:
    return f'{{type: http, url: "{url}", tls: off, allow_private_network: true, timeout: 5{extra}}}'


def config(tmp_path: Path, event: str, hook: str) -> Path:
    path = tmp_path / "orchestra.yaml"
    text = f"""
    hooks:
      {event}:
        - hooks:
            - {hook}
    """
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return path


def guarded_search(path: Path) -> tuple[Any, list[str], list[HookOutcome]]:
    ran: list[str] = []
    outcomes: list[HookOutcome] = []
    registry = load(path)

    @registry.guard("web_search", on_outcome=lambda _event, outcome: outcomes.append(outcome))
    async def search(query: str) -> str:
        ran.append(query)
        return f"results for {query}"

    return search, ran, outcomes


@pytest.mark.parametrize("down", ["no server", "http 500"])
async def test_a_control_webhook_that_is_down_lets_the_tool_call_go_on(
    tmp_path: Path, server: str, down: str
) -> None:
    url = f"http://127.0.0.1:{closed_port()}/control" if down == "no server" else f"{server}/500"
    search, ran, outcomes = guarded_search(config(tmp_path, "PreToolUse", webhook(url)))
    assert await search("orchestra") == "results for orchestra"  # lobehub: continue
    assert ran == ["orchestra"]
    [outcome] = outcomes
    assert not outcome.blocked
    [error] = outcome.errors  # still recorded, not silent
    assert error.note == "error ignored (on_error: continue)"


async def test_a_guard_webhook_that_is_down_still_fails_closed(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{closed_port()}/control"
    path = config(tmp_path, "PreToolUse", webhook(url, ", phase: guard"))
    search, ran, _ = guarded_search(path)
    with pytest.raises(ToolDenied):
        await search("orchestra")
    assert ran == []


@pytest.mark.parametrize("route", ["/empty", "/allow"])
async def test_an_empty_or_204_answer_is_no_opinion(
    tmp_path: Path, server: str, route: str
) -> None:
    search, ran, outcomes = guarded_search(config(tmp_path, "PreToolUse", webhook(server + route)))
    assert await search("q") == "results for q"
    assert ran == ["q"]
    [outcome] = outcomes
    assert outcome.errors == ()
    assert outcome.decision in (None, "allow")
    if route == "/empty":
        assert outcome.decision is None  # 204: no opinion


async def test_the_configured_body_wins_over_the_event_fields(tmp_path: Path, server: str) -> None:
    hook = webhook(f"{server}/echo", ", body: {agent_name: planner-prod, env: prod}")
    registry = load(config(tmp_path, "StepEnd", hook))
    outcome = await registry.fire(
        "StepEnd", {"agent_name": "planner", "step": 1, "tool_calls": [], "error": None}
    )
    assert outcome.errors == ()
    # StepEnd cannot modify, so the echo's modified_input is noted, not applied; the record
    # keeps what was sent
    [record] = outcome.records
    assert record.result is not None
    sent = dict(record.result.modified_input or {})
    assert sent["agent_name"] == "planner-prod"  # lobehub: {...payload, ...body}
    assert sent["env"] == "prod"
    assert sent["step"] == 1
    assert sent["hook_event_name"] == "StepEnd"
