r"""Matchers: regular expressions matched against the whole value, in linear time.

``Bash`` does not match ``BashOutput``; ``"*"``, ``""`` or no matcher match every value.
Patterns run on RE2 (the ``google-re2`` bindings): matching takes time linear in the
value whatever the pattern, so no matcher can hang the process (Python's ``re`` holds
the GIL while it backtracks, and no timeout can stop it). RE2 has no backreferences
(``\1``) and no lookaround (``(?=...)``, ``(?<!...)``): such a pattern is refused at load
with RE2's reason.
"""

from __future__ import annotations

import functools
import re
from typing import Final, final

import re2

__all__ = ["Matcher", "compile_matcher"]

_BACKREFERENCE: Final = re.compile(r"escape sequence: \\\d")
_OPTIONS: Final = re2.Options()
_OPTIONS.log_errors = False  # RE2 would also print every refused pattern on stderr
_OPTIONS.never_capture = True  # only whether it matches counts


@final
class Matcher:
    """A compiled matcher: ``fullmatch(value)`` answers whether the whole value matches.

    Args:
        pattern: the pattern, in RE2 syntax.

    Raises:
        ValueError: RE2 cannot run the pattern (the message says why).
    """

    __slots__ = ("_regexp", "pattern")

    def __init__(self, pattern: str) -> None:
        try:
            self._regexp = re2.compile(pattern, _OPTIONS)
        except re2.error as exc:
            reason = exc.args[0] if exc.args else exc
            if isinstance(reason, bytes):
                reason = reason.decode("utf-8", "replace")
            raise ValueError(str(reason)) from None
        self.pattern = pattern

    def __repr__(self) -> str:
        return f"Matcher({self.pattern!r})"

    def fullmatch(self, value: str) -> bool:
        """Whether ``value`` matches from its first character to its last."""
        # UTF-8 bytes: RE2's own encoding, and the bindings' fast path.
        return self._regexp.fullmatch(value.encode("utf-8", "surrogatepass")) is not None

    def search(self, value: str) -> bool:
        """Whether the pattern matches anywhere in ``value`` (Arc's matchers)."""
        return self._regexp.search(value.encode("utf-8", "surrogatepass")) is not None


@functools.lru_cache(maxsize=1024)
def compile_matcher(pattern: str) -> tuple[Matcher | None, str | None]:
    """Compile a matcher; return (matcher or None for "all", error message or None)."""
    if pattern in ("", "*"):
        return None, None
    try:
        return Matcher(pattern), None
    except ValueError as exc:
        reason = str(exc)
        if "perl operator" in reason or _BACKREFERENCE.search(reason):
            reason += " (RE2 matches in linear time: no backreferences, no lookaround)"
        return None, f"not a valid RE2 regular expression: {reason}"
