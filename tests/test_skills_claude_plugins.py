"""Claude Code plugins in the shapes of Anthropic's own, re-created: they load and behave.

Each plugin below has the ``hooks/hooks.json`` shape of one of Anthropic's public plugins
(security-guidance: ``if`` filters and ``asyncRewake`` with its wake-up texts; hookify:
one Python script per event under ``${CLAUDE_PLUGIN_ROOT}``; ralph-wiggum: a Stop hook
that keeps a loop going from a state file), with scripts written for these tests.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from orchestra.skills import HookRegistry, load

pytestmark = pytest.mark.anyio

ORCHESTRA = [sys.executable, "-m", "orchestra.cli"]


def plugin(folder: Path, name: str, hooks: dict[str, Any], scripts: dict[str, str]) -> Path:
    root = folder / name
    (root / ".claude-plugin").mkdir(parents=True)
    (root / ".claude-plugin" / "plugin.json").write_text(json.dumps({"name": name}))
    (root / "hooks").mkdir()
    (root / "hooks" / "hooks.json").write_text(
        json.dumps({"description": f"{name} (a re-creation)", "hooks": hooks}, indent=2)
    )
    for file, text in scripts.items():
        path = root / "hooks" / file
        path.write_text(text)
        path.chmod(0o755)
    return root


REVIEW = """\
#!/bin/bash
# A security reminder: warns on risky edits, reviews commits in the background.
input=$(cat)
event=$(jq -r .hook_event_name <<<"$input")
case "$event" in
  PostToolUse)
    tool=$(jq -r .tool_name <<<"$input")
    if [ "$tool" = Bash ]; then
      sleep 0.3
      echo "commit adds a hard-coded token in config.py" >&2
      exit 2
    fi
    if jq -e '.tool_input.content // "" | contains("eval(")' <<<"$input" >/dev/null; then
      jq -n '{hookSpecificOutput: {hookEventName: "PostToolUse",
        additionalContext: "eval() on untrusted input is a code injection risk"}}'
    fi
    ;;
  Stop) exit 0 ;;
esac
"""


def security_guidance(folder: Path) -> Path:
    run = 'bash "${CLAUDE_PLUGIN_ROOT}/hooks/review.sh"'
    return plugin(
        folder,
        "security-guidance",
        {
            "SessionStart": [{"hooks": [{"type": "command", "command": "true", "timeout": 180}]}],
            "PostToolUse": [
                {
                    "hooks": [{"type": "command", "command": run}],
                    "matcher": "Edit|Write|MultiEdit|NotebookEdit",
                },
                {
                    "hooks": [
                        {
                            "type": "command",
                            "command": run,
                            "if": "Bash(git commit:*)",
                            "asyncRewake": True,
                            "rewakeMessage": "Background review of the commit:",
                            "rewakeSummary": "Commit review found issues",
                        },
                        {
                            "type": "command",
                            "command": run,
                            "if": "Bash(git push:*)",
                            "asyncRewake": True,
                            "rewakeMessage": "Background review of the push:",
                            "rewakeSummary": "Push review found issues",
                        },
                    ],
                    "matcher": "Bash",
                },
            ],
            "Stop": [{"hooks": [{"type": "command", "command": run, "asyncRewake": True}]}],
        },
        {"review.sh": REVIEW},
    )


async def wait_delivered(registry: HookRegistry) -> None:
    with anyio.fail_after(10):
        while not registry._background.waiting:  # noqa: ASYNC110 -- polling its end
            await anyio.sleep(0.02)


async def test_security_guidance_loads_and_wakes_the_agent_after_a_commit(
    tmp_path: Path,
) -> None:
    async with load(security_guidance(tmp_path), project_dir=tmp_path) as registry:
        assert not registry.notes  # every field of the shape is known
        assert [h.event for h in registry.hooks].count("PostToolUse") == 3
        edit = await registry.fire(
            "PostToolUse",
            {"tool_name": "Write", "tool_input": {"file_path": "a.py", "content": "eval(x)"}},
        )
        assert edit.messages == ("eval() on untrusted input is a code injection risk",)
        status = await registry.fire(
            "PostToolUse", {"tool_name": "Bash", "tool_input": {"command": "git status"}}
        )
        assert status.records == ()  # neither `if` matches: nothing started
        commit = await registry.fire(
            "PostToolUse", {"tool_name": "Bash", "tool_input": {"command": "git commit -m x"}}
        )
        assert commit.records == ()  # in the background: not waited for
        assert not commit.blocked
        await wait_delivered(registry)
        woken = await registry.fire("SessionStart", {"source": "startup"})
        assert woken.messages == (
            "Background review of the commit:\n\ncommit adds a hard-coded token in config.py",
        )
        assert woken.system_message == "Commit review found issues"


async def test_a_closed_registry_leaves_no_background_hook_running(tmp_path: Path) -> None:
    marker = tmp_path / "finished"
    slow = plugin(
        tmp_path,
        "slow",
        {
            "Stop": [
                {
                    "hooks": [
                        {"type": "command", "command": f"sleep 30; touch {marker}", "async": True}
                    ]
                }
            ]
        },
        {},
    )
    registry = load(slow, project_dir=tmp_path)
    outcome = await registry.fire("Stop", {})
    assert outcome.records == ()
    with anyio.fail_after(10):
        await registry.aclose()  # the background hook is cancelled, its process killed
    assert not marker.exists()
    assert len(registry._background) == 0


RULES_HOOK = """\
#!/usr/bin/env python3
# A rule engine in hookify's manner: rules in the project, one script per event.
import json, os, re, sys
data = json.load(sys.stdin)
rules_file = os.path.join(os.environ["CLAUDE_PROJECT_DIR"], ".claude", "rules.local.json")
if not os.path.exists(rules_file):
    sys.exit(0)
for rule in json.load(open(rules_file)):
    if rule["event"] != data["hook_event_name"]:
        continue
    text = json.dumps(data.get("tool_input") or data.get("prompt") or "")
    if re.search(rule["pattern"], text):
        if rule["action"] == "block":
            print(json.dumps({
                "hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                       "permissionDecisionReason": rule["message"]},
                "systemMessage": rule["message"],
            }))
        else:
            print(json.dumps({"systemMessage": rule["message"]}))
        sys.exit(0)
"""


def hookify(folder: Path) -> Path:
    def script(name: str) -> dict[str, Any]:
        command = f"python3 ${{CLAUDE_PLUGIN_ROOT}}/hooks/{name}.py"
        return {"hooks": [{"type": "command", "command": command, "timeout": 10}]}

    names = {"PreToolUse": "pretooluse", "PostToolUse": "posttooluse", "Stop": "stop"}
    names["UserPromptSubmit"] = "userpromptsubmit"
    return plugin(
        folder,
        "hookify",
        {event: [script(name)] for event, name in names.items()},
        {f"{name}.py": RULES_HOOK for name in names.values()},
    )


def rules(project: Path) -> None:
    (project / ".claude").mkdir(exist_ok=True)
    (project / ".claude" / "rules.local.json").write_text(
        json.dumps(
            [
                {
                    "event": "PreToolUse",
                    "pattern": r"rm -rf",
                    "action": "block",
                    "message": "dangerous rm blocked by a rule",
                },
                {
                    "event": "UserPromptSubmit",
                    "pattern": "deploy",
                    "action": "warn",
                    "message": "deploys need a ticket",
                },
            ]
        )
    )


async def test_hookify_blocks_by_its_rules(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    rules(project)
    registry = load(hookify(tmp_path), project_dir=project)
    denied = await registry.fire(
        "PreToolUse", {"tool_name": "Bash", "tool_input": {"command": "rm -rf build"}}
    )
    assert denied.blocked
    assert denied.reason == "dangerous rm blocked by a rule"
    warned = await registry.fire("UserPromptSubmit", {"prompt": "deploy now"})
    assert not warned.blocked
    assert warned.system_message == "deploys need a ticket"


def test_hookify_imported_keeps_its_plugin_root_and_still_blocks(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    rules(project)
    root = hookify(tmp_path)
    proc = subprocess.run(
        [*ORCHESTRA, "hooks", "import", str(root)], capture_output=True, text=True, check=True
    )
    (project / "orchestra.yaml").write_text(proc.stdout)
    assert f"CLAUDE_PLUGIN_ROOT: {root}" in proc.stdout
    registry = load(project / "orchestra.yaml", project_dir=project)

    async def fire() -> bool:
        outcome = await registry.fire(
            "PreToolUse", {"tool_name": "Bash", "tool_input": {"command": "rm -rf build"}}
        )
        return outcome.blocked

    assert anyio.run(fire)


LOOP = """\
#!/bin/bash
# A Stop hook that keeps a self-referential loop going, from a state file.
set -euo pipefail
input=$(cat)
state=".claude/loop.local.md"
[ -f "$state" ] || exit 0
iteration=$(sed -n 's/^iteration: *//p' "$state")
max=$(sed -n 's/^max_iterations: *//p' "$state")
prompt=$(sed -n '/^---$/,/^---$/!p' "$state" | sed '/^---$/d')
if [ "$iteration" -ge "$max" ]; then
  echo "loop: max iterations ($max) reached"
  rm "$state"
  exit 0
fi
next=$((iteration + 1))
sed -i "s/^iteration: .*/iteration: $next/" "$state"
jq -n --arg prompt "$prompt" --arg msg "loop iteration $next" \\
  '{decision: "block", reason: $prompt, systemMessage: $msg}'
"""


async def test_ralph_like_stop_hook_loops_until_its_maximum(tmp_path: Path) -> None:
    root = plugin(
        tmp_path,
        "ralph",
        {
            "Stop": [
                {
                    "hooks": [
                        {"type": "command", "command": "${CLAUDE_PLUGIN_ROOT}/hooks/stop-hook.sh"}
                    ]
                }
            ]
        },
        {"stop-hook.sh": LOOP},
    )
    project = tmp_path / "project"
    (project / ".claude").mkdir(parents=True)
    state = project / ".claude" / "loop.local.md"
    state.write_text("---\niteration: 0\nmax_iterations: 2\n---\nFix the failing test.\n")
    registry = load(root, project_dir=project)
    seen = []
    for _ in range(3):
        outcome = await registry.fire("Stop", {"stop_hook_active": True})
        seen.append((outcome.blocked, outcome.reason, outcome.system_message))
    assert seen == [
        (True, "Fix the failing test.", "loop iteration 1"),
        (True, "Fix the failing test.", "loop iteration 2"),
        (False, None, None),
    ]
    assert not state.exists()


async def test_plugin_data_is_a_folder_of_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    root = plugin(
        tmp_path,
        "loader",
        {
            "SessionStart": [
                {
                    "hooks": [
                        {
                            "type": "command",
                            "command": 'test -d "$CLAUDE_PLUGIN_DATA" && '
                            'echo "data: $CLAUDE_PLUGIN_DATA"',
                        }
                    ]
                }
            ]
        },
        {},
    )
    outcome = await load(root, project_dir=tmp_path).fire("SessionStart", {"source": "startup"})
    assert outcome.messages == (f"data: {tmp_path / 'data' / 'orchestra' / 'plugins' / 'loader'}",)
