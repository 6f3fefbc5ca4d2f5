"""Decisions: the answers hooks give, as frozen values, and how several answers merge.

Each decision type is declared once, here, by three things: its class, whose base says how
every engine carries it out (``Again``: run the work again after ``delay``; the others by
their own type); its place in ``Decision``, whose order is the merge's precedence; and
the moments that may give it, which say so in their return annotations
(``TaskHooks.on_failure(...) -> Retry | Skip | Fail | Replace | ...``: ``orchestra._moments``
reads them, as mypy does). ``orchestra`` exports every class of the union, the union and
``merge`` (``Again`` and ``GiveOutput`` are ``orchestra.bridge``'s): its ``_DECISIONS``
names them, the one list of them, so that ``import orchestra`` loads nothing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Final, TypeAlias, final, get_args

import attrs


def _non_negative_finite(_inst: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not (isinstance(value, int | float) and math.isfinite(value) and value >= 0):
        raise ValueError(f"{attribute.name} must be a finite number >= 0, got {value!r}")


@attrs.frozen
class Again:
    """The base of the decisions every engine carries out by running the work again.

    An engine runs the work again after ``delay`` seconds, within its attempt cap and
    retry budget (``orchestra._attempts.after_failure``); among several answers of one
    type the longest delay wins. Hooks answer a subclass (``Retry``); a bridge tests
    ``isinstance(decision, Again)`` and names ``Again`` in its ``carries``, so that every
    such decision is carried out the same way (public as ``orchestra.bridge.Again``).
    """

    delay: float = attrs.field(default=0.0, validator=_non_negative_finite)


@attrs.frozen
class Retry(Again):
    """Run the failed work again after ``delay`` seconds."""


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


@attrs.frozen
class Replace:
    """Change what flows: the inputs, the output, or a failure's outcome.

    - In ``before_execute``: the task's keyword arguments (a mapping); in
      ``before_dispatch``: the text dispatched (a ``str``).
    - In ``after_execute`` and ``after_dispatch``: the output.
    - In ``on_failure``: a substitute output that recovers the work: the task (or
      dispatch) ends SUCCEEDED with ``value`` as its output, its error kept on the result.

    Hashable when ``value`` is.
    """

    value: Any


@final
@attrs.frozen
class GiveOutput:
    """A ``before_execute`` answer's value that gives the task's output: no body runs.

    ``Replace(GiveOutput(value))`` in ``before_execute``: the body does not run and the
    task ends SUCCEEDED with ``value`` as its output (a YAML ``AttemptStart`` hook's
    output, a graph executor's ``block``: output ``{}``, dependents run). Every engine
    carries it out: orchestra's scheduler and every bridge through
    ``orchestra.bridge.TaskAttempts``, whose answer to it is ``DoGive``.

    Args:
        value: the output.
    """

    value: Any


Decision: TypeAlias = Fail | Skip | Delegate | Retry | Replace
"""Any decision a hook can return (in precedence order: the first wins a merge)."""

DECISIONS: Final[dict[str, type]] = {cls.__name__: cls for cls in get_args(Decision)}
"""Every decision type, by name, in precedence order (internal)."""

# Precedence of decisions when several hooks answer the same moment: Decision's order.
_RANK: Final[dict[type, int]] = {
    cls: len(DECISIONS) - i for i, cls in enumerate(DECISIONS.values())
}
_REPLACE: Final = _RANK[Replace]


def pick(answers: Sequence[Decision | None], *, chained: bool = False) -> int:
    """Return the index of the answer that wins the merge, or -1 if all are None.

    Precedence is ``Fail > Skip > Delegate > Retry > Replace > None`` (``Decision``'s
    order); among several ``Retry`` (several of one ``Again`` type) the longest delay
    wins, among others of the same kind the first, except ``Replace`` when ``chained``
    (each hook saw the value as replaced by those before it, so the last holds every
    change).
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
            if isinstance(answer, Again):
                best_delay = answer.delay
        elif rank == best_rank:
            if isinstance(answer, Again):
                if answer.delay > best_delay:
                    best, best_delay = i, answer.delay
            elif chained and rank == _REPLACE:
                best = i
    return best


def merge(answers: Sequence[Decision | None]) -> Decision | None:
    """Merge the answers of several hooks into one decision (None = no opinion).

    Precedence is ``Fail > Skip > Delegate > Retry > Replace > None``. Among several
    ``Retry`` the longest delay wins; among several ``Delegate`` (or ``Fail``, ``Skip``,
    ``Replace``) the first. (The engines chain ``Replace`` in ``before_*`` and
    ``after_*`` moments: each hook sees the value as replaced by those before it.)

    Examples:
        >>> merge([None, Retry(1.0), Retry(5.0)])
        Retry(delay=5.0)
        >>> merge([Retry(1.0), Skip("optional"), Fail("broken")])
        Fail(reason='broken')
        >>> merge([Replace("a"), Retry(1.0)])
        Retry(delay=1.0)
    """
    i = pick(answers)
    return None if i < 0 else answers[i]
