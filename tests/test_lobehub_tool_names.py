"""lobehub's tool names (seed 004): a matcher ``identifier/apiName`` finds its tool.

lobehub names a tool by its plugin (``identifier``, e.g. ``lobe-web-browsing``) and the
function (``apiName``, e.g. ``search``); its hooks' matchers are written
``lobe-web-browsing/search``. A bridge whose engine names the toolset or MCP server a
tool comes from passes it as ``ToolCall.identifier``: the payload's ``tool_identifier``,
and every orchestra.yaml matcher is tried on ``identifier/apiName`` as well as on the
bare name. The engines' own runs are in each integration's tests
(``test_*_lobehub_names``).
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import http_server

from orchestra.bridge import Proceed, Refuse, ToolCall, ToolHooks
from orchestra.skills import HookOutcome, load

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with http_server.running() as url:
        yield url


def registry_with(tmp_path: Path, matcher: str, hook: str) -> ToolHooks:
    path = tmp_path / "orchestra.yaml"
    text = f"""
    hooks:
      PreToolUse:
        - matcher: "{matcher}"
          hooks:
            - {hook}
    """
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return ToolHooks(load(path))


DENY = "{type: permission, decision: deny, reason: no web today}"


@pytest.mark.parametrize(
    ("identifier", "name", "refused"),
    [
        ("lobe-web-browsing", "search", True),  # identifier/apiName: the tool
        ("lobe-web-browsing", "crawlSinglePage", False),  # another apiName
        ("lobe-image-designer", "search", False),  # another plugin's search
        (None, "search", False),  # an engine without toolset names: the bare name only
    ],
)
async def test_an_identifier_api_name_matcher_finds_its_tool(
    tmp_path: Path, identifier: str | None, name: str, refused: bool
) -> None:
    hooks = registry_with(tmp_path, "lobe-web-browsing/search", DENY)
    answer = await hooks.pre(ToolCall(name, {"query": "orchestra"}, identifier=identifier))
    if refused:
        assert isinstance(answer, Refuse)
        assert answer.reason == "no web today"
    else:
        assert isinstance(answer, Proceed)


@pytest.mark.parametrize(
    ("matcher", "identifier", "name"),
    [
        ("lobe-web-browsing/.*", "lobe-web-browsing", "crawlSinglePage"),  # every apiName
        ("search", "lobe-web-browsing", "search"),  # the bare name still matches
        ("github/create_issue", "github", "mcp__github__create_issue"),  # Claude's MCP name
    ],
)
async def test_other_matchers_of_a_named_tool(
    tmp_path: Path, matcher: str, identifier: str, name: str
) -> None:
    hooks = registry_with(tmp_path, matcher, DENY)
    answer = await hooks.pre(ToolCall(name, {}, identifier=identifier))
    assert isinstance(answer, Refuse)


async def test_a_webhook_reads_the_identifier(tmp_path: Path, server: str) -> None:
    hook = f'{{type: http, url: "{server}/echo", tls: off, allow_private_network: true}}'
    outcomes: list[HookOutcome] = []
    hooks = ToolHooks(
        registry_with(tmp_path, "lobe-web-browsing/search", hook).registry,
        on_outcome=lambda _event, outcome: outcomes.append(outcome),
    )
    call = ToolCall("search", {"query": "q"}, identifier="lobe-web-browsing")
    await hooks.pre(call)
    [outcome] = outcomes
    [record] = outcome.records
    assert record.result is not None
    sent = dict(record.result.modified_input or {})  # /echo answers the body it got
    assert (sent["tool_identifier"], sent["tool_name"]) == ("lobe-web-browsing", "search")
