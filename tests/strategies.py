"""Hypothesis strategies shared by the property tests."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from orchestra import Fail, Retry, Skip

TRIGGERS = (
    "all_success",
    "all_done",
    "none_failed",
    "none_failed_min_one_success",
    "one_success",
    "one_failed",
    "all_failed",
    "all_skipped",
    "always",
)


@st.composite
def dag_specs(draw: st.DrawFn, max_tasks: int = 14) -> list[dict[str, Any]]:
    """Random DAG specs: each task names deps among earlier ones, a trigger, a script."""
    n = draw(st.integers(1, max_tasks))
    specs = []
    for i in range(n):
        deps = draw(st.lists(st.integers(0, i - 1), unique=True, max_size=3)) if i else []
        specs.append(
            {
                "id": f"t{i}",
                "deps": [f"t{d}" for d in deps],
                "trigger": draw(st.sampled_from(TRIGGERS)),
                "run_on_fail_fast": draw(st.booleans()),
                "retries": draw(st.integers(0, 2)),
                # per attempt: does the body fail? (past the list: it succeeds)
                "fails": draw(st.lists(st.booleans(), max_size=4)),
                "suspend": draw(st.booleans()),
                "before": draw(
                    st.lists(st.sampled_from([None, None, None, Skip("s"), Fail("f")]), max_size=3)
                ),
                "on_failure": draw(
                    st.lists(
                        st.sampled_from([None, Retry(0), Retry(0), Skip("s"), Fail("f")]),
                        max_size=4,
                    )
                ),
            }
        )
    return specs
