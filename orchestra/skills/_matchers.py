r"""Matchers: regular expressions matched against the whole value.

``Bash`` does not match ``BashOutput``; ``"*"``, ``""`` or no matcher match every value.
Patterns that can backtrack catastrophically are refused at load by a structural rule: a
repeated part (``*``, ``+``, ``{m,n}`` with n > 1) may not contain another repeated part,
an alternation of words, or a backreference. ``(a+)+$``, ``(\\w*)*``, ``(Edit|Write)+``
and ``(.*a){20}`` are refused; ``Edit|Write``, ``mcp__.*``, ``Bash(Output)?`` and
``[A-Z][a-z]+`` are fine.
"""

from __future__ import annotations

import functools
import importlib
import re
from collections.abc import Iterable
from typing import Any, Final, TypeAlias

__all__ = ["Matcher", "compile_matcher"]

Matcher: TypeAlias = re.Pattern[str]
"""A compiled matcher."""

_sre: Any = importlib.import_module("re._parser")
_sre_const: Any = importlib.import_module("re._constants")
_REPEATS: Final = frozenset(
    getattr(_sre_const, name)
    for name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT")
    if hasattr(_sre_const, name)
)


def _catastrophic(pattern: str) -> str | None:
    """Why a (compilable) pattern could backtrack catastrophically, or None."""
    return _walk(_sre.parse(pattern), inside=False)


def _walk(items: Iterable[tuple[Any, Any]], *, inside: bool) -> str | None:
    const = _sre_const
    for op, av in items:
        found: str | None = None
        if op in _REPEATS:
            low, high, sub = av
            repeats = high is const.MAXREPEAT or high > 1
            if repeats and inside and low != high:
                return "a repeated part inside a repeated part (nested quantifiers)"
            found = _walk(sub, inside=inside or repeats)
        elif op is const.SUBPATTERN:
            found = _walk(av[-1], inside=inside)
        elif op is const.BRANCH:
            if inside and len(av[1]) > 1:
                return "an alternation inside a repeated part"
            for branch in av[1]:
                found = found or _walk(branch, inside=inside)
        elif op in (const.ASSERT, const.ASSERT_NOT):
            found = _walk(av[1], inside=inside)
        elif op is const.GROUPREF or op is const.GROUPREF_EXISTS:
            return "a backreference"
        elif getattr(const, "ATOMIC_GROUP", None) is op:
            found = _walk(av, inside=inside)
        if found:
            return found
    return None


@functools.lru_cache(maxsize=1024)
def compile_matcher(pattern: str) -> tuple[Matcher | None, str | None]:
    """Compile a matcher; return (pattern or None for "all", error message or None)."""
    if pattern in ("", "*"):
        return None, None
    try:
        compiled = re.compile(pattern)
    except re.error as exc:
        return None, f"not a valid regular expression: {exc}"
    except RecursionError:
        return None, "regular expression nested too deeply"
    reason = _catastrophic(pattern)
    if reason:
        return None, (
            f"{pattern!r} can backtrack catastrophically ({reason}); "
            "write it without nested repetition"
        )
    return compiled, None
