"""The Markdown tables of docs/howto/one-policy.md, one way for every half of the matrix."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence


def header(columns: Sequence[str]) -> str:
    """A table's header: the columns' names, then the rule (two Markdown lines)."""
    return "| " + " | ".join(columns) + " |\n|" + "---|" * len(columns)


def row(first: Sequence[str], cannot: Mapping[str, str], cells: Iterable[str]) -> str:
    """A table's row: ``first``, then per cell ``pass`` or ``cannot:`` and the reason."""
    shown = [f"cannot: {cannot[c]}" if c in cannot else "pass" for c in cells]
    return "| " + " | ".join([*first, *shown]) + " |"
