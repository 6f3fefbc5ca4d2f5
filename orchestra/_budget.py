"""``Budget``: limits on model calls, tool calls, tokens and cost, as a ready hook object.

A ``Budget`` is configuration only (frozen, checked when made). What a run has spent is
counted by a ``Spending`` (``orchestra._spending``), one per run (or one per tree of
runs, ``scope="tree"``), which the engine opens when the run starts: the Budget itself
never changes, so one object serves any number of runs at once.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final, Literal, TypeAlias, final

from orchestra._errors import did_you_mean
from orchestra._hooks import SubagentHooks, TaskHooks

__all__ = ["KINDS", "LIMITS", "TOKEN_KINDS", "Budget", "BudgetScope", "check_budget_fields"]

BudgetScope: TypeAlias = Literal["run", "tree"]

TOKEN_KINDS: Final = ("input_tokens", "output_tokens")
"""The token kinds a model call's usage reports, and ``prices=`` may price."""

KINDS: Final = ("model_calls", "tool_calls", "input_tokens", "output_tokens", "cost_usd")
"""What a budget counts, in the order reports show it (``orchestra.budget.<kind>.*``)."""

LIMITS: Final = MappingProxyType(
    {
        "max_model_calls": "model_calls",
        "max_tool_calls": "tool_calls",
        "max_input_tokens": "input_tokens",
        "max_output_tokens": "output_tokens",
        "max_cost_usd": "cost_usd",
    }
)
"""Each limit's keyword and the kind it limits."""

FIELDS: Final = (*LIMITS, "per_tool", "prices", "scope", "enforce")
"""Every key ``Budget(...)`` and ``budget:`` take."""


def _number(name: str, value: object, *, whole: bool) -> float | int | None:
    """``value`` checked as a limit: None, or a number >= 0 (a whole one for counts)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"Budget {name} must be a number or None, got {value!r}")
    if whole and not isinstance(value, int):
        raise TypeError(f"Budget {name} must be a whole number, got {value!r}")
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"Budget {name} must be >= 0, got {value!r}")
    return value


def _per_tool(value: object) -> Mapping[str, int]:
    if value is None:
        return MappingProxyType({})
    if not isinstance(value, Mapping):
        raise TypeError(f"Budget per_tool must map tool names to limits, got {value!r}")
    out: dict[str, int] = {}
    for tool, limit in value.items():
        if not isinstance(tool, str) or not tool:
            raise TypeError(f"Budget per_tool: a tool name must be a non-empty str, got {tool!r}")
        checked = _number(f"per_tool[{tool!r}]", limit, whole=True)
        if checked is None:
            raise TypeError(f"Budget per_tool[{tool!r}] must be a whole number, got None")
        out[tool] = int(checked)
    return MappingProxyType(out)


def _prices(value: object) -> Mapping[str, Mapping[str, float]]:
    if value is None:
        return MappingProxyType({})
    if not isinstance(value, Mapping):
        raise TypeError(f"Budget prices must map model names to prices, got {value!r}")
    out: dict[str, Mapping[str, float]] = {}
    for model, kinds in value.items():
        if not isinstance(model, str) or not model:
            raise TypeError(f"Budget prices: a model name must be a non-empty str, got {model!r}")
        if not isinstance(kinds, Mapping):
            raise TypeError(
                f"Budget prices[{model!r}] must map token kinds to USD per token, got {kinds!r}"
            )
        priced: dict[str, float] = {}
        for kind, price in kinds.items():
            if kind not in TOKEN_KINDS:
                hint = did_you_mean(str(kind), TOKEN_KINDS)
                known = ", ".join(TOKEN_KINDS)
                raise ValueError(
                    f"Budget prices[{model!r}]: unknown token kind {kind!r}{hint} (known: {known})"
                )
            checked = _number(f"prices[{model!r}][{kind!r}]", price, whole=False)
            priced[kind] = float(checked or 0.0)
        out[model] = MappingProxyType(priced)
    return MappingProxyType(out)


def check_budget_fields(fields: Mapping[str, Any]) -> None:
    """Refuse a key that ``Budget`` does not take (``ValueError`` naming it)."""
    for key in fields:
        if key not in FIELDS:
            hint = did_you_mean(str(key), FIELDS)
            raise ValueError(f"unknown budget field {key!r}{hint} (known: {', '.join(FIELDS)})")


@final
class Budget(TaskHooks, SubagentHooks):  # type: ignore[misc]  # no moment of either is overridden
    """Limits on what a run may spend: a ready hook object for any engine's ``hooks=``.

    ::

        budget = orchestra.Budget(
            max_model_calls=20,
            max_tool_calls=50,
            per_tool={"web_search": 5},
            max_cost_usd=0.50,
            prices={"gpt-4o": {"input_tokens": 2.5e-6, "output_tokens": 1e-5}},
        )

    Given to a DAG run, a dispatcher or an agent bridge (``hooks=[budget]``), it counts
    every model call (``StepStart``/``StepEnd`` of the agent bridges) and every guarded
    tool call made inside the run, the guarded tools called in task bodies and agents
    included, even when their own registry has no hooks:

    - a tool call past ``max_tool_calls`` (or its ``per_tool`` limit) is refused before
      its body runs, with the reason ``budget: tool calls 2/2`` (``ToolDenied`` from a
      guarded function; the model reads it in an agent bridge);
    - a model call past ``max_model_calls`` is never made: the run ends with
      ``BudgetExceeded``, which ``after_run`` sees;
    - the model call whose usage crosses ``max_input_tokens``, ``max_output_tokens`` or
      ``max_cost_usd`` ends the run with ``BudgetExceeded`` once it answered.

    It implements no moment of its own (a hook point it would slow down for nothing): the
    engine opens it when the run starts. ``RetryPolicy`` never retries a
    ``BudgetExceeded``; any other retry's first model call is refused at once.

    Args:
        max_model_calls: model calls the run may make (None = no limit).
        max_tool_calls: guarded tool calls the run may make.
        per_tool: a limit per tool name, counted beside ``max_tool_calls``.
        max_input_tokens: input tokens the run's model calls may use, from their usage.
        max_output_tokens: output tokens they may use.
        max_cost_usd: dollars they may cost, computed from ``prices``; a model call whose
            model has no price (and no ``"*"`` price) ends the run: its cost is unknown.
        prices: USD per token, per model name and token kind (``input_tokens``,
            ``output_tokens``); the model ``"*"`` prices every model not named.
        scope: ``"run"``: each run given this budget counts on its own (a delegated
            subagent or nested dispatch given it again starts at zero); ``"tree"``: one
            count for the run and every run started inside it that is given it again.
        enforce: False = audit mode: nothing is refused or ended; each "would exceed" is
            recorded (``HookOutcome.audited`` of the tool call, the span, the run's
            budget report).

    Raises:
        TypeError: a limit that is not a number (or not a whole one for counts).
        ValueError: a negative limit, a price for an unknown token kind, an unknown
            scope, or ``max_cost_usd`` without ``prices``.
    """

    __slots__ = ("enforce", "limits", "per_tool", "prices", "scope")

    def __init__(
        self,
        max_model_calls: int | None = None,
        max_tool_calls: int | None = None,
        per_tool: Mapping[str, int] | None = None,
        max_input_tokens: int | None = None,
        max_output_tokens: int | None = None,
        max_cost_usd: float | None = None,
        prices: Mapping[str, Mapping[str, float]] | None = None,
        scope: BudgetScope = "run",
        enforce: bool = True,
    ) -> None:
        given = {
            "max_model_calls": max_model_calls,
            "max_tool_calls": max_tool_calls,
            "max_input_tokens": max_input_tokens,
            "max_output_tokens": max_output_tokens,
            "max_cost_usd": max_cost_usd,
        }
        limits: dict[str, float] = {}
        for name, value in given.items():
            checked = _number(name, value, whole=name != "max_cost_usd")
            if checked is not None:
                limits[LIMITS[name]] = checked
        if scope not in ("run", "tree"):
            raise ValueError(f"Budget scope must be 'run' or 'tree', got {scope!r}")
        if not isinstance(enforce, bool):
            raise TypeError(f"Budget enforce must be a bool, got {enforce!r}")
        object.__setattr__(self, "limits", MappingProxyType(limits))
        object.__setattr__(self, "per_tool", _per_tool(per_tool))
        object.__setattr__(self, "prices", _prices(prices))
        object.__setattr__(self, "scope", scope)
        object.__setattr__(self, "enforce", enforce)
        if max_cost_usd is not None and not self.prices:
            raise ValueError("Budget max_cost_usd needs prices= (USD per token, per model)")

    limits: Mapping[str, float]
    """The limits set, by kind (``model_calls``, ``tool_calls``, ``input_tokens``, ...)."""
    per_tool: Mapping[str, int]
    """The limit of each tool named in ``per_tool``."""
    prices: Mapping[str, Mapping[str, float]]
    """USD per token, by model and token kind."""
    scope: BudgetScope
    """``"run"`` or ``"tree"``."""
    enforce: bool
    """False in audit mode."""

    @classmethod
    def from_mapping(cls, fields: Mapping[str, Any]) -> Budget:
        """A Budget from a ``budget:`` mapping (the keyword arguments' names).

        Raises:
            ValueError: an unknown key (named, with the closest known one), or what
                ``Budget(...)`` refuses.
            TypeError: what ``Budget(...)`` refuses.
        """
        check_budget_fields(fields)
        return cls(**fields)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Budget is frozen: cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"Budget is frozen: cannot delete {name!r}")

    def __repr__(self) -> str:
        parts = [f"max_{kind}={limit!r}" for kind, limit in self.limits.items()]
        if self.per_tool:
            parts.append(f"per_tool={dict(self.per_tool)!r}")
        if self.scope != "run":
            parts.append(f"scope={self.scope!r}")
        if not self.enforce:
            parts.append("enforce=False")
        return f"Budget({', '.join(parts)})"

    def price(self, model: str | None) -> Mapping[str, float] | None:
        """The prices of ``model`` (or of ``"*"``), None if it has none."""
        if model is not None and model in self.prices:
            return self.prices[model]
        return self.prices.get("*")
