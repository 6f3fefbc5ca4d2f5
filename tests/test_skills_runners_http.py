"""The http runner against a real HTTP server on 127.0.0.1 (a subprocess).

The server is on loopback: every request here sets ``allow_private_network``
(tests/test_skills_network.py shows the refusal).
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator

import pytest
from helpers import http_server
from helpers.procs import LeakCheck
from helpers.tls import self_signed

from orchestra.skills._hooks.http_post import post_http
from orchestra.skills._protocol.result import HookResult, HookRunError

pytestmark = pytest.mark.anyio

EVENT = {"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": "ls"}}
BODY = json.dumps(EVENT).encode()


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    url, process = http_server.start()
    yield url
    http_server.stop(process)


@pytest.fixture
async def leaks(anyio_backend: str, server: str) -> LeakCheck:
    check = LeakCheck()
    # The first request of a backend may set up machinery that stays; not a leak.
    await post(f"{server}/allow")
    check.snapshot()
    return check


async def post(url: str, *, timeout: float = 10, **kw: object) -> HookResult:  # noqa: ASYNC109
    options: dict[str, object] = {
        "headers": {},
        "body": BODY,
        "tls": "off",
        "allow_private_network": True,
        **kw,
    }
    return await post_http(url=url, timeout=timeout, **options)  # type: ignore[arg-type]


async def fails(url: str, **kw: object) -> HookRunError:
    with pytest.raises(HookRunError) as caught:
        await post(url, **kw)  # type: ignore[arg-type]
    return caught.value


async def goes_on(leaks: LeakCheck, server: str) -> None:
    """The caller goes on: the next hook answers, and no socket was left open."""
    assert (await post(f"{server}/allow")).decision == "allow"
    await leaks.check()


async def test_result_from_a_2xx_json_body(leaks: LeakCheck, server: str) -> None:
    assert await post(f"{server}/allow") == HookResult(decision="allow", reason="fine")
    await leaks.check()


async def test_event_and_headers_are_sent(leaks: LeakCheck, server: str) -> None:
    result = await post(f"{server}/echo", headers={"X-Token": "s3cret"})
    assert result == HookResult(modified_input=EVENT, messages=("s3cret",))
    await leaks.check()


async def test_claude_code_shape(leaks: LeakCheck, server: str) -> None:
    result = await post(f"{server}/claude", strict_output=True)
    assert result == HookResult(decision="deny", reason="not on Fridays")
    await leaks.check()


async def test_empty_body_is_no_opinion(leaks: LeakCheck, server: str) -> None:
    assert await post(f"{server}/empty") == HookResult()
    await leaks.check()


async def test_redirect_is_not_followed(leaks: LeakCheck, server: str) -> None:
    error = await fails(f"{server}/redirect")
    assert str(error) == "http 302: redirect to https://evil.example/steal not followed"
    assert error.exit_code == 302
    await goes_on(leaks, server)


@pytest.mark.parametrize("tls", ["verify", "no_verify"])
async def test_plain_http_is_refused(leaks: LeakCheck, server: str, tls: str) -> None:
    error = await fails(f"{server}/allow", tls=tls)
    assert (
        str(error) == f"could not start: refused plain http URL {server}/allow (only with tls: off)"
    )
    await goes_on(leaks, server)


async def test_other_schemes_are_refused(leaks: LeakCheck, server: str) -> None:
    error = await fails("file:///etc/passwd")
    assert str(error) == "could not start: not an http(s) URL: file:///etc/passwd"
    await goes_on(leaks, server)


async def test_server_that_never_answers(leaks: LeakCheck, server: str) -> None:
    error = await fails(f"{server}/hang", timeout=0.5)
    assert str(error) == "timed out after 0.5 s"
    await goes_on(leaks, server)


async def test_500_is_a_hook_error(leaks: LeakCheck, server: str) -> None:
    error = await fails(f"{server}/500")
    assert str(error) == "http 500: internal error: the guard crashed"
    assert error.exit_code == 500
    await goes_on(leaks, server)


async def test_404_is_a_hook_error(leaks: LeakCheck, server: str) -> None:
    error = await fails(f"{server}/nowhere")
    assert str(error) == "http 404: no such hook"
    await goes_on(leaks, server)


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/text", "invalid JSON output: Expecting value at line 1 column 1"),
        ("/array", "invalid JSON output: expected an object, got an array"),
    ],
)
async def test_2xx_that_is_not_a_result(
    leaks: LeakCheck, server: str, path: str, message: str
) -> None:
    error = await fails(f"{server}{path}")
    assert str(error) == message
    assert error.exit_code == 200
    await goes_on(leaks, server)


@pytest.mark.parametrize("path", ["/big", "/big-chunked"])
async def test_big_body(leaks: LeakCheck, server: str, path: str) -> None:
    error = await fails(f"{server}{path}")
    assert str(error) == "output over 1 MiB in the http response"
    await goes_on(leaks, server)


async def test_connection_refused(leaks: LeakCheck, server: str) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    # Nobody listens on the port now.
    error = await fails(f"http://127.0.0.1:{port}/allow")
    assert str(error).startswith("http request failed: ConnectError")
    await goes_on(leaks, server)


@pytest.fixture(scope="module")
def https_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    cert, key = self_signed(tmp_path_factory.mktemp("tls"), "127.0.0.1")
    url, process = http_server.start(cert, key)
    yield url
    http_server.stop(process)


async def test_tls_verify_refuses_a_self_signed_certificate(
    leaks: LeakCheck, server: str, https_server: str
) -> None:
    error = await fails(f"{https_server}/allow", tls="verify")
    assert str(error).startswith("http request failed: ConnectError")
    assert "CERTIFICATE_VERIFY_FAILED" in str(error)
    await goes_on(leaks, server)


async def test_tls_no_verify_accepts_it(leaks: LeakCheck, server: str, https_server: str) -> None:
    result = await post(f"{https_server}/allow", tls="no_verify")
    assert result.decision == "allow"
    await goes_on(leaks, server)
