"""Decisions: the answers hooks give, as frozen values, and how several answers merge."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Final, TypeAlias

import attrs

__all__ = ["Decision", "Delegate", "Fail", "Retry", "Skip", "merge"]


def _non_negative_finite(_inst: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not (isinstance(value, int | float) and math.isfinite(value) and value >= 0):
        raise ValueError(f"{attribute.name} must be a finite number >= 0, got {value!r}")


@attrs.frozen
class Retry:
    """Run the failed work again after ``delay`` seconds."""

    delay: float = attrs.field(default=0.0, validator=_non_negative_finite)


@attrs.frozen
class Skip:
    """Give the task up without failing the run."""

    reason: str | None = None


@attrs.frozen
class Fail:
    """Mark the task (or dispatch) failed now."""

    reason: str | None = None


def _agent_name(_inst: object, _attribute: attrs.Attribute[str], value: str) -> None:
    if not isinstance(value, str) or not value:
        raise ValueError(f"Delegate needs a non-empty agent name, got {value!r}")


@attrs.frozen
class Delegate:
    """Subagents only: dispatch the work to another registered agent."""

    agent: str = attrs.field(validator=_agent_name)
    reason: str | None = None


Decision: TypeAlias = Retry | Skip | Fail | Delegate
"""Any decision a hook can return."""

# Precedence of decisions when several hooks answer the same moment.
_RANK: Final[dict[type, int]] = {Fail: 4, Skip: 3, Delegate: 2, Retry: 1}


def pick(answers: Sequence[Decision | None]) -> int:
    """Return the index of the answer that wins the merge, or -1 if all are None.

    Precedence is ``Fail > Skip > Delegate > Retry > None``; among several ``Retry`` the
    longest delay wins, among others of the same kind the first.
    """
    best = -1
    best_rank = 0
    best_delay = -1.0
    for i, answer in enumerate(answers):
        if answer is None:
            continue
        rank = _RANK[type(answer)]
        if rank > best_rank:
            best, best_rank = i, rank
            if isinstance(answer, Retry):
                best_delay = answer.delay
        elif rank == 1 == best_rank and isinstance(answer, Retry) and answer.delay > best_delay:
            best, best_delay = i, answer.delay
    return best


def merge(answers: Sequence[Decision | None]) -> Decision | None:
    """Merge the answers of several hooks into one decision (None = no opinion).

    Precedence is ``Fail > Skip > Delegate > Retry > None``. Among several ``Retry`` the
    longest delay wins; among several ``Delegate`` (or ``Fail``, ``Skip``) the first.

    Examples:
        >>> merge([None, Retry(1.0), Retry(5.0)])
        Retry(delay=5.0)
        >>> merge([Retry(1.0), Skip("optional"), Fail("broken")])
        Fail(reason='broken')
    """
    i = pick(answers)
    return None if i < 0 else answers[i]
