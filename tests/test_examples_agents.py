"""The subagents example runs and tells its story."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).parent.parent / "examples" / "agents_research.py"


def test_agents_research_example() -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLE)], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    # The flaky agent was retried twice by the RetryPolicy, then answered.
    assert out.count("web_search failed: ConnectionError: search API timed out") == 2
    assert "web_search answered after 3 attempts" in out
    # The failing agent was delegated to the fallback.
    assert "paper_db   failed: ServiceDown" in out
    assert "library    attempt 1 (SYNC, from research, delegated from paper_db)" in out
    assert "paper_db   was down; delegated to library, which answered after 1 attempt" in out
    # The slow one was forked.
    assert "archivist  attempt 1 (FORK, from planner)" in out
    assert "archivist  forked; answered after 1 attempt" in out
    # The DAG task executed by an agent shows its executor; the join task ran last.
    assert "task   web      starts (executed by agent web_search)" in out
    lines = out.splitlines()
    assert lines.index("  task   answer   starts") > lines.index("  task   papers   done")
    assert (
        "Run: ok; states: plan=succeeded, web=succeeded, papers=succeeded, answer=succeeded" in out
    )
    assert "Answer: two branchial hearts" in out
    assert "(cephalopod circulation has been described since Aristotle)" in out
