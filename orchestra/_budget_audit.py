"""A budget in audit mode on ``HookOutcome.audited``, as every unenforced hook's decision is.

A tool call that a ``Budget(enforce=False)`` would have refused goes on; what the budget
would have said is an ``AuditedDecision`` of the call's ``PreToolUse`` outcome: its hook
is a ``BudgetHook`` (the budget, as a hook that never runs), its decision ``deny``, its
reason the refusal it would have given (``budget: tool calls 2/2``), ``blocked`` True.
Only loaded when a budget in audit mode has something to say.
"""

from __future__ import annotations

from typing import ClassVar, final

import attrs

from orchestra._budget import Budget
from orchestra._spending import Audits
from orchestra.skills._firing.outcome import EMPTY, AuditedDecision, HookOutcome
from orchestra.skills._hooks.spec import NOT_CONFIG, HookSpec

__all__ = ["BudgetHook", "with_audits"]


@final
@attrs.frozen(kw_only=True, repr=False)
class BudgetHook(HookSpec):
    """A ``Budget`` in audit mode as the hook of an ``AuditedDecision`` (it never runs).

    Attributes:
        budget: the budget that would have refused the call.
    """

    type: ClassVar[str] = "budget"
    in_process: ClassVar[bool] = True
    can_transform: ClassVar[bool] = False

    budget: Budget = attrs.field(eq=False, metadata=NOT_CONFIG)

    @property
    def source(self) -> str:
        """``<budget>``: a budget has no line of its own (a record's ``hook``)."""
        return "<budget>"

    def describe(self) -> str:
        """The budget, as ``Budget(max_tool_calls=2, enforce=False)``."""
        return repr(self.budget)


def with_audits(outcome: HookOutcome | None, audits: Audits) -> HookOutcome:
    """``outcome`` (a call's ``PreToolUse``; None: none was fired) with ``audits`` added."""
    base = EMPTY if outcome is None else outcome
    added = tuple(
        AuditedDecision(
            BudgetHook(event="PreToolUse", enforce=False, budget=budget), "deny", reason, True
        )
        for budget, reason in audits
    )
    return attrs.evolve(base, audited=(*base.audited, *added))
