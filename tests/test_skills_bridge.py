"""http and mcp_tool hooks fired through a registry: a real HTTP server, a real MCP server."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestra.skills import load
from tests.helpers import http_server

pytestmark = pytest.mark.anyio

HELPERS = Path(__file__).resolve().parent / "helpers"


@pytest.fixture
def http_url() -> Iterator[str]:
    url, process = http_server.start()
    try:
        yield url
    finally:
        http_server.stop(process)


async def test_http_hook_gets_the_event_and_expanded_headers(
    tmp_path: Path, http_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOKEN", "s3cret")
    config = tmp_path / "orchestra.yaml"
    config.write_text(
        "hooks:\n  PreToolUse:\n    - hooks:\n        - type: http\n"
        f"          url: {http_url}/echo\n          tls: off\n"
        "          allow_private_network: true\n"
        "          headers: {X-Token: 'Bearer $TOKEN'}\n          allowed_env_vars: [TOKEN]\n"
    )
    outcome = await load(config, project_dir=tmp_path).fire(
        "PreToolUse", {"tool_name": "Bash", "tool_input": {"command": "ls"}}
    )
    assert outcome.errors == ()
    assert outcome.messages == ("Bearer s3cret",)
    assert outcome.modified_input is not None
    assert outcome.modified_input["hook_event_name"] == "PreToolUse"
    assert outcome.modified_input["tool_input"] == {"command": "ls"}


async def test_http_redirect_is_a_hook_error_that_blocks_a_guard(
    tmp_path: Path, http_url: str
) -> None:
    config = tmp_path / "orchestra.yaml"
    config.write_text(
        "hooks:\n  PreToolUse:\n    - hooks:\n        - type: http\n"
        f"          url: {http_url}/redirect\n          tls: off\n"
        "          allow_private_network: true\n          phase: guard\n"
    )
    outcome = await load(config, project_dir=tmp_path).fire("PreToolUse", {"tool_name": "Bash"})
    assert outcome.blocked  # a guard fails closed (an http hook alone fails open)
    assert outcome.reason is not None
    assert "redirect" in outcome.reason


async def test_mcp_tool_hook_denies_through_a_real_server(tmp_path: Path) -> None:
    config = tmp_path / "orchestra.yaml"
    server = f"{{command: {sys.executable!r}, args: [{str(HELPERS / 'mcp_server.py')!r}]}}"
    config.write_text(
        "hooks:\n  PreToolUse:\n    - matcher: Bash\n      hooks:\n        - type: mcp_tool\n"
        f"          server: {server}\n          tool: guard\n          timeout: 60\n"
    )
    registry = load(config, project_dir=tmp_path)
    outcome = await registry.fire(
        "PreToolUse", {"tool_name": "Bash", "tool_input": {"command": "rm -rf /"}}
    )
    assert (outcome.blocked, outcome.reason) == (True, "refused: rm -rf /")
