r"""Matchers: regular expressions matched against the whole value, in linear time.

``Bash`` does not match ``BashOutput``; ``"*"``, ``""`` or no matcher match every value.
Patterns run on RE2 (the ``google-re2`` bindings): matching takes time linear in the
value whatever the pattern, so no matcher can hang the process (Python's ``re`` holds
the GIL while it backtracks, and no timeout can stop it). RE2 has no backreferences
(``\1``) and no lookaround (``(?=...)``, ``(?<!...)``): such a pattern is refused at load
with RE2's reason.

Hooks of Claude Code sources match as Claude Code's hooks reference says
(``ClaudeMatcher``): a matcher of only letters, digits and the event's exact-match
characters (``_``, ``-``, space, ``,``, ``|``; only ``_`` and ``|`` on FileChanged and
StopFailure) is an exact name or a list of them split on ``|`` (and ``,``), surrounding
spaces ignored; any other is a regular expression searched anywhere in the value
(JavaScript's ``RegExp.test``: ``Edit.*`` matches ``NotebookEdit``). It runs on RE2 when
RE2 can run it; a pattern RE2 refuses (lookaround, backreferences) runs on the ``regex``
package's backtracking engine with a time limit (``BACKTRACK_LIMIT`` per value): a value
that takes longer counts as a match, so a guard is never skipped by a slow pattern. A
pattern neither engine compiles matches nothing (a load note says so).
"""

from __future__ import annotations

import functools
import re
from typing import Final, final

import re2
import regex

__all__ = [
    "BACKTRACK_LIMIT",
    "ClaudeMatcher",
    "Matcher",
    "compile_claude_matcher",
    "compile_matcher",
]

BACKTRACK_LIMIT: Final = 0.05
"""Seconds a Claude Code matcher that RE2 cannot run may take on one value."""

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

    matches = fullmatch  # what a hook asks of its matcher

    def search(self, value: str) -> bool:
        """Whether the pattern matches anywhere in ``value`` (Arc's and Claude Code's)."""
        return self._regexp.search(value.encode("utf-8", "surrogatepass")) is not None


@final
class ClaudeMatcher:
    """A matcher of a Claude Code source, as Claude Code evaluates it (module docstring).

    Args:
        pattern: the matcher as written.
        exact_chars: the characters, besides letters and digits, of an exact matcher.
        base_name: match the value's last path segment (FileChanged's file name).

    Attributes:
        pattern: the matcher as written.
        names: the exact names it matches, or None for a regular expression.
        engine: ``"exact"``, ``"re2"``, ``"backtracking"`` or ``"none"`` (no engine
            compiles it: it matches nothing).
        problem: why no engine compiles it, or None.
    """

    __slots__ = ("_re2", "_regex", "base_name", "engine", "names", "pattern", "problem")

    def __init__(
        self, pattern: str, exact_chars: str = "_-, |", *, base_name: bool = False
    ) -> None:
        self.pattern = pattern
        self.base_name = base_name
        self.names: frozenset[str] | None = None
        self._re2: Matcher | None = None
        self._regex: regex.Pattern[str] | None = None
        self.problem: str | None = None
        if all((c.isascii() and c.isalnum()) or c in exact_chars for c in pattern):
            split = re.split(r"[|,]" if "," in exact_chars else r"\|", pattern)
            self.names = frozenset(name.strip() for name in split if name.strip())
            self.engine = "exact"
            return
        try:
            self._re2 = Matcher(pattern)
            self.engine = "re2"
            return
        except ValueError:
            pass
        try:
            self._regex = regex.compile(pattern)
            self.engine = "backtracking"
        except regex.error as exc:
            self.engine = "none"
            self.problem = f"not a valid regular expression ({exc}): it matches nothing"

    def __repr__(self) -> str:
        return f"ClaudeMatcher({self.pattern!r}, {self.engine})"

    def matches(self, value: str) -> bool:
        """Whether the hook runs for ``value`` (see the module docstring)."""
        if self.base_name:
            value = value.rstrip("/").rpartition("/")[2]
        if self.names is not None:
            return value in self.names
        if self._re2 is not None:
            return self._re2.search(value)
        if self._regex is None:
            return False
        try:
            return self._regex.search(value, timeout=BACKTRACK_LIMIT, concurrent=True) is not None
        except TimeoutError:
            return True  # slower than the limit: the hook runs (never skipped by a slow pattern)


@functools.lru_cache(maxsize=1024)
def compile_claude_matcher(
    pattern: str, exact_chars: str = "_-, |", base_name: bool = False
) -> ClaudeMatcher | None:
    """A Claude Code matcher, or None for "every value" (``"*"``, ``""``)."""
    if pattern in ("", "*"):
        return None
    return ClaudeMatcher(pattern, exact_chars, base_name=base_name)


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
