"""Properties of aggregation: any sequence of answers combines as the contract says."""

from __future__ import annotations

from typing import Literal

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestra.skills import EVENTS, HookOutcome, HookRegistry, HookSpec, PermissionHook, PromptHook

Answer = Literal["allow", "deny", "ask"] | None

answers = st.lists(st.sampled_from(["allow", "deny", "ask", None]), max_size=8)


def spec(event: str, line: int, answer: Answer) -> HookSpec:
    common = {"event": event, "matcher": None, "timeout": 10.0, "file": "h.yaml", "line": line}
    if answer is None:
        return PromptHook(prompt=f"m{line}", on_error="continue", **common)
    return PermissionHook(decision=answer, reason=f"r{line}", on_error="block", **common)


def fire(event: str, specs: list[HookSpec], backend: str) -> HookOutcome:
    registry = HookRegistry(specs, project_dir=".")
    return anyio.run(registry.fire, event, {"tool_name": "Bash"}, backend=backend)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@settings(max_examples=60, deadline=None)
@given(sequence=answers)
def test_first_deny_ends_the_chain_and_deny_beats_ask_beats_allow(
    backend: str, sequence: list[Answer]
) -> None:
    outcome = fire(
        "PreToolUse", [spec("PreToolUse", i, a) for i, a in enumerate(sequence)], backend
    )
    ran = sequence[: sequence.index("deny") + 1] if "deny" in sequence else sequence
    assert len(outcome.records) == len(ran)
    assert outcome.messages == tuple(f"m{i}" for i, a in enumerate(ran) if a is None)
    for kind in ("deny", "ask", "allow"):
        if kind in ran:
            first = ran.index(kind)
            assert (outcome.decision, outcome.reason) == (kind, f"r{first}")
            assert outcome.decided_by == f"h.yaml:{first}"
            break
    else:
        assert (outcome.decision, outcome.reason, outcome.decided_by) == (None, None, None)
    assert outcome.blocked == (outcome.decision == "deny")


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@settings(max_examples=30, deadline=None)
@given(count=st.integers(min_value=0, max_value=6))
def test_events_that_cannot_block_keep_config_order_and_never_block(
    backend: str, count: int
) -> None:
    assert not EVENTS["PostToolUse"].can_block
    specs = [spec("PostToolUse", i, None) for i in range(count)]
    outcome = fire("PostToolUse", specs, backend)
    assert outcome.messages == tuple(f"m{i}" for i in range(count))
    assert (outcome.blocked, outcome.decision) == (False, None)
