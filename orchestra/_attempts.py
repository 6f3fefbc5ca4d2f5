"""After a failed attempt: the one decision rule the scheduler and the dispatcher share.

Hooks answer a failure (``on_failure``, merged by ``HookChain``); the engine's own policy
fills in when they have no opinion (a task's ``retries``); then caps no hook can lift turn
a ``Retry`` into a ``Fail``: the attempt cap and the run's retry budget.
"""

from __future__ import annotations

from typing import Final, final

import attrs

from orchestra._decisions import Again, Decision, Fail, Retry

__all__ = ["DEFAULT_MAX_ATTEMPTS", "RetryBudget", "Verdict", "after_failure"]

DEFAULT_MAX_ATTEMPTS: Final = 100
"""Hard cap on the attempts of one task (or of one agent within one dispatch).

Whatever hooks answer: a hook that always answers ``Retry`` cannot loop forever. For a
dispatch, with ``max_delegations`` it bounds the whole chain: at most
``(max_delegations + 1) * max_attempts`` runs.
"""


@final
class RetryBudget:
    """How many retries a whole run may still spend (``limit`` None = no limit).

    One per run, shared by its tasks: ``orchestra.run(retry_budget=N)`` makes one; a
    bridge passes its own to ``AttemptDriver.begin`` for every task of a run.

    Args:
        limit: the most retries the run may spend (None: no limit).
    """

    __slots__ = ("limit", "used")

    def __init__(self, limit: int | None) -> None:
        self.limit = limit
        self.used = 0

    def spend(self) -> str | None:
        """Spend one retry; or say why none is left."""
        if self.limit is None:
            return None
        if self.used >= self.limit:
            return f"run's retry budget of {self.limit} exhausted"
        self.used += 1
        return None


@final
@attrs.frozen(kw_only=True)
class Verdict:
    """What follows a failed attempt (internal).

    Attributes:
        decision: what holds: ``Retry`` (any ``Again``: run it again), ``Skip``, ``Fail``,
            ``Delegate``, or None for a plain failure (nobody had an opinion).
        hook: the label of the hook whose answer it is, or None (the engine's own policy).
        overruled: a ``Retry`` (an ``Again``) that a cap refused, if ``decision`` is the
            ``Fail`` that replaced it.
    """

    decision: Decision | None
    hook: str | None = None
    overruled: Again | None = None


def after_failure(
    decision: Decision | None,
    hook: str | None,
    *,
    attempt: int,
    max_attempts: int,
    fallback: Retry | None = None,
    budget: RetryBudget | None = None,
) -> Verdict:
    """Decide what follows a failed attempt, from the hooks' merged answer.

    Args:
        decision: the merged answer of the ``on_failure`` hooks (None: no opinion).
        hook: the label of the hook that gave it.
        attempt: the attempt that failed, 1-based.
        max_attempts: the attempt cap; a ``Retry`` (an ``Again``) at it becomes ``Fail``.
        fallback: the engine's own answer when no hook has an opinion.
        budget: the run's retry budget, spent by each ``Retry`` that goes ahead.
    """
    if decision is None:
        decision = fallback
    if not isinstance(decision, Again):
        return Verdict(decision=decision, hook=hook)
    refusal = f"attempt cap of {max_attempts} reached" if attempt >= max_attempts else None
    if refusal is None and budget is not None:
        refusal = budget.spend()
    if refusal is None:
        return Verdict(decision=decision, hook=hook)
    return Verdict(decision=Fail(refusal), hook=hook, overruled=decision)
