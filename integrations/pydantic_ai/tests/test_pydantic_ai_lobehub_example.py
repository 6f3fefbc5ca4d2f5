"""lobehub's agent-runtime hooks mode (seed 004), its full example in a pydantic-ai agent.

Production mode as lobehub runs it: webhooks before and after each step with a
configured ``body`` (``StepStart``/``StepEnd``), a control webhook before each tool call
that is down (the runtime goes on), a mock on one tool, and the after-tool event with
``mocked: true``; tools named ``identifier/apiName`` (``lobe-web-browsing/search``). The
webhook receiver is a real HTTP server on 127.0.0.1; ``FunctionModel`` is the model.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from orchestra_pydantic_ai import OrchestraCapability
from pydantic_ai import Agent, FunctionToolset
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from orchestra.skills import load

pytestmark = pytest.mark.anyio


@pytest.fixture
def receiver() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """A webhook receiver: keeps each body it is sent, answers 204 (no opinion)."""
    bodies: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            bodies.append(json.loads(self.rfile.read(length)))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *_args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", bodies
    finally:
        server.shutdown()
        server.server_close()


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def webhook(url: str, **more: Any) -> dict[str, Any]:
    return {"type": "http", "url": url, "tls": "off", "allow_private_network": True, **more}


def research(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Search, then read a page, then answer with what the page said."""
    turn = sum(1 for message in messages if message.kind == "response")
    if turn == 0:
        return ModelResponse(parts=[ToolCallPart("search", {"query": "orchestra"}, "c1")])
    if turn == 1:
        call = ToolCallPart("crawlSinglePage", {"url": "https://example.org"}, "c2")
        return ModelResponse(parts=[call])
    last = messages[-1].parts[-1]
    return ModelResponse(parts=[TextPart(f"the page says: {getattr(last, 'content', '?')}")])


async def test_the_seeds_full_example_runs_end_to_end(
    tmp_path: Path, receiver: tuple[str, list[dict[str, Any]]]
) -> None:
    url, bodies = receiver
    mock = {"type": "command", "command": """echo '{"output": "cached page"}'"""}
    config = {
        "StepStart": [{"hooks": [webhook(f"{url}/steps", body={"team": "research"})]}],
        "StepEnd": [
            {"hooks": [webhook(f"{url}/steps", id="step-audit", body={"team": "research"})]}
        ],
        "PreToolUse": [
            {
                "matcher": "lobe-web-browsing/.*",
                "hooks": [webhook(f"http://127.0.0.1:{closed_port()}/control", timeout=5)],
            },
            {"matcher": "lobe-web-browsing/crawlSinglePage", "hooks": [mock]},
        ],
        "PostToolUse": [{"hooks": [webhook(f"{url}/after-tool")]}],
    }
    (tmp_path / "orchestra.yaml").write_text(json.dumps({"hooks": config}))
    registry = load(tmp_path / "orchestra.yaml", project_dir=tmp_path)
    ran: list[str] = []
    browsing: FunctionToolset[None] = FunctionToolset(id="lobe-web-browsing")

    @browsing.tool_plain
    def search(query: str) -> str:
        """Search the web."""
        ran.append(f"search {query}")
        return f"results for {query}"

    @browsing.tool_plain
    def crawlSinglePage(url: str) -> str:
        """Read one page."""
        ran.append(f"crawl {url}")
        return "the live page"

    agent: Agent[None, str] = Agent(
        FunctionModel(research),
        name="researcher",
        toolsets=[browsing],
        capabilities=[OrchestraCapability(registry=registry)],
    )
    result = await agent.run("what is orchestra?")

    assert result.output == "the page says: cached page"  # the mock answered
    assert ran == ["search orchestra"]  # the control webhook is down: the search went on
    steps = [body for body in bodies if body["hook_event_name"] in ("StepStart", "StepEnd")]
    assert [(b["hook_event_name"], b["step"]) for b in steps] == [
        ("StepStart", 1), ("StepEnd", 1), ("StepStart", 2), ("StepEnd", 2),
        ("StepStart", 3), ("StepEnd", 3),
    ]  # fmt: skip
    assert all(b["team"] == "research" and b["agent_name"] == "researcher" for b in steps)
    assert {b["hook_id"] for b in steps if b["hook_event_name"] == "StepEnd"} == {"step-audit"}
    assert steps[-1]["content"] == "the page says: cached page"
    after = [b for b in bodies if b["hook_event_name"] == "PostToolUse"]
    assert [(b["tool_identifier"], b["tool_name"], b.get("mocked")) for b in after] == [
        ("lobe-web-browsing", "search", None),
        ("lobe-web-browsing", "crawlSinglePage", True),
    ]
