"""http hooks reach public addresses only: checked after DNS, connected to the checked address."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import http_server
from helpers.tls import self_signed

from orchestra import ConfigError
from orchestra.skills import HttpHook, load
from orchestra.skills._hooks.network import non_public

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    url, process = http_server.start()
    yield url
    http_server.stop(process)


def port(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


async def fire(hook: HttpHook) -> Any:
    from orchestra.skills import HookRegistry

    return await HookRegistry([hook]).fire("Stop", {})


def http(url: str, **kw: Any) -> HttpHook:
    return HttpHook(event="Stop", url=url, tls="off", **kw)


@pytest.mark.parametrize(
    ("host", "seen", "kind"),
    [
        ("127.0.0.1", "127.0.0.1", "loopback"),
        ("localhost", "127.0.0.1", "loopback"),
        ("2130706433", "127.0.0.1", "loopback"),  # 127.0.0.1 as one number
        ("[::1]", "::1", "loopback"),
        ("[::ffff:127.0.0.1]", "::ffff:127.0.0.1", "loopback"),
        ("169.254.169.254", "169.254.169.254", "link-local"),  # cloud metadata
        ("10.1.2.3", "10.1.2.3", "private"),
        ("192.168.0.1", "192.168.0.1", "private"),
        ("100.64.0.1", "100.64.0.1", "CGNAT"),
        ("224.0.0.1", "224.0.0.1", "multicast"),
        ("0.0.0.0", "0.0.0.0", "unspecified"),
        ("240.0.0.1", "240.0.0.1", "reserved"),
        # IPv6 addresses that carry an IPv4 one are judged by it; site-local is internal.
        ("[2002:7f00:1::]", "2002:7f00:1::", "6to4 loopback"),  # 127.0.0.1
        ("[2002:a9fe:a9fe::1]", "2002:a9fe:a9fe::1", "6to4 link-local"),  # 169.254.169.254
        ("[2002:c0a8:1::]", "2002:c0a8:1::", "6to4 private"),  # 192.168.0.1
        ("[64:ff9b::a00:1]", "64:ff9b::a00:1", "NAT64 private"),  # 10.0.0.1
        ("[fec0::1]", "fec0::1", "site-local"),
        ("[fed0:1::2]", "fed0:1::2", "site-local"),
    ],
)
async def test_internal_destinations_are_refused_before_any_connection(
    server: str, host: str, seen: str, kind: str
) -> None:
    before = http_server.hits(server)
    bare = host.strip("[]")
    outcome = await fire(http(f"http://{host}:{port(server)}/allow"))
    assert outcome.records[0].error == (
        f"refused: {bare} is {seen}, a {kind} address (set allow_private_network: true to allow it)"
    )
    assert http_server.hits(server) == before


@pytest.mark.parametrize(
    ("address", "kind"),
    [
        ("2002:808:808::1", None),  # 6to4 of 8.8.8.8: public
        ("64:ff9b::808:808", None),  # NAT64 of 8.8.8.8: public
        ("2001:4860:4860::8888", None),
        ("2002:6440:1::", "6to4 CGNAT"),  # 100.64.0.1
        ("2002:e000:1::", "6to4 multicast"),  # 224.0.0.1
        ("fefe::1", "site-local"),  # the top of fec0::/10
        ("ff02::1", "multicast"),
    ],
)
def test_the_address_check_reads_what_an_ipv6_address_reaches(
    address: str, kind: str | None
) -> None:
    assert non_public(ipaddress.ip_address(address)) == kind


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "2130706433"])
async def test_allow_private_network_opens_them(server: str, host: str) -> None:
    before = http_server.hits(server)
    outcome = await fire(http(f"http://{host}:{port(server)}/allow", allow_private_network=True))
    assert (outcome.decision, outcome.errors) == ("allow", ())
    assert http_server.hits(server) == before + 1


@pytest.fixture
def rebinding(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """``*.test`` names resolve to 127.0.0.1 (a DNS rebinding attacker's answer)."""
    asked: list[str] = []
    real = socket.getaddrinfo

    def resolve(host: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else str(host)
        if name.endswith(".test"):
            asked.append(name)
            return real("127.0.0.1", *args, **kwargs)
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    return asked


async def test_a_name_that_resolves_to_an_internal_address_is_refused(
    server: str, rebinding: list[str]
) -> None:
    before = http_server.hits(server)
    outcome = await fire(http(f"http://hooks.test:{port(server)}/allow"))
    assert outcome.records[0].error == (
        "refused: hooks.test is 127.0.0.1, a loopback address "
        "(set allow_private_network: true to allow it)"
    )
    assert rebinding == ["hooks.test"]
    assert http_server.hits(server) == before


async def test_the_connection_goes_to_the_address_checked(
    server: str, rebinding: list[str]
) -> None:
    # "hooks.test" exists only in the patched resolver, asked once: the request can only
    # have reached the server through the address that was checked.
    url = f"http://hooks.test:{port(server)}"
    outcome = await fire(http(f"{url}/host", allow_private_network=True))
    assert outcome.messages == (f"hooks.test:{port(server)} None",)  # the Host header kept
    assert rebinding == ["hooks.test"]


@pytest.fixture(scope="module")
def https_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    cert, key = self_signed(tmp_path_factory.mktemp("tls"), "hooks.test")
    url, process = http_server.start(cert, key)
    yield url
    http_server.stop(process)


async def test_tls_to_a_pinned_address_still_names_the_host(
    https_server: str, rebinding: list[str]
) -> None:
    url = f"https://hooks.test:{port(https_server)}/host"
    hook = HttpHook(event="Stop", url=url, tls="no_verify", allow_private_network=True)
    outcome = await fire(hook)
    assert outcome.messages == (f"hooks.test:{port(https_server)} hooks.test",)  # Host, SNI


def test_allow_private_network_is_a_field_of_http_hooks_only(tmp_path: Path) -> None:
    config = tmp_path / "orchestra.yaml"
    config.write_text(
        "hooks:\n  Stop:\n    - hooks:\n"
        "      - {type: command, command: x, allow_private_network: true}\n"
        "      - {type: http, url: 'https://h.example', allow_private_network: 1}\n"
    )
    with pytest.raises(ConfigError) as info:
        load(config)
    assert [str(error) for error in info.value.errors] == [
        f"{config}:4: hooks.Stop[0].hooks[0].allow_private_network: unknown field for a "
        "command hook ('allow_private_network' is a field of http hooks)",
        f"{config}:5: hooks.Stop[0].hooks[1].allow_private_network: expected true or false, "
        "got a number (1)",
    ]
