"""The http runner: POST the event JSON, read the answer as a hook result.

Needs ``httpx`` (the ``http`` extra), imported on first use. A 2xx answer whose body is
a result JSON object (or empty: no opinion) is the hook's result; anything else is a
``HookRunError``: a redirect (never followed; the error names the ``Location``), another
status, a body that is not a result, a body over 1 MiB, no answer within ``timeout``,
a connection that fails. Plain ``http://`` is refused unless ``tls`` is ``"off"``, and so
is a URL whose host is or resolves to an internal address unless
``allow_private_network`` (see ``_hooks.network``): the request goes to the address checked.
Proxy variables and ``.netrc`` of the environment are not used (``trust_env=False``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Final, Literal, TypeAlias

import anyio

from orchestra.skills._hooks.network import checked_address
from orchestra.skills._protocol.result import OUTPUT_LIMIT, HookResult, HookRunError, parse_result

if TYPE_CHECKING:
    import ssl

    import httpx

__all__ = ["TLS_MODES", "TlsMode", "post_http"]

TlsMode: TypeAlias = Literal["verify", "no_verify", "off"]
"""How an http hook uses TLS: verify the certificate, do not verify it, or plain http."""
TLS_MODES: Final[tuple[TlsMode, ...]] = ("verify", "no_verify", "off")

# Shown in an error message: how much of a failing response's body.
_EXCERPT: Final = 200


@functools.cache
def _ssl_context(verify: bool) -> ssl.SSLContext:
    # Built once: loading the CA bundle costs milliseconds per client.
    import ssl  # here: loading ``orchestra.skills`` loads no ssl

    context = ssl.create_default_context()
    if not verify:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


def _explain(exc: BaseException) -> str:
    """Name an httpx error with the first message found along its causes."""
    seen: BaseException | None = exc
    while seen is not None and not str(seen):
        seen = seen.__cause__ or seen.__context__
    return f"{type(exc).__name__}: {seen}" if seen is not None else type(exc).__name__


async def _read_body(response: httpx.Response) -> bytes:
    import httpx  # imported by post_http already

    length = response.headers.get("content-length")
    if length is not None and length.isdigit() and int(length) > OUTPUT_LIMIT:
        raise HookRunError("output over 1 MiB in the http response", exit_code=response.status_code)
    body = bytearray()
    over = False
    try:
        async for chunk in response.aiter_bytes():
            if over:
                continue
            body += chunk
            if len(body) > OUTPUT_LIMIT:
                over = True
                # Close the stream and let the iteration end on it, rather than leave
                # httpcore's generators suspended (trio warns when they are collected).
                await response.aclose()
    except (httpx.HTTPError, httpx.StreamError):
        if not over:
            raise
    if over:
        raise HookRunError("output over 1 MiB in the http response", exit_code=response.status_code)
    return bytes(body)


async def post_http(
    *,
    url: str,
    headers: Mapping[str, str],
    body: bytes,
    timeout: float,  # noqa: ASYNC109 -- one deadline for connect, send and read together
    tls: TlsMode,
    strict_output: bool = False,
    allow_private_network: bool = False,
    allow_loopback: bool = False,
    read: Callable[[bytes], HookResult] | None = None,
) -> HookResult:
    """POST one event to an http hook and read its answer.

    Args:
        url: the hook's URL; ``https://``, or ``http://`` with ``tls="off"``.
        headers: request headers, already expanded; ``Content-Type`` defaults to
            ``application/json``.
        body: the event JSON.
        timeout: seconds for the whole exchange.
        tls: ``"verify"`` (https, certificates checked), ``"no_verify"`` (https,
            not checked) or ``"off"`` (plain http allowed too).
        strict_output: refuse result fields that are not known (see ``parse_result``).
        allow_private_network: let the URL reach loopback, private, link-local, CGNAT,
            multicast and reserved addresses (see ``_hooks.network``).
        allow_loopback: let the URL reach loopback addresses only (Claude Code's
            ``localhost`` URLs): the name is resolved and each address checked.
        read: how a 2xx body is read (Arc's decisions); default: a result JSON object
            (``parse_result``).

    Returns:
        The hook's result.

    Raises:
        HookRunError: the URL is refused, the exchange fails or times out, or the answer
            is not a 2xx with a result JSON body.
    """
    try:
        import httpx
    except ImportError as exc:  # pragma: no cover - depends on the installed extras
        raise HookRunError(
            "could not start: http hooks need httpx: pip install 'orchestra-hooks[http]'"
        ) from exc
    scheme = url.partition(":")[0].lower()
    if scheme == "http" and tls != "off":
        raise HookRunError(f"could not start: refused plain http URL {url} (only with tls: off)")
    if scheme not in ("http", "https"):
        raise HookRunError(f"could not start: not an http(s) URL: {url}")
    # identity: the 1 MiB limit is on what is read, not on what a gzip body expands to.
    request_headers = {
        "Content-Type": "application/json",
        "Accept-Encoding": "identity",
        **headers,
    }
    verify = _ssl_context(tls == "verify")
    try:
        target = httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise HookRunError(f"could not start: not a valid URL: {exc}") from None
    host = target.host
    try:
        with anyio.fail_after(timeout):
            port = target.port or (443 if scheme == "https" else 80)
            address = await checked_address(
                host, port, allow_private=allow_private_network, allow_loopback=allow_loopback
            )
            # Connect to the address checked; the server still sees the name it serves.
            request_headers.setdefault("Host", target.netloc.decode("ascii"))
            extensions = {"sni_hostname": host} if scheme == "https" and address != host else {}
            async with (
                httpx.AsyncClient(
                    verify=verify,
                    timeout=httpx.Timeout(timeout),
                    follow_redirects=False,
                    trust_env=False,
                ) as client,
                client.stream(
                    "POST",
                    target.copy_with(host=address),
                    content=body,
                    headers=request_headers,
                    extensions=extensions,
                ) as response,
            ):
                status = response.status_code
                if response.is_redirect or 300 <= status < 400:
                    location = response.headers.get("location", "(no Location)")
                    raise HookRunError(
                        f"http {status}: redirect to {location} not followed",
                        exit_code=status,
                        summary=f"http {status}: redirect not followed",
                    )
                data = await _read_body(response)
    except (TimeoutError, httpx.TimeoutException):
        raise HookRunError(f"timed out after {timeout:g} s") from None
    except httpx.HTTPError as exc:
        raise HookRunError(f"http request failed: {_explain(exc)}") from exc
    if not 200 <= status < 300:
        excerpt = data[:_EXCERPT].decode("utf-8", "replace")
        message = f"http {status}: {excerpt}".rstrip(": ")
        raise HookRunError(message, exit_code=status, summary=f"http {status}")
    try:
        return parse_result(data, strict=strict_output) if read is None else read(data)
    except HookRunError as exc:
        raise exc.again(exit_code=status) from None
