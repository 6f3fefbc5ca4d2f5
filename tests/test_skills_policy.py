"""Trying a policy: hooks in audit mode (enforce: false), recorded events, replay."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import orchestra.tracing as ot
from orchestra import ConfigError
from orchestra.cli import main
from orchestra.skills import CommandHook, HookRegistry, load

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parent.parent

# A guard in the style of the hooks docs: exit 2 with the reason on stderr.
NO_RM = """\
#!/bin/sh
if grep -q 'rm -rf'; then echo "no rm -rf" >&2; exit 2; fi
"""
# The stricter guard a team wants to try: also no curl.
NO_RM_NO_CURL = """\
#!/bin/sh
input=$(cat)
case "$input" in *'rm -rf'*) echo "no rm -rf" >&2; exit 2;; esac
case "$input" in *curl*) echo "no curl" >&2; exit 2;; esac
"""


def write(path: Path, text: str, mode: int = 0o644) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    path.chmod(mode)
    return path


def guard_file(tmp_path: Path, name: str, script: str, *extra: str) -> Path:
    """An orchestra.yaml whose Bash guard runs ``script``; ``extra`` lines go on the hook."""
    write(tmp_path / f"{name}.sh", script, 0o755)
    lines = [
        "hooks:",
        "  PreToolUse:",
        "    - matcher: Bash",
        "      hooks:",
        "        - type: command",
        f'          command: "{tmp_path}/{name}.sh"',
        "          phase: guard",
        *(f"          {line}" for line in extra),
    ]
    return write(tmp_path / f"{name}.yaml", "\n".join(lines) + "\n")


def bash(command: str) -> dict[str, Any]:
    return {"tool_name": "Bash", "tool_input": {"command": command}}


async def test_an_unenforced_deny_leaves_the_outcome_allowed_and_is_kept(tmp_path: Path) -> None:
    registry = load(guard_file(tmp_path, "guard", NO_RM, "enforce: false"), project_dir=tmp_path)
    outcome = await registry.fire("PreToolUse", bash("rm -rf /"))
    assert not outcome.blocked
    assert outcome.decision is None
    assert outcome.reason is None
    (audited,) = outcome.audited
    assert audited.blocked
    assert audited.verdict == "deny"
    assert audited.reason == "no rm -rf"
    assert audited.hook.source.endswith("guard.yaml:5")
    assert outcome.records[0].note == "not enforced: would have been deny"
    # an enforced copy of the same guard denies
    enforced = load(guard_file(tmp_path, "guard2", NO_RM), project_dir=tmp_path)
    assert (await enforced.fire("PreToolUse", bash("rm -rf /"))).blocked


async def test_an_unenforced_guard_fails_closed_only_in_the_record(tmp_path: Path) -> None:
    crashing = "#!/bin/sh\nexit 7\n"
    registry = load(guard_file(tmp_path, "crash", crashing, "enforce: false"), project_dir=tmp_path)
    outcome = await registry.fire("PreToolUse", bash("ls"))
    assert not outcome.blocked
    (audited,) = outcome.audited
    assert audited.blocked  # a guard's error would have blocked (on_error: block)
    assert audited.error is not None
    assert "7" in audited.error


async def test_an_unenforced_deny_cancels_nothing_and_the_enforced_hooks_decide(
    tmp_path: Path,
) -> None:
    write(tmp_path / "deny.sh", NO_RM, 0o755)
    write(
        tmp_path / "allow.sh",
        """#!/bin/sh\necho '{"decision": "allow", "reason": "ok"}'\n""",
        0o755,
    )
    config = write(
        tmp_path / "orchestra.yaml",
        f"""
        hooks:
          PreToolUse:
            - matcher: Bash
              hooks:
                - type: command
                  command: "{tmp_path}/deny.sh"
                  phase: guard
                  enforce: false
                - type: command
                  command: "{tmp_path}/allow.sh"
                  phase: guard
        """,
    )
    outcome = await load(config, project_dir=tmp_path).fire("PreToolUse", bash("rm -rf /"))
    assert not outcome.blocked
    assert outcome.decision == "allow"
    assert outcome.reason == "ok"
    assert [a.verdict for a in outcome.audited] == ["deny"]
    assert len(outcome.records) == 2  # the enforced guard after it ran


async def test_a_whole_registry_in_audit_mode(tmp_path: Path) -> None:
    registry = load(guard_file(tmp_path, "guard", NO_RM), project_dir=tmp_path, enforce=False)
    assert all(not hook.enforce for hook in registry.hooks)
    outcome = await registry.fire("PreToolUse", bash("rm -rf /"))
    assert not outcome.blocked
    assert [a.verdict for a in outcome.audited] == ["deny"]
    # in Python, per hook
    hook = CommandHook(event="PreToolUse", command="exit 2", enforce=False)
    outcome = await HookRegistry([hook], project_dir=tmp_path).fire("PreToolUse", bash("ls"))
    assert not outcome.blocked
    assert outcome.audited[0].blocked


async def test_an_audited_hook_span_says_it_was_not_enforced(tmp_path: Path) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    ot.set_tracer_provider(provider)
    try:
        registry = load(guard_file(tmp_path, "g", NO_RM, "enforce: false"), project_dir=tmp_path)
        await registry.fire("PreToolUse", bash("rm -rf /"))
    finally:
        ot.set_tracer_provider(None)
    (span,) = [s for s in exporter.get_finished_spans() if s.name.startswith("hook")]
    attributes = dict(span.attributes or {})
    assert attributes[ot.ATTR_HOOK_ENFORCED] is False
    assert attributes[ot.ATTR_DECISION] in ("deny", "block")


def test_enforce_must_be_a_boolean(tmp_path: Path) -> None:
    config = guard_file(tmp_path, "guard", NO_RM, "enforce: maybe")
    with pytest.raises(ConfigError) as caught:
        load(config)
    assert "guard.yaml:" in str(caught.value)
    assert "enforce: expected true or false, got a string" in str(caught.value)


async def test_every_fired_event_is_recorded_one_json_line_each(tmp_path: Path) -> None:
    events = tmp_path / "events.jsonl"
    registry = load(guard_file(tmp_path, "guard", NO_RM), project_dir=tmp_path, record=events)
    await registry.fire("PreToolUse", bash("ls"))
    await registry.fire("PreToolUse", bash("rm -rf /"))
    await registry.fire("PreToolUse", {"tool_name": "Edit", "tool_input": {"file_path": "a"}})
    await registry.fire("Stop", {})  # an event no hook listens to is recorded too
    await registry.aclose()
    lines = [json.loads(line) for line in events.read_text().splitlines()]
    assert [line["event"] for line in lines] == ["PreToolUse"] * 3 + ["Stop"]
    assert lines[0]["payload"] == bash("ls")
    assert lines[0]["outcome"]["blocked"] is False
    assert lines[1]["outcome"] == {
        "decision": "deny",
        "blocked": True,
        "skip": False,
        "reason": "no rm -rf",
        "decided_by": lines[1]["outcome"]["decided_by"],
        "audited": [],
    }
    assert lines[1]["outcome"]["decided_by"].endswith("guard.yaml:5")
    assert all(line["v"] == 1 and line["time"].endswith("+00:00") for line in lines)


async def test_the_record_is_rotated_at_its_size_and_payloads_can_be_left_out(
    tmp_path: Path,
) -> None:
    events = tmp_path / "events.jsonl"
    registry = HookRegistry(record=events, record_max_bytes=1000)
    for i in range(40):
        await registry.fire("PreToolUse", bash(f"echo {i:03}"))
    rotated = events.with_name("events.jsonl.1")
    assert 500 < rotated.stat().st_size <= 1000
    assert 0 < events.stat().st_size <= 1000
    kept = [json.loads(line) for f in (rotated, events) for line in f.read_text().splitlines()]
    assert [k["payload"]["tool_input"]["command"] for k in kept][-1] == "echo 039"
    # without payloads: what was decided, but nothing to replay
    bare = tmp_path / "bare.jsonl"
    registry = HookRegistry(record=bare, record_payload=False)
    await registry.fire("PreToolUse", bash("secret"))
    assert "secret" not in bare.read_text()
    with pytest.raises(ConfigError, match=r"bare.jsonl:1: recorded without its payload"):
        await HookRegistry().replay(bare)


async def record(tmp_path: Path, commands: list[str]) -> Path:
    """Events recorded in production under the NO_RM guard."""
    events = tmp_path / "events.jsonl"
    registry = load(guard_file(tmp_path, "current", NO_RM), project_dir=tmp_path, record=events)
    for command in commands:
        await registry.fire("PreToolUse", bash(command))
    await registry.aclose()
    return events


COMMANDS = ["ls", "rm -rf /", "curl http://example.test/x.sh", "git status", "curl -s localhost"]


async def test_replay_against_a_stricter_file_lists_what_would_change(tmp_path: Path) -> None:
    events = await record(tmp_path, COMMANDS)
    stricter = load(guard_file(tmp_path, "stricter", NO_RM_NO_CURL), project_dir=tmp_path)
    seen = []
    report = await stricter.replay(events, on_change=seen.append)
    assert report.events == 5
    assert report.changed == 2
    assert [(c.line, c.subject, c.was, c.now) for c in report.changes] == [
        (3, "Bash curl http://example.test/x.sh", "none", "deny"),
        (5, "Bash curl -s localhost", "none", "deny"),
    ]
    assert all(c.reason == "no curl" for c in report.changes)
    assert all(c.decided_by and c.decided_by.endswith("stricter.yaml:5") for c in report.changes)
    assert seen == list(report.changes)
    assert report.summary() == "5 events replayed: 2 would change (2 none -> deny)"
    same = load(guard_file(tmp_path, "same", NO_RM), project_dir=tmp_path)
    assert (await same.replay(events)).ok


def cli(*args: str) -> Any:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_the_replay_command_gates_a_ci_job(tmp_path: Path, anyio_backend: str) -> None:
    events = anyio.run(record, tmp_path, COMMANDS, backend=anyio_backend)
    stricter = guard_file(tmp_path, "stricter", NO_RM_NO_CURL)
    out = cli("hooks", "replay", str(events), str(stricter), "--trust-all")
    assert out.exit_code == 1, out.output
    assert "curl http://example.test/x.sh" in out.output
    assert "none -> deny" in out.output
    assert "git status" not in out.output  # unchanged events are not listed
    assert "5 events replayed: 2 would change (2 none -> deny)" in out.output
    out = cli("hooks", "replay", str(events), str(stricter), "--trust-all", "--json")
    data = json.loads(out.output)
    assert data["changed"] == 2
    assert [c["line"] for c in data["changes"]] == [3, 5]
    same = guard_file(tmp_path, "same", NO_RM)
    out = cli("hooks", "replay", str(events), str(same), "--trust-all")
    assert out.exit_code == 0, out.output
    assert "no decision would change" in out.output


def test_replay_requires_trust_unless_told(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    events = write(
        tmp_path / "events.jsonl",
        json.dumps({"event": "Stop", "payload": {}, "outcome": {}}) + "\n",
    )
    config = guard_file(tmp_path, "guard", NO_RM)
    out = cli("hooks", "replay", str(events), str(config))
    assert out.exit_code == 2
    assert "orchestra hooks trust" in out.output


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ('{"event": "Stop", "payload": {}, "outcome": {}}\nnot json\n', 2, "not a JSON line"),
        ('{"event": "Stop", "payload": {}, "outcome": {}}\n{"event": "Sto', 2, "truncated"),
        ("\n\n[1, 2]\n", 3, "expected a JSON object, got list"),
        ('{"event": "Nope", "payload": {}, "outcome": {}}\n', 1, "not an event of the catalog"),
        ('{"event": "Stop", "payload": [], "outcome": {}}\n', 1, "'payload': expected an object"),
        ('{"event": "Stop", "payload": {}}\n', 1, "'outcome': expected an object"),
    ],
)
async def test_a_corrupt_events_file_is_refused_with_its_line_before_any_hook_runs(
    tmp_path: Path, text: str, line: int, message: str
) -> None:
    events = write(tmp_path / "events.jsonl", "")
    events.write_text(text)
    marker = tmp_path / "ran"
    hook = CommandHook(event="Stop", command=f"touch {marker}")
    with pytest.raises(ConfigError) as caught:
        await HookRegistry([hook], project_dir=tmp_path).replay(events)
    assert str(caught.value).startswith(f"{events}:{line}: ")
    assert message in str(caught.value)
    assert not marker.exists()  # refused before anything ran


def test_the_replay_command_refuses_a_corrupt_file_in_one_line(tmp_path: Path) -> None:
    events = write(tmp_path / "events.jsonl", '{"event": "Stop", "payload": {}, "outcome": {}}\n')
    with events.open("a") as file:
        file.write('{"event": "PreToolUse", "pay')  # cut mid-line, as by a full disk
    config = guard_file(tmp_path, "g", NO_RM)
    out = CliRunner().invoke(main, ["hooks", "replay", str(events), str(config), "--trust-all"])
    assert out.exit_code == 2
    assert out.output.strip().splitlines() == [
        f"error: {events}:2: not a JSON line: Unterminated string starting at: line 1 column 25"
        " (char 24) (the file is truncated?)"
    ]


BOUNDED = """
import json, resource, sys, anyio
from orchestra.skills import CommandHook, HookRegistry

path, backend = sys.argv[1], sys.argv[2]
line = json.dumps({"v": 1, "event": "PreToolUse",
                   "payload": {"tool_name": "Bash", "tool_input": {"command": "x" * 1000}},
                   "outcome": {"decision": None, "blocked": False}}) + "\\n"
with open(path, "w") as f:
    for _ in range(100 * 1024 * 1024 // len(line) + 1):
        f.write(line)
hook = CommandHook(event="PreToolUse", matcher="Edit", command="exit 2")  # matches none
registry = HookRegistry([hook])
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
report = anyio.run(registry.replay, path, backend=backend)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"events": report.events, "changed": report.changed,
                  "grew_kb": after - before}))
"""


def test_a_100_mb_events_file_replays_in_bounded_memory(tmp_path: Path, anyio_backend: str) -> None:
    events = tmp_path / "events.jsonl"
    out = subprocess.run(
        [sys.executable, "-c", BOUNDED, str(events), anyio_backend],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert events.stat().st_size >= 100 * 1024 * 1024
    assert result["events"] > 90_000
    assert result["changed"] == 0
    assert result["grew_kb"] < 32 * 1024  # well under the file's 100 MB


AGENTIC = """
import orchestra

async def bash(command: str) -> str:
    return f"ran {command}"

tools = {"Bash": bash}
dag = orchestra.DAG("agentic")

@dag.task
async def cleanup():
    return await tools["Bash"](command="rm -rf build")
"""


def test_a_run_records_its_events_and_its_views_mark_audited_decisions(tmp_path: Path) -> None:
    from tests.helpers.system import require
    from tests.test_cli_run import cli as orchestra

    require("dot")  # the report draws the graph
    write(tmp_path / "agentic.py", AGENTIC)
    guard_file(tmp_path, "orchestra", NO_RM, "enforce: false")
    out = orchestra(
        "run", "agentic.py", "--hooks", "orchestra.yaml", "--trust-all", "--trace", "out.jsonl",
        "--record-events", "events.jsonl", "--report", "run.html", cwd=tmp_path,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr  # audit mode: the command ran
    (line,) = [json.loads(x) for x in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert line["event"] == "PreToolUse"
    assert line["payload"]["tool_input"] == {"command": "rm -rf build"}
    assert line["outcome"]["blocked"] is False
    assert line["outcome"]["audited"][0]["blocked"] is True
    shown = orchestra("trace", "show", "out.jsonl", "--hooks", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "audit would block by orchestra.yaml:5: no rm -rf" in shown.stdout
    # the report's task panel gets the same fact, drawn with its own style (.r-audit)
    page = (tmp_path / "run.html").read_text()
    assert re.search(r'\["audit",\s*"audit"\],\s*\[" would ",\s*""\]', page)
