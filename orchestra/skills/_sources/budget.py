"""``budget:`` at the top of an orchestra file: the keys of ``orchestra.Budget``.

Each problem is reported at its own line (an unknown key, a negative number, a price for
an unknown token kind), with the field path, as every other load error::

    budget:
      max_tool_calls: 20
      per_tool: {web_search: 5}
      max_cost_usd: 0.5
      prices:
        gpt-4o: {input_tokens: 2.5e-6, output_tokens: 1.0e-5}
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from orchestra._budget import FIELDS, TOKEN_KINDS, Budget
from orchestra._errors import did_you_mean
from orchestra.skills._config.yaml import Map, kind

__all__ = ["read_budget"]

_Bad = Callable[[int, str, str], None]


def read_budget(value: Any, line: int, bad: _Bad) -> Budget | None:
    """The file's ``Budget``, or None after reporting each problem through ``bad``."""
    if not isinstance(value, Map):
        bad(line, "budget", f"expected a mapping of budget keys, got {kind(value)}")
        return None
    fine = True
    for key, field in value.items():
        where = f"budget.{key}"
        at = value.lines[key]
        if key not in FIELDS:
            bad(at, where, f"unknown budget key{did_you_mean(key, FIELDS)}")
            fine = False
        elif key == "prices":
            fine = _prices(field, at, bad) and fine
        else:
            fine = _alone(key, field, at, bad) and fine
    if not fine:
        return None
    try:
        return Budget.from_mapping(dict(value))
    except (TypeError, ValueError) as error:  # what only the keys together can say
        bad(line, "budget", str(error))
        return None


def _alone(key: str, field: Any, line: int, bad: _Bad) -> bool:
    """Check one key as ``Budget`` does, at its own line."""
    others: dict[str, Any] = {"prices": {"*": {}}} if key == "max_cost_usd" else {}
    try:
        Budget(**{key: field, **others})
    except (TypeError, ValueError) as error:
        bad(line, f"budget.{key}", str(error))
        return False
    return True


def _prices(field: Any, line: int, bad: _Bad) -> bool:
    """Each model's prices, each token kind at its own line."""
    if not isinstance(field, Map):
        return _alone("prices", field, line, bad)
    fine = True
    for model, kinds in field.items():
        where = f"budget.prices.{model}"
        if isinstance(kinds, Map):
            for token_kind in kinds:
                if token_kind not in TOKEN_KINDS:
                    hint = did_you_mean(str(token_kind), TOKEN_KINDS)
                    message = f"unknown token kind{hint} (known: {', '.join(TOKEN_KINDS)})"
                    bad(kinds.lines[token_kind], f"{where}.{token_kind}", message)
                    fine = False
        if fine:
            fine = _alone("prices", {model: kinds}, field.lines[model], bad)
    return fine
