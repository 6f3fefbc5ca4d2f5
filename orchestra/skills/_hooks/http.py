"""``HttpHook``: the event JSON POSTed to a URL, the answer read as a result.

The body is the event JSON plus ``hook_id`` and ``hook_type`` and the hook's own
``body:`` fields, merged as the lobehub runtime merges its webhooks' (``hookId``,
``hookType`` and a configured ``body``): a ``body:`` field wins over an event field of
the same name (the fields every event JSON has are refused in ``body:`` at load). A hook
of a Claude Code file sends the event JSON alone, as Claude Code does.

As lobehub's webhooks, an http hook that sets no ``on_error`` fails open on every event
(a webhook that is down or answers garbage is a hook error, and the action goes on); a
``phase: guard`` http hook, or one with ``on_error: block``, fails closed. An empty
answer (``204 No Content``, or ``200`` with no body) is no opinion.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Final, final
from urllib.parse import urlsplit

import attrs

from orchestra._errors import did_you_mean
from orchestra.skills._config.yaml import kind, plain
from orchestra.skills._hooks.http_post import TLS_MODES, TlsMode, post_http
from orchestra.skills._hooks.spec import NOT_CONFIG, HookCall, HookSpec, event_json, key_by
from orchestra.skills._protocol.result import HookRunError
from orchestra.tracing import inject_headers

if TYPE_CHECKING:
    from orchestra.skills._config.entry import Entry
    from orchestra.skills._protocol.result import HookResult

__all__ = ["HttpHook", "check_url", "header_problems"]

_ENV_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_HEADER_NAME: Final = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
# $NAME or ${NAME} in a header value: group 1 or 2 is the variable.
_HEADER_VAR: Final = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")


def _variables(text: str) -> list[str]:
    return [match.group(1) or match.group(2) for match in _HEADER_VAR.finditer(text)]


def _broken(text: str) -> bool:
    return "\r" in text or "\n" in text or "\0" in text


# Fields every event JSON has (or the hook adds): a ``body:`` field of that name could
# never be sent.
_SET_BY_THE_EVENT: Final = (
    "hook_id",
    "hook_type",
    "hook_event_name",
    "event",
    "session_id",
    "cwd",
    "timestamp",
)


def json_problem(value: Any) -> str | None:
    """What keeps ``value`` from being a JSON value (a date, NaN, a set...), or None."""
    if value is None or isinstance(value, str | bool | int):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{value!r} is not a JSON number"
    if isinstance(value, list | tuple):
        items: list[tuple[Any, Any]] = list(enumerate(value))
    elif isinstance(value, Mapping):
        items = list(value.items())
        if not all(isinstance(key, str) for key, _ in items):
            return "expected string keys"
    else:
        return f"expected a JSON value, got {kind(value)}"
    for key, item in items:
        problem = json_problem(item)
        if problem is not None:
            return f"[{key!r}]: {problem}"
    return None


def body_problem(body: object) -> str | None:
    """What is wrong with an http hook's ``body:``, or None."""
    if not isinstance(body, Mapping):
        return f"expected a mapping of JSON values, got {kind(body)}"
    for name, value in body.items():
        if not isinstance(name, str):
            return f"expected string keys, got {kind(name)}"
        if name in _SET_BY_THE_EVENT:
            return f"{name!r} is set by the event: body never overwrites it"
        problem = json_problem(value)
        if problem is not None:
            return f"{name}: {problem}"
    return None


def _valid_body(_hook: object, _field: object, body: Mapping[str, Any]) -> None:
    problem = body_problem(body)
    if problem is not None:
        raise ValueError(f"body: {problem}")


@final
@attrs.frozen(kw_only=True, repr=False)
class HttpHook(HookSpec):
    """A hook that POSTs the event JSON to ``url`` (needs the ``http`` extra: httpx).

    Attributes:
        url: the URL; ``https://``, or ``http://`` with ``tls: off``.
        headers: the request headers, ``$VAR`` not yet expanded.
        allowed_env_vars: the variables headers may use.
        tls: ``"verify"``, ``"no_verify"`` or ``"off"``.
        strict_output: unknown fields in the result are errors.
        allow_private_network: the URL may reach loopback, private, link-local, CGNAT,
            multicast and reserved addresses (refused by default, after DNS resolution).
        allow_loopback: the URL may reach loopback addresses only (a Claude Code hook
            whose URL names ``localhost``, ``127.0.0.1``, ``::1``): checked after DNS
            resolution, as any name.
        body: JSON fields merged into the request body, over the event's fields of
            the same name, as lobehub merges them (``hook_id``, ``hook_type`` and the
            fields every event has are refused here).
    """

    type: ClassVar[str] = "http"
    fails_open: ClassVar[bool] = True

    url: str
    headers: tuple[tuple[str, str], ...] = attrs.field(
        default=(), metadata=key_by(lambda pairs: tuple(sorted(pairs)))
    )
    allowed_env_vars: tuple[str, ...] = attrs.field(
        default=(), metadata=key_by(lambda names: tuple(sorted(set(names))))
    )
    tls: TlsMode = "verify"
    strict_output: bool = False
    allow_private_network: bool = False
    allow_loopback: bool = attrs.field(default=False, metadata=NOT_CONFIG)
    body: Mapping[str, Any] = attrs.field(factory=dict, hash=False, validator=_valid_body)

    def describe(self) -> str:
        """``POST url``, the TLS mode unless it verifies, and what it may reach beyond."""
        text = f"POST {self.url}" + (f" (tls: {self.tls})" if self.tls != "verify" else "")
        if self.allow_private_network:
            return text + " (may reach internal addresses)"
        return text + " (may reach loopback)" if self.allow_loopback else text

    @classmethod
    def parse_fields(cls, entry: Entry) -> dict[str, Any]:
        """Read ``url`` (checked against ``tls``), ``headers`` and their variables."""
        # YAML 1.1 reads a bare `off` as false
        tls: TlsMode = "off"
        if entry.get("tls") is not False:
            tls = entry.choice("tls", TLS_MODES, "verify")
        url = entry.string("url", required=True)
        if url is not None:
            error = check_url(url, tls)
            if error is not None:
                entry.bad("url", error)
        allowed = entry.strings("allowed_env_vars")
        for name in allowed:
            if not _ENV_NAME.fullmatch(name):
                entry.bad("allowed_env_vars", f"{name!r} is not a variable name")
        headers = entry.string_map("headers")
        in_headers = entry.nested("headers")
        for name, value in headers:
            assert in_headers is not None  # string_map read a mapping
            for issue in header_problems(name, value, allowed):
                in_headers.bad(name, issue)
        body = entry.get("body")
        problem = None if body is None else body_problem(body)
        if problem is not None:
            entry.bad("body", problem)
        return {
            "body": plain(body or {}) if problem is None else {},
            "url": url,
            "headers": headers,
            "allowed_env_vars": allowed,
            "tls": tls,
            "strict_output": entry.flag("strict_output"),
            "allow_private_network": entry.flag("allow_private_network"),
        }

    async def run(self, call: HookCall) -> HookResult:
        """POST the event JSON (see ``post_http``), with W3C trace headers when traced."""
        return await post_http(
            url=self.url,
            headers=inject_headers(self.expand_headers()),
            body=call.body() if self.claude_code else self.request_body(call.data),
            timeout=self.timeout,
            tls=self.tls,
            strict_output=self.strict_output,
            allow_private_network=self.allow_private_network,
            allow_loopback=self.allow_loopback,
        )

    def request_body(self, data: Mapping[str, Any]) -> bytes:
        """The JSON POSTed for the event's fields ``data``.

        The event's fields, then ``hook_id`` and ``hook_type``, then ``body``: a
        ``body`` field wins over an event field of its name, as lobehub merges it.

        Raises:
            TypeError, ValueError: the payload cannot be encoded as JSON.
        """
        return event_json({**data, "hook_id": self.hook_id, "hook_type": self.type, **self.body})

    def expand_headers(self) -> dict[str, str]:
        """The headers with ``$VAR`` read from the environment.

        In a Claude Code source a variable not in ``allowed_env_vars`` is an empty
        string, as Claude Code replaces it.

        Raises:
            HookRunError: a variable not in ``allowed_env_vars``, or a value that has a
                line break or NUL once expanded.
        """
        allowed = set(self.allowed_env_vars)

        def value(match: re.Match[str]) -> str:
            name = match.group(1) or match.group(2)
            if name not in allowed and self.claude_code:  # Claude Code: an empty string
                return ""
            if name not in allowed:  # validated at load; kept as a second fence
                raise HookRunError(f"header variable ${name} is not in allowed_env_vars")
            return os.environ.get(name, "")

        # HTTP forbids spaces around a value (an empty variable can leave one)
        headers = {name: _HEADER_VAR.sub(value, text).strip() for name, text in self.headers}
        for name, text in headers.items():
            if _broken(text):
                raise HookRunError(f"header {name} has a line break or NUL after expansion")
        return headers


def header_problems(name: str, value: str, allowed: Collection[str]) -> list[str]:
    """What is wrong with one header (its name, a line break, a variable not allowed)."""
    problems = [] if _HEADER_NAME.fullmatch(name) else ["not a valid header name"]
    if _broken(value):
        problems.append("header values may not contain line breaks or NUL")
    for var in _variables(value):
        if var not in allowed:
            problems.append(f"${var} is not in allowed_env_vars{did_you_mean(var, allowed)}")
    return problems


def check_url(url: str, tls: TlsMode) -> str | None:
    """What is wrong with an http hook's URL for its TLS mode, or None."""
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError as exc:
        return f"not a valid URL: {exc}"
    if parts.scheme not in ("http", "https") or not host:
        return f"expected an https:// URL, got {url!r}"
    if parts.scheme == "http" and tls != "off":
        return "plain http is refused; use https, or set tls: off"
    if parts.scheme == "https" and tls == "off":
        return "tls: off needs an http:// URL"
    return None
