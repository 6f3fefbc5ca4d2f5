"""The run of an agent used as a tool (``Agent.as_tool``): what it charges (internal).

The SDK runs an ``as_tool`` agent with the ``hooks=`` given to ``as_tool`` (None by
default), so the bridge's own hooks never hear of its model calls. ``nested_hooks`` gives
that run hooks that charge its model calls to the budgets open where the tool runs (the
outer run's, unless the run opens its own); a bridge given as those hooks charges them
itself, and ``nested_budgets`` opens that bridge's own budgets around the run
(``scope="tree"``: they go on counting in the outer run's; ``"run"``: on their own).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, final

from agents import RunHooks

from orchestra.bridge import charge_model_end, charge_model_start
from orchestra_openai_agents._lifecycle import Composed
from orchestra_openai_agents._spans import model_name

if TYPE_CHECKING:
    from orchestra import Budget

__all__ = ["nested_budgets", "nested_hooks"]


@final
class _Charging(RunHooks[Any]):
    """Charges each model call of a nested run to the budgets open where it runs."""

    async def on_llm_start(
        self, context: Any, agent: Any, system_prompt: Any, input_items: Any
    ) -> None:
        charge_model_start(model_name(agent))  # BudgetExceeded: the call is not made

    async def on_llm_end(self, context: Any, agent: Any, response: Any) -> None:
        usage = getattr(response, "usage", None)
        tokens = {
            "input_tokens": getattr(usage, "input_tokens", None),
            "output_tokens": getattr(usage, "output_tokens", None),
        }
        charge_model_end(model_name(agent), tokens)


_CHARGING = _Charging()


def nested_hooks(given: Any) -> Any:
    """The ``hooks=`` of an ``as_tool`` run: ``given``, charging its model calls."""
    if given is None:
        return _CHARGING
    if nested_budgets(given) is not None:  # a bridge: it charges them itself
        return given
    return Composed(_CHARGING, given)


def nested_budgets(given: Any) -> tuple[Budget, ...] | None:
    """The own budgets of a bridge given as an ``as_tool`` run's hooks (None: no bridge)."""
    budgets = getattr(given, "own_budgets", None)
    return budgets if isinstance(budgets, tuple) else None
