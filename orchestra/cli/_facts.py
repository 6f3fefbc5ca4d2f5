"""What a span of a trace file says, as styled text segments (internal).

State, attempt, hook, agent, tool, decisions and who took them, errors: one ``Fact``
each, as ``orchestra trace show`` prints them and ``orchestra trace report`` draws them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from orchestra.cli._tracefile import SpanNode
from orchestra.tracing import names as n

__all__ = ["Fact", "facts", "folded_facts"]

_QUIET_DECISIONS: Final = frozenset({"allow"})

Fact = list[tuple[str, str]]
"""One thing a span says, as (text, role) segments; roles: ``state-<state>``, ``ok``,
``bad``, ``decision``, ``decision-bad``, ``audit`` (a decision of a hook in audit mode,
which changed nothing), ``who``, ``dim``, ``error`` or ``""``."""


def _decision(attributes: Mapping[str, Any]) -> Fact | None:
    kind = attributes.get(n.ATTR_DECISION)
    if kind is None:
        return None
    bad = "decision-bad" if kind in ("fail", "deny", "block") else "decision"
    if attributes.get(n.ATTR_HOOK_ENFORCED) is False:  # audit mode: it changed nothing
        fact: Fact = [("audit", "audit"), (" would ", ""), (str(kind), "decision")]
    else:
        fact = [(str(kind), bad)]
    delay = attributes.get(n.ATTR_DECISION_DELAY)
    if delay:
        fact.append((f" after {delay:g} s", ""))
    agent = attributes.get(n.ATTR_DECISION_AGENT)
    if agent:
        fact.append((f" to {agent}", ""))
    by = attributes.get(n.ATTR_DECISION_BY)
    if by:
        fact += [(" by ", ""), (str(by), "who")]
    reason = attributes.get(n.ATTR_DECISION_REASON)
    if reason:
        fact.append((f": {reason}", ""))
    return fact


def _state_facts(node: SpanNode, attempts: Mapping[str, int]) -> list[Fact]:
    """A task's state, a run's outcome, the attempt (and which one it follows)."""
    a = node.attributes
    out: list[Fact] = []
    state = a.get(n.ATTR_TASK_STATE)
    if state is not None:
        out.append([(str(state), f"state-{state}")])
    if n.ATTR_RUN_OK in a:
        ok = bool(a[n.ATTR_RUN_OK])
        out.append([("ok" if ok else "failed", "ok" if ok else "bad")])
        if a.get(n.ATTR_RUN_FAILED):
            out.append([(f"{a[n.ATTR_RUN_FAILED]} task(s) not ok", "error")])
    attempt = a.get(n.ATTR_TASK_ATTEMPT, a.get(n.ATTR_AGENT_ATTEMPT))
    if attempt is not None:
        fact: Fact = [(f"attempt {attempt}", "")]
        previous = [attempts[s] for s in node.links if s in attempts]
        if previous:
            fact.append((f" (after {previous[0]})", "dim"))
        out.append(fact)
    return out


def _hook_facts(a: Mapping[str, Any]) -> list[Fact]:
    """A hook call's type, who it is, its exit code."""
    out: list[Fact] = []
    if n.ATTR_HOOK_TYPE in a:
        fact: Fact = [(str(a[n.ATTR_HOOK_TYPE]), "dim")]
        name = a.get(n.ATTR_HOOK_NAME)
        if name and a[n.ATTR_HOOK_TYPE] == "python":
            fact.append((f" {name}", "who"))
        source = a.get(n.ATTR_HOOK_SOURCE)
        if source:
            fact.append((f" {source}", "who"))
        out.append(fact)
    if n.ATTR_PROCESS_EXIT_CODE in a:
        out.append([(f"exit {a[n.ATTR_PROCESS_EXIT_CODE]}", "")])
    return out


def _agent_facts(a: Mapping[str, Any]) -> list[Fact]:
    """A dispatch's mode and delegations, a guarded tool's decision."""
    out: list[Fact] = []
    mode = a.get(n.ATTR_AGENT_MODE)
    if mode is not None:
        out.append([(str(mode), "dim")])
    delegated = a.get(n.ATTR_AGENT_DELEGATED_FROM)
    if delegated:
        out.append([("delegated from " + ", ".join(map(str, delegated)), "dim")])
    tool_decision = a.get(n.ATTR_TOOL_DECISION)
    if tool_decision is not None:
        out.append([(str(tool_decision), "ok" if tool_decision == "allow" else "bad")])
    return out


def _error_facts(node: SpanNode) -> list[Fact]:
    """The hook errors recorded on the span, and its own error (not a run's: it has ok)."""
    out: list[Fact] = [
        [
            (
                f"hook error in {event.get(n.ATTR_HOOK_NAME)}: "
                f"{event.get('exception.message', '')}",
                "error",
            )
        ]
        for name, event in node.events
        if name == n.EVENT_HOOK_ERROR
    ]
    error = node.error
    if error is not None and n.ATTR_RUN_OK not in node.attributes:
        out.append([(error, "error")])
        frame = node.failing_frame
        if frame is not None:
            out.append([(f"at {frame.where}", "dim")])
    return out


def facts(node: SpanNode, attempts: Mapping[str, int]) -> list[Fact]:
    """What one span says: state, attempt, hook, agent, tool, decision, errors.

    ``attempts`` maps task-attempt span ids to their attempt number, to say which
    attempt a retry follows.
    """
    a = node.attributes
    out = _state_facts(node, attempts) + _hook_facts(a) + _agent_facts(a)
    decision = _decision(a)
    if decision is not None:
        out.append(decision)
    return out + _error_facts(node)


def folded_facts(node: SpanNode, hooks: Sequence[SpanNode]) -> list[Fact]:
    """What the hook calls folded into ``node``'s line add to it.

    Their count, the decisions they took that ``node`` does not already show (an
    ``allow`` is not news), and their errors.
    """
    if not hooks:
        return []
    out: list[Fact] = [[(f"+{len(hooks)} hook call{'s' if len(hooks) > 1 else ''}", "dim")]]
    shown = {(node.attributes.get(n.ATTR_DECISION), node.attributes.get(n.ATTR_DECISION_BY))}
    for hook in hooks:
        a = hook.attributes
        key = (a.get(n.ATTR_DECISION), a.get(n.ATTR_DECISION_BY))
        if key[0] is not None and key[0] not in _QUIET_DECISIONS and key not in shown:
            shown.add(key)
            decision = _decision(a)
            if decision is not None:
                out.append(decision)
        if hook.error is not None:
            out.append([(f"{hook.name} failed: {hook.error}", "error")])
    return out
