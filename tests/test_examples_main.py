"""``examples/main_demo.py`` (``make demo``) runs end to end and its trace says what happened."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orchestra.tracing as ot

ROOT = Path(__file__).resolve().parent.parent


def test_main_demo(tmp_path: Path) -> None:
    env = {**os.environ, "COLUMNS": "200"}
    env.pop("ORCHESTRA_TRACING", None)
    env.pop("ORCHESTRA_CAPTURE_CONTENT", None)
    out = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "main_demo.py"), "--out", str(tmp_path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    text = out.stdout
    assert "ok: 5 tasks" in text
    assert "retried 2" in text
    assert "delegate to librarian by Router.on_failure" in text
    assert "destructive command refused by the demo guard" in text

    spans = ot.read_jsonl(tmp_path / "demo-trace.jsonl")
    assert len({s["traceId"] for s in spans}) == 1  # one trace for the whole run
    by_id = {s["spanId"]: s for s in spans}
    (run,) = [s for s in spans if s["name"] == "run research-report"]
    for span in spans:  # every span descends from the run span
        node = span
        while node is not run:
            node = by_id[node["parentSpanId"]]

    def attrs(span: dict[str, Any]) -> dict[str, Any]:
        return ot.decode_attributes(span["attributes"])

    sources = sorted(
        (s for s in spans if s["name"] == "task sources"),
        key=lambda s: int(attrs(s)[ot.ATTR_TASK_ATTEMPT]),
    )
    assert [attrs(s)[ot.ATTR_TASK_STATE] for s in sources] == ["retrying", "retrying", "succeeded"]
    assert sources[1]["links"][0]["spanId"] == sources[0]["spanId"]
    assert attrs(sources[0])[ot.ATTR_DECISION_BY] == "RetryPolicy.on_failure"

    (researcher,) = [s for s in spans if s["name"] == "invoke_agent researcher"]
    assert attrs(researcher)[ot.ATTR_DECISION] == "delegate"
    assert attrs(researcher)[ot.ATTR_DECISION_AGENT] == "librarian"
    (librarian,) = [s for s in spans if s["name"] == "invoke_agent librarian"]
    assert attrs(librarian)[ot.GEN_AI_OPERATION_NAME] == "invoke_agent"
    assert attrs(librarian)[ot.ATTR_AGENT_DELEGATED_FROM] == ["researcher"]

    tools = [s for s in spans if s["name"] == "execute_tool Bash"]
    assert sorted(attrs(s)[ot.ATTR_TOOL_DECISION] for s in tools) == ["allow", "deny"]
    (blocked,) = [
        s
        for s in spans
        if s["name"] == "hook PreToolUse" and attrs(s).get(ot.ATTR_DECISION) == "block"
    ]
    assert str(attrs(blocked)[ot.ATTR_DECISION_BY]).endswith("orchestra.yaml:8")

    # content capture is off by default: no tool input, prompt or output on any span
    dump = json.dumps(spans)
    assert "rm -rf notes" not in dump
    assert "octopus" not in dump
    assert ot.GEN_AI_TOOL_CALL_ARGUMENTS not in dump
    assert ot.GEN_AI_INPUT_MESSAGES not in dump
