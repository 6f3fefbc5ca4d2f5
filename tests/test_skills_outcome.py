"""``plain_outcome``: a lone hook's decision read without a ``Combiner``, as one folds it."""

from __future__ import annotations

from typing import Any

import attrs
from hypothesis import given
from hypothesis import strategies as st

from orchestra.skills import CommandHook, HookResult
from orchestra.skills._firing.chain import combiner_for
from orchestra.skills._firing.merge import plain_outcome
from orchestra.skills._firing.outcome import HookRecord
from orchestra.skills._protocol.catalog import EVENTS

REASONS = st.sampled_from([None, "", "  ", " why ", "because"])
DECISIONS = st.sampled_from([None, "allow", "deny", "ask", "block"])
PLAIN = st.builds(HookResult, decision=DECISIONS, reason=REASONS)  # the common answers
PLAIN_DEFAULTS = HookResult()
RESULTS = st.builds(
    HookResult,
    decision=DECISIONS,
    reason=REASONS,
    modified_input=st.sampled_from([None, {"command": "ls"}]),
    messages=st.sampled_from([(), ("context",)]),
    stop=st.booleans(),
    stop_reason=REASONS,
    system_message=st.sampled_from([None, "", "for the user"]),
    output=st.sampled_from([None, "mocked"]),
    retry=st.booleans(),
    exit_code=st.sampled_from([None, 0]),
    stderr=st.sampled_from(["", "noise"]),
)


@given(
    st.sampled_from(sorted(EVENTS)),
    st.one_of(PLAIN, RESULTS, st.none()),
    st.sampled_from(["continue", "block"]),
    st.sampled_from([{}, {"tool_input": {"command": "rm"}}]),
)
def test_a_plain_record_reads_as_a_combiner_folds_it(
    event: str, result: HookResult | None, on_error: str, payload: dict[str, Any]
) -> None:
    hook = CommandHook(event=event, command="true", on_error=on_error)  # type: ignore[arg-type]
    error = None if result is not None else "exited 1"
    record = HookRecord(hook, result, error, None, "", 0.01)
    combiner = combiner_for(EVENTS[event], payload)
    combiner.add(record)
    folded = combiner.outcome()
    plain = plain_outcome(EVENTS[event], record)
    assert plain is None or plain == folded
    if result is not None and result == attrs.evolve(
        PLAIN_DEFAULTS, decision=result.decision, reason=result.reason
    ):
        # a decision alone (or none) is read without a Combiner where it counts
        assert (plain is not None) == (result.decision is None or EVENTS[event].can_block)
