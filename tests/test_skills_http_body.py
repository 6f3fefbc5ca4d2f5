"""An http hook's request body: the event JSON with ``hook_id``, ``hook_type`` and ``body:``.

As the lobehub runtime's webhooks carry ``hookId`` and ``hookType`` and merge a configured
``body``. A real HTTP server on 127.0.0.1 (a subprocess): its ``/echo`` answers the
request body as ``modified_input``, so the outcome shows what was sent.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import http_server

from orchestra import ConfigError
from orchestra.skills import CommandHook, HookRegistry, HttpHook, load

pytestmark = pytest.mark.anyio

PAYLOAD = {"tool_name": "Bash", "tool_input": {"command": "ls"}}


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    url, process = http_server.start()
    yield url
    http_server.stop(process)


def write(folder: Path, yaml: str) -> Path:
    path = folder / "orchestra.yaml"
    path.write_text(textwrap.dedent(yaml).lstrip("\n"))
    return path


def echo(url: str, extra: str = "") -> str:
    """An http hook's fields for the server's /echo, as one YAML flow mapping."""
    return (
        f'{{type: http, url: "{url}/echo", tls: off, allow_private_network: true, '
        f"headers: {{X-Token: t}}{extra}}}"
    )


async def sent(registry: HookRegistry, payload: dict[str, Any] = PAYLOAD) -> dict[str, Any]:
    """What the one matching http hook was sent for a PreToolUse of ``payload``."""
    outcome = await registry.fire("PreToolUse", payload)
    assert outcome.errors == (), outcome.errors
    assert outcome.modified_input is not None
    return dict(outcome.modified_input)


async def test_the_body_carries_the_hook_id_type_and_configured_fields(
    tmp_path: Path, server: str
) -> None:
    body = "{team: core, tool_name: spoofed, nested: {rows: [1, 2.5, null, true]}}"
    config = write(
        tmp_path,
        f"""
        hooks:
          PreToolUse:
            - matcher: Bash
              hooks:
                - {echo(server, f", id: audit-bash, body: {body}")}
        """,
    )
    got = await sent(load(config, project_dir=tmp_path))
    assert got["hook_id"] == "audit-bash"
    assert got["hook_type"] == "http"
    assert got["team"] == "core"
    assert got["nested"] == {"rows": [1, 2.5, None, True]}
    assert got["tool_name"] == "spoofed"  # body wins over the event's field, as lobehub merges
    assert got["tool_input"] == {"command": "ls"}
    assert got["hook_event_name"] == "PreToolUse"


async def test_without_an_id_the_hook_id_is_its_place_in_the_file(
    tmp_path: Path, server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(
        tmp_path,
        f"""
        hooks:
          PreToolUse:
            - matcher: Bash
              hooks:
                - {{type: prompt, prompt: "first hook of the first group"}}
            - matcher: Read
              hooks:
                - {{type: prompt, prompt: "first hook of the second group"}}
                - {echo(server)}
        """,
    )
    monkeypatch.chdir(tmp_path)
    registry = load("orchestra.yaml", project_dir=tmp_path)
    got = await sent(registry, {"tool_name": "Read", "tool_input": {}})
    assert got["hook_id"] == "orchestra.yaml#PreToolUse/1/1"
    assert "team" not in got
    # the id of every hook, whatever its type, and stable when lines are added above
    assert [hook.hook_id for hook in registry.hooks] == [
        "orchestra.yaml#PreToolUse/0/0",
        "orchestra.yaml#PreToolUse/1/0",
        "orchestra.yaml#PreToolUse/1/1",
    ]
    path = tmp_path / "orchestra.yaml"
    path.write_text("# a comment\n\n" + path.read_text())
    moved = load("orchestra.yaml", project_dir=tmp_path)
    assert [hook.hook_id for hook in moved.hooks] == [hook.hook_id for hook in registry.hooks]


async def test_a_hook_built_in_python_sends_its_id_and_body(server: str) -> None:
    hook = HttpHook(
        event="PreToolUse",
        url=f"{server}/echo",
        tls="off",
        allow_private_network=True,
        headers=(("X-Token", "t"),),
        id="py-hook",
        body={"tenant": "acme"},
    )
    got = await sent(HookRegistry([hook]))
    assert (got["hook_id"], got["hook_type"], got["tenant"]) == ("py-hook", "http", "acme")
    unnamed = HttpHook(
        event="PreToolUse",
        url=f"{server}/echo",
        tls="off",
        allow_private_network=True,
        headers=(("X-Token", "t"),),
    )
    assert unnamed.hook_id == "<python>:0"  # no file, no id: where it was built


async def test_a_claude_code_http_hook_sends_the_event_json_alone(server: str) -> None:
    hook = HttpHook(
        event="PreToolUse",
        url=f"{server}/echo",
        tls="off",
        allow_private_network=True,
        headers=(("X-Token", "t"),),
        claude_code=True,
    )
    got = await sent(HookRegistry([hook]))
    assert "hook_id" not in got
    assert "hook_type" not in got
    assert got["tool_name"] == "Bash"


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        (", body: [1, 2]", "body: expected a mapping of JSON values, got a list"),
        (", body: {when: 2024-01-01}", "body: when: expected a JSON value, got date"),
        (", body: {ratio: .nan}", "body: ratio: nan is not a JSON number"),
        (", body: {rows: [1, {at: 2024-01-01}]}", "body: rows: [1]: ['at']: expected a JSON"),
        (", body: {hook_id: x}", "body: 'hook_id' is set by the event: body never overwrites"),
        (", body: {session_id: x}", "body: 'session_id' is set by the event"),
        (", id: 5", "id: expected a non-empty string, got a number (5)"),
    ],
)
def test_a_bad_body_or_id_is_refused_at_load(tmp_path: Path, fields: str, problem: str) -> None:
    config = write(
        tmp_path,
        f"""
        hooks:
          PreToolUse:
            - hooks:
                - {echo("http://127.0.0.1:9", fields)}
        """,
    )
    with pytest.raises(ConfigError) as info:
        load(config)
    (error,) = info.value.errors
    assert str(error).startswith(f"{config}:4: hooks.PreToolUse[0].hooks[0].")
    assert problem in str(error)


def test_a_bad_body_or_id_built_in_python_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="body: ratio: inf is not a JSON number"):
        HttpHook(event="Stop", url="https://example.org", body={"ratio": float("inf")})
    with pytest.raises(ValueError, match="body: 'cwd' is set by the event"):
        HttpHook(event="Stop", url="https://example.org", body={"cwd": "/"})
    with pytest.raises(ValueError, match="id: expected a non-empty string"):
        CommandHook(event="Stop", command="true", id="")
