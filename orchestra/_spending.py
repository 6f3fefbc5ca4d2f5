"""What runs spend against their budgets: one ``Spending`` per run (or tree), ambient.

An engine opens the budgets among its hooks when a run starts (``spending(hooks)``):
each ``Budget`` gets a ``Spending``, the one owner of its counts, and the run's context
carries the open ones, so every model call and guarded tool call made inside the run
(in task bodies, agents, worker threads: they copy the context) is charged to them
without being handed anything. The charging points are few and public to bridges
through ``orchestra.skills.StepEvents`` (model calls) and the guarded tool call (tool
calls); each costs one context-variable read when no budget is open.

``scope="run"``: a run given a Budget that an enclosing run already counts gets a count
of its own, which hides the enclosing one (a delegated subagent, a nested dispatch);
``scope="tree"``: it goes on counting in the enclosing one.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Final, TypeAlias, final

import attrs

from orchestra._budget import KINDS, TOKEN_KINDS, Budget
from orchestra._errors import BudgetExceeded
from orchestra.tracing._engine import set_budget_use

if TYPE_CHECKING:
    from opentelemetry.trace import Span

__all__ = [
    "Audits",
    "BudgetUse",
    "RunBudgets",
    "Spending",
    "active",
    "budgets_of",
    "charge_model_end",
    "charge_model_start",
    "charge_tool",
    "charged_by_caller",
    "enter_budgets",
    "open_budgets",
    "open_spending",
    "spending",
]

_LABELS: Final = {
    "model_calls": "model calls",
    "tool_calls": "tool calls",
    "input_tokens": "input tokens",
    "output_tokens": "output tokens",
    "cost_usd": "cost USD",
}

_OPEN: Final[contextvars.ContextVar[tuple[Spending, ...]]] = contextvars.ContextVar(
    "orchestra_spending", default=()
)


def _shown(value: float) -> str:
    return f"{value:.4f}".rstrip("0").rstrip(".") if isinstance(value, float) else str(value)


@final
@attrs.frozen
class BudgetUse:
    """What one run spent of one ``Budget``: the figures a result, a span and a report show.

    Attributes:
        budget: the budget.
        used: what was used, by kind (``model_calls``, ``tool_calls``, ``input_tokens``,
            ``output_tokens``, ``cost_usd``), also the kinds it has no limit for.
        per_tool: the calls of each tool ``per_tool`` names.
        would_exceed: in audit mode (``enforce=False``), the reason of each call that
            would have been refused or ended the run, in order; empty when enforced.
        exceeded: the reason of the refusal or end that the budget enforced, if any
            (the first one).
    """

    budget: Budget
    used: Mapping[str, float]
    per_tool: Mapping[str, int]
    would_exceed: tuple[str, ...] = ()
    exceeded: str | None = None

    def attributes(self) -> dict[str, float]:
        """``orchestra.budget.<kind>.used`` and ``.limit`` of the kinds with a limit."""
        out: dict[str, float] = {}
        for kind, limit in self.budget.limits.items():
            out[f"orchestra.budget.{kind}.used"] = self.used[kind]
            out[f"orchestra.budget.{kind}.limit"] = limit
        return out


@final
class Spending:
    """The counts of one Budget in one run (or tree): their only writer.

    Thread-safe: guarded ``def`` tools and LangChain's sync callbacks charge it from
    worker threads.
    """

    __slots__ = ("_exceeded", "_lock", "_per_tool", "_used", "_would", "budget")

    def __init__(self, budget: Budget) -> None:
        self.budget = budget
        self._lock = threading.Lock()
        self._used: dict[str, float] = dict.fromkeys(KINDS, 0)
        self._per_tool: dict[str, int] = dict.fromkeys(budget.per_tool, 0)
        self._would: list[str] = []
        self._exceeded: str | None = None

    def use(self) -> BudgetUse:
        """What was spent so far."""
        with self._lock:
            return BudgetUse(
                self.budget,
                dict(self._used),
                dict(self._per_tool),
                tuple(self._would),
                self._exceeded,
            )

    def _over(self, reason: str) -> bool:
        """Note a limit reached; True when it is enforced (the call must not go on)."""
        if self.budget.enforce:
            if self._exceeded is None:
                self._exceeded = reason
            return True
        self._would.append(f"would exceed: {reason}")
        return False

    def tool(self, name: str) -> tuple[str | None, tuple[str, ...]]:
        """Charge a call of ``name``: the refusal (None: charged), the refusals audited."""
        limits = self.budget.limits
        would: tuple[str, ...] = ()
        with self._lock:
            used = self._used["tool_calls"]
            limit = limits.get("tool_calls")
            if limit is not None and used >= limit:
                reason = f"budget: tool calls {_shown(used)}/{_shown(limit)}"
                if self._over(reason):
                    return reason, ()
                would += (reason,)
            own = self.budget.per_tool.get(name)
            if own is not None and self._per_tool[name] >= own:
                reason = f"budget: calls of tool {name!r} {self._per_tool[name]}/{own}"
                if self._over(reason):
                    return reason, ()
                would += (reason,)
            self._used["tool_calls"] = used + 1
            if own is not None:
                self._per_tool[name] += 1
        return None, would

    def model_start(self, model: str | None) -> BudgetExceeded | None:
        """Charge one model call about to be made: the error that ends the run, or None."""
        limits = self.budget.limits
        with self._lock:
            for kind in ("model_calls", *TOKEN_KINDS, "cost_usd"):
                limit = limits.get(kind)
                if limit is not None and self._used[kind] >= limit:
                    error = self._error(kind, limit)
                    if self._over(error.reason):
                        return error
            if "cost_usd" in limits and self.budget.price(model) is None:
                reason = f"budget: no price for model {model!r}: its cost is unknown"
                if self._over(reason):
                    return BudgetExceeded(
                        reason, kind="cost_usd", used=self._used["cost_usd"], limit=0.0
                    )
            self._used["model_calls"] += 1
        return None

    def model_end(
        self, model: str | None, usage: Mapping[str, int | None]
    ) -> BudgetExceeded | None:
        """Charge a model call's usage: the error if it crossed a limit, else None."""
        price = self.budget.price(model) or {}
        with self._lock:
            for kind in TOKEN_KINDS:
                tokens = usage.get(kind) or 0
                self._used[kind] += tokens
                self._used["cost_usd"] += tokens * price.get(kind, 0.0)
            for kind, limit in self.budget.limits.items():
                if kind in ("model_calls", "tool_calls") or self._used[kind] <= limit:
                    continue
                error = self._error(kind, limit)
                if self._over(error.reason):
                    return error
        return None

    def _error(self, kind: str, limit: float) -> BudgetExceeded:
        used = self._used[kind]
        reason = f"budget: {_LABELS[kind]} {_shown(used)}/{_shown(limit)}"
        return BudgetExceeded(reason, kind=kind, used=used, limit=limit)


def budgets_of(hooks: Iterable[object]) -> tuple[Budget, ...]:
    """The ``Budget`` objects among ``hooks``, and those hook objects carry, in order.

    A hook object carries budgets in a ``budgets`` attribute (a registry's adapters carry
    the ``budget:`` of its files).
    """
    out: list[Budget] = []
    for hook in hooks:
        if isinstance(hook, Budget):
            out.append(hook)
        else:
            out.extend(b for b in getattr(hook, "budgets", ()) if isinstance(b, Budget))
    return tuple(out)


def open_spending(budgets: Iterable[Budget]) -> tuple[tuple[Spending, ...], tuple[Spending, ...]]:
    """The spendings a run of ``budgets`` charges, and those of them it opened itself.

    A tree-scoped budget already counted by an enclosing run goes on in that count; any
    other gets a new one, which hides an enclosing count of the same budget.
    """
    current = _OPEN.get()
    opened: list[Spending] = []
    kept = list(current)
    for budget in budgets:
        enclosing = next((s for s in current if s.budget is budget), None)
        if enclosing is not None and budget.scope == "tree":
            continue
        if enclosing is not None:
            kept.remove(enclosing)
        opened.append(Spending(budget))
    return (*kept, *opened), tuple(opened)


@contextlib.contextmanager
def spending(budgets: Iterable[Budget]) -> Iterator[tuple[Spending, ...]]:
    """Charge what runs inside the block to ``budgets``; yields the spendings opened here.

    With no budget, nothing changes (and nothing is allocated but the empty tuple).
    """
    budgets = tuple(budgets)
    if not budgets:
        yield ()
        return
    active, opened = open_spending(budgets)
    token = _OPEN.set(active)
    try:
        yield opened
    finally:
        _OPEN.reset(token)


def active() -> tuple[Spending, ...]:
    """The spendings open in the current context (empty: no budget counts here)."""
    return _OPEN.get()


_CHARGED: Final[contextvars.ContextVar[str | None]] = contextvars.ContextVar(
    "orchestra_charged_call", default=None
)  # a call an engine charged, whose body (a guarded tool) must not be charged again


def charged_by_caller(name: str | None) -> None:
    """Say the call of ``name`` about to run was charged by its engine (None: it ended)."""
    if name is not None or _CHARGED.get() is not None:
        _CHARGED.set(name)


Audits: TypeAlias = tuple[tuple[Budget, str], ...]  # (budget, why) refused in audit mode


def charge_tool(name: str, *, inner: bool = False) -> tuple[str | None, Audits]:
    """Charge one call of the tool ``name``.

    Args:
        name: the tool.
        inner: the call is a guarded function's, which may be the body of a call its
            engine charged already (``charged_by_caller``): then it is not charged again.

    Returns:
        A refusal's reason (None: it goes on), and what audit-mode budgets refused.
    """
    if inner and _CHARGED.get() == name:
        _CHARGED.set(None)
        return None, ()
    refusal: str | None = None
    audits: Audits = ()
    for owner in _OPEN.get():
        reason, would = owner.tool(name)
        if reason is not None and refusal is None:
            refusal = reason
        audits += tuple((owner.budget, why) for why in would)
    return refusal, audits


def charge_model_start(model: str | None) -> None:
    """Charge a model call about to be made.

    Raises:
        BudgetExceeded: a budget has no room for it: the call must not be made.
    """
    for owner in _OPEN.get():
        error = owner.model_start(model)
        if error is not None:
            raise error


def charge_model_end(model: str | None, usage: Mapping[str, int | None]) -> None:
    """Charge a model call's usage (``input_tokens``, ``output_tokens``).

    Raises:
        BudgetExceeded: the call crossed a limit: the run must end now.
    """
    crossed: BudgetExceeded | None = None
    for owner in _OPEN.get():
        error = owner.model_end(model, usage)
        if error is not None and crossed is None:
            crossed = error
    if crossed is not None:
        raise crossed


@final
class RunBudgets:
    """The budgets one run opened (``orchestra.bridge.open_budgets``): what they spent.

    Attributes:
        spent: the counts the run opened, one per budget (empty: the run has none).
    """

    __slots__ = ("spent",)

    def __init__(self, spent: tuple[Spending, ...]) -> None:
        self.spent = spent

    def __bool__(self) -> bool:
        return bool(self.spent)

    def uses(self) -> tuple[BudgetUse, ...]:
        """What the run spent of each of its budgets so far, in order."""
        return tuple(owner.use() for owner in self.spent)

    @contextlib.contextmanager
    def charging(self) -> Iterator[None]:
        """Charge what runs inside the block to these counts again.

        For an engine whose run has no block of its own to open them in: it calls back
        (a hook callback of the SDK, a hook of the framework) in contexts that are not the
        one the budgets were opened in. With no budget, it changes nothing.
        """
        if not self.spent:
            yield
            return
        mine = {id(owner.budget) for owner in self.spent}  # they hide enclosing counts of theirs
        kept = tuple(s for s in _OPEN.get() if id(s.budget) not in mine)
        token = _OPEN.set((*kept, *self.spent))
        try:
            yield
        finally:
            _OPEN.reset(token)

    def annotate(self, span: Span | None) -> None:
        """Put the figures on the run's ``span`` (``orchestra.budget.<kind>.used``...)."""
        if self.spent and span is not None:
            set_budget_use(span, self.uses())


@contextlib.contextmanager
def open_budgets(hooks: Iterable[object] = (), registry: object = None) -> Iterator[RunBudgets]:
    """Charge the model and tool calls made inside the block to a run's budgets.

    A bridge opens it around each agent or graph run with the hooks and registry it was
    given itself (not the ambient ones it inherits: a run inside a run that is not given
    the budget counts toward the enclosing run's). The budgets are the ``Budget`` objects
    among ``hooks`` and the registry's ``budgets`` (its files' ``budget:``). With none,
    it costs one tuple and changes nothing.

    Args:
        hooks: the run's own hook objects.
        registry: the run's own ``HookRegistry``, or None.
    """
    budgets = budgets_of((*hooks, registry) if registry is not None else hooks)
    with spending(budgets) as spent:
        yield RunBudgets(spent)


def enter_budgets(budgets: Iterable[Budget]) -> RunBudgets:
    """Open ``budgets`` in the current context for good, as ``open_budgets`` opens them.

    For an engine that runs each run in a context of its own (``contextvars.Context.run``),
    where a ``with`` block cannot span the run. The counts end with that context.
    """
    budgets = tuple(budgets)
    if not budgets:
        return RunBudgets(())
    active, opened = open_spending(budgets)
    _OPEN.set(active)
    return RunBudgets(opened)
