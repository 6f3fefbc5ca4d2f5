"""Where an http hook may connect: public addresses only, checked after DNS, pinned.

A hook's URL is resolved once; if any address it resolves to is loopback, private,
link-local, site-local, CGNAT (shared), multicast, unspecified or reserved (an IPv6
address that carries an IPv4 one, 6to4 or NAT64, by that IPv4 address), it is refused
before any connection, unless the hook sets ``allow_private_network: true``. The
request then goes to the address that was checked (the URL's host replaced by it, the
``Host`` header and the TLS server name kept), so a name that resolves to a public
address at the check and to an internal one a moment later (DNS rebinding) cannot
redirect it.
"""

from __future__ import annotations

import ipaddress
from typing import Final

import anyio

from orchestra.skills._protocol.result import HookRunError

__all__ = ["checked_address", "non_public"]

_CGNAT: Final = ipaddress.ip_network("100.64.0.0/10")
_NAT64: Final = ipaddress.ip_network("64:ff9b::/96")  # the well-known NAT64 prefix
_IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


def non_public(address: _IPAddress) -> str | None:
    """What kind of internal address ``address`` is (``"loopback"``...), or None if public.

    An IPv6 address that carries an IPv4 one (IPv4-mapped ``::ffff:0:0/96``, 6to4
    ``2002::/16``, NAT64 ``64:ff9b::/96``) is judged by the IPv4 address it reaches.
    """
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return non_public(address.ipv4_mapped)
        for prefix, embedded in (
            ("6to4", address.sixtofour),
            ("NAT64", address in _NAT64 and ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)),
        ):
            if embedded:
                kind = non_public(embedded)
                return None if kind is None else f"{prefix} {kind}"
        if address.is_site_local:  # fec0::/10: deprecated, but routed as internal
            return "site-local"
    checks = (
        ("loopback", address.is_loopback),
        ("link-local", address.is_link_local),
        ("multicast", address.is_multicast),
        ("unspecified", address.is_unspecified),
        ("CGNAT", address in _CGNAT),
        ("reserved", address.is_reserved),
        ("private", address.is_private),
        ("non-public", not address.is_global),
    )
    return next((kind for kind, found in checks if found), None)


async def _resolve(host: str, port: int) -> list[str]:
    try:
        import socket  # here: loading ``orchestra.skills`` loads no socket

        found = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:  # socket.gaierror
        raise HookRunError(f"could not resolve {host}: {exc}") from None
    addresses: list[str] = []
    for *_, sockaddr in found:
        address = str(sockaddr[0])
        if address not in addresses:
            addresses.append(address)
    return addresses


async def checked_address(
    host: str, port: int, *, allow_private: bool, allow_loopback: bool = False
) -> str:
    """The address to connect to for ``host``, every address it resolves to checked.

    Args:
        host: the URL's host: a name or an IP address (without brackets).
        port: the URL's port.
        allow_private: let internal addresses through.
        allow_loopback: let loopback addresses through (and no other internal one): a
            name such as ``localhost`` is resolved and checked as any other.

    Raises:
        HookRunError: the host does not resolve, or resolves to an internal address
            (unless allowed).
    """
    try:
        ipaddress.ip_address(host.partition("%")[0])
    except ValueError:
        addresses = await _resolve(host, port)
    else:
        addresses = [host]
    if not allow_private:
        for address in addresses:
            kind = non_public(ipaddress.ip_address(address.partition("%")[0]))
            if kind is not None and not (allow_loopback and kind == "loopback"):
                raise HookRunError(
                    f"refused: {host} is {address}, a {kind} address "
                    "(set allow_private_network: true to allow it)"
                )
    return addresses[0]
