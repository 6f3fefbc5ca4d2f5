"""Claude Code's own files as sources, with scripts written the way its examples are.

Every script below is written in the style of a Claude Code example hook (an exit-2
validator, a JSON ``permissionDecision``, an exit-1-on-bad-input script, a plain-stdout
context loader, a ``$CLAUDE_PROJECT_DIR`` command, an ``async`` notifier, a Stop hook that
reads ``stop_hook_active``), wired in a real ``.claude/settings.json`` that also holds
other settings, and each gives the decision Claude Code documents.
"""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from helpers.model_server import serving

from orchestra.skills import (
    AgentHook,
    CommandHook,
    ConfigError,
    JudgeRequest,
    OpenAICompatibleJudge,
    PromptHook,
    ToolDenied,
    load,
)

pytestmark = pytest.mark.anyio

PY = sys.executable

VALIDATOR = """\
#!/usr/bin/env python3
# grep -> rg validator, as in Claude Code's example: exit 2 blocks, stderr is the reason.
import json, re, sys
try:
    data = json.load(sys.stdin)
except json.JSONDecodeError as e:
    print(f"Error: Invalid JSON input: {e}", file=sys.stderr)
    sys.exit(1)  # a non-blocking error: the tool call continues
command = data.get("tool_input", {}).get("command", "")
if re.search(r"^grep\\b(?!.*\\|)", command):
    print("Use 'rg' (ripgrep) instead of 'grep' for better performance", file=sys.stderr)
    sys.exit(2)
"""

DENY_ENV = """\
#!/usr/bin/env python3
# JSON permissionDecision: deny edits of .env files, allow the rest.
import json, sys
data = json.load(sys.stdin)
path = data.get("tool_input", {}).get("file_path", "")
decision = "deny" if path.endswith(".env") else "allow"
print(json.dumps({"hookSpecificOutput": {
    "hookEventName": "PreToolUse",
    "permissionDecision": decision,
    "permissionDecisionReason": f"{path}: secrets are not edited by agents",
}}))
"""

STOP_GATE = """\
#!/usr/bin/env python3
# A Stop hook: ask the agent to go on once, never loop (stop_hook_active).
import json, sys
data = json.load(sys.stdin)
if data.get("stop_hook_active"):
    sys.exit(0)
print(json.dumps({"decision": "block", "reason": "run the tests before stopping"}))
"""

SETTINGS = {
    "permissions": {"allow": ["Bash(npm run lint)"], "deny": ["Read(./.env)"]},
    "model": "claude-sonnet-4",
    "env": {"FOO": "bar"},
    "hooks": {
        "PreToolUse": [
            {
                "matcher": "Bash",
                "hooks": [
                    {"type": "command", "command": f'{PY} "$CLAUDE_PROJECT_DIR"/.claude/hooks/v.py'}
                ],
            },
            {
                "matcher": "Edit|Write",
                "hooks": [
                    {
                        "type": "command",
                        "command": f"{PY} $CLAUDE_PROJECT_DIR/.claude/hooks/deny_env.py",
                        "statusMessage": "Checking the path...",
                    }
                ],
            },
        ],
        "SessionStart": [
            {"hooks": [{"type": "command", "command": "cat .claude/project-context.md"}]}
        ],
        "PostToolUse": [
            {
                "matcher": "Edit",
                "hooks": [
                    {
                        "type": "command",
                        "command": "sleep 0.5; echo notified >> notified.txt; "
                        'echo \'{"decision": "block", "reason": "late", '
                        '"systemMessage": "lint done"}\'',
                        "async": True,
                    }
                ],
            }
        ],
        "Stop": [{"hooks": [{"type": "command", "command": f"{PY} .claude/hooks/stop_gate.py"}]}],
        "Setup": [{"hooks": [{"type": "command", "command": "echo setting up", "once": True}]}],
        "FutureEvent": [{"hooks": [{"type": "command", "command": "true"}]}],
    },
}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    hooks = tmp_path / ".claude" / "hooks"
    hooks.mkdir(parents=True)
    (hooks / "v.py").write_text(VALIDATOR)
    (hooks / "deny_env.py").write_text(DENY_ENV)
    (hooks / "stop_gate.py").write_text(STOP_GATE)
    (tmp_path / ".claude" / "project-context.md").write_text("This project uses uv.\n")
    (tmp_path / ".claude" / "settings.json").write_text(json.dumps(SETTINGS, indent=2))
    return tmp_path


def test_a_settings_file_with_other_keys_loads_and_notes_them(project: Path) -> None:
    registry = load(project, project_dir=project)
    assert {h.event for h in registry.hooks} == {
        "PreToolUse",
        "SessionStart",
        "PostToolUse",
        "Stop",
        "Setup",
    }
    notes = "\n".join(registry.notes)
    for key in ("permissions", "model", "env"):
        assert f"{key}: a Claude Code setting, not a hook: ignored" in notes
    assert "hooks.FutureEvent: event not known here" in notes
    bash = registry.hooks_for("PreToolUse", {"tool_name": "Bash"})[0]
    assert isinstance(bash, CommandHook)
    assert (bash.timeout, bash.on_error) == (600.0, "continue")  # Claude Code's defaults
    edit = registry.hooks_for("PreToolUse", {"tool_name": "Edit"})[0]
    assert edit.status_message == "Checking the path..."


async def test_claude_project_dir_and_exit_2_block(project: Path) -> None:
    registry = load(project, project_dir=project)
    outcome = await registry.fire(
        "PreToolUse", {"tool_name": "Bash", "tool_input": {"command": "grep -r foo ."}}
    )
    assert outcome.blocked
    assert outcome.reason == "Use 'rg' (ripgrep) instead of 'grep' for better performance"
    outcome = await registry.fire(
        "PreToolUse", {"tool_name": "Bash", "tool_input": {"command": "rg foo"}}
    )
    assert not outcome.blocked
    assert outcome.records[0].error is None  # the script was found: $CLAUDE_PROJECT_DIR


async def test_exit_1_is_a_non_blocking_error(project: Path, tmp_path: Path) -> None:
    # The same validator, fed something that is not JSON: it exits 1, and the call goes on.
    (project / ".claude" / "hooks" / "v.py").write_text(
        "import sys\nprint('Error: Invalid JSON input', file=sys.stderr)\nsys.exit(1)\n"
    )
    registry = load(project, project_dir=project)
    outcome = await registry.fire("PreToolUse", {"tool_name": "Bash", "tool_input": {}})
    assert not outcome.blocked
    assert outcome.records[0].error == "exited 1: Error: Invalid JSON input"
    assert outcome.records[0].error_summary == "exited 1"
    assert "error ignored" in (outcome.records[0].note or "")


async def test_json_permission_decision(project: Path) -> None:
    registry = load(project, project_dir=project)
    denied = await registry.fire(
        "PreToolUse", {"tool_name": "Write", "tool_input": {"file_path": "app/.env"}}
    )
    assert denied.blocked
    assert denied.reason == "app/.env: secrets are not edited by agents"
    allowed = await registry.fire(
        "PreToolUse", {"tool_name": "Edit", "tool_input": {"file_path": "app/main.py"}}
    )
    assert (allowed.blocked, allowed.decision) == (False, "allow")


async def test_plain_stdout_is_session_context(project: Path) -> None:
    outcome = await load(project, project_dir=project).fire("SessionStart", {"source": "startup"})
    assert outcome.messages == ("This project uses uv.",)


async def test_async_notifier_is_not_waited_for_and_speaks_on_the_next_fire(
    project: Path,
) -> None:
    # Claude Code: an async hook runs in the background; its decision has no effect, its
    # systemMessage reaches the agent on the next turn.
    async with load(project, project_dir=project) as registry:
        outcome = await registry.fire(
            "PostToolUse", {"tool_name": "Edit", "tool_input": {}, "tool_response": "ok"}
        )
        assert not (project / "notified.txt").exists()  # fire did not wait for it
        assert not outcome.blocked
        assert outcome.records == ()
        with anyio.fail_after(10):
            while not registry._background.waiting:  # noqa: ASYNC110 -- polling its end
                await anyio.sleep(0.02)
        assert (project / "notified.txt").read_text() == "notified\n"
        after = await registry.fire("SessionStart", {"source": "startup"})
        assert after.messages == ("This project uses uv.", "lint done")
        again = await registry.fire("SessionStart", {"source": "startup"})
        assert again.messages == ("This project uses uv.",)  # delivered once


async def test_stop_hook_asks_to_go_on_once(project: Path) -> None:
    registry = load(project, project_dir=project)
    first = await registry.fire("Stop", {"stop_hook_active": False})
    assert (first.blocked, first.reason) == (True, "run the tests before stopping")
    second = await registry.fire("Stop", {"stop_hook_active": True})
    assert not second.blocked


async def test_once_is_ignored_in_settings_and_setup_stdout_is_not_context(
    project: Path,
) -> None:
    # Claude Code honours `once` only in skill front matter; Setup's plain stdout goes to
    # the debug log only.
    registry = load(project, project_dir=project)
    assert any("once: ignored in settings files" in note for note in registry.notes)
    first = await registry.fire("Setup", {"trigger": "init"})
    second = await registry.fire("Setup", {"trigger": "init"})
    assert len(first.records) == len(second.records) == 1
    assert first.messages == second.messages == ()


async def test_the_seed_spelling_event_is_on_stdin_and_echo_agent_yaml_loads(
    tmp_path: Path,
) -> None:
    (tmp_path / "echo-agent.yaml").write_text(
        textwrap.dedent(
            f"""\
            hooks:
              UserPromptSubmit:
                - hooks:
                    - type: command
                      command: {PY} -c "import json,sys; print(json.load(sys.stdin)['event'])"
            """
        )
    )
    outcome = await load(tmp_path, project_dir=tmp_path).fire("UserPromptSubmit", {"prompt": "hi"})
    assert outcome.messages == ("UserPromptSubmit",)


def test_disable_all_hooks_and_unknown_types_are_notes(tmp_path: Path) -> None:
    settings = tmp_path / "settings.json"
    settings.write_text(
        json.dumps(
            {
                "hooks": {
                    "Stop": [{"hooks": [{"type": "telepathy", "thought": "x"}]}],
                    "PreToolUse": [
                        {"matcher": "Bash", "hooks": [{"type": "command", "command": "true"}]}
                    ],
                }
            },
            indent=2,
        )
    )
    registry = load(settings)
    assert [h.event for h in registry.hooks] == ["PreToolUse"]
    assert any("hook type 'telepathy' not run here: skipped" in n for n in registry.notes)
    settings.write_text(json.dumps({"disableAllHooks": True, **json.loads(settings.read_text())}))
    registry = load(settings)
    assert registry.hooks == ()
    assert any(
        "disableAllHooks is true: no hook of a Claude Code file runs" in n for n in registry.notes
    )


def test_a_hooks_entry_of_the_wrong_shape_names_the_json_path_and_line(tmp_path: Path) -> None:
    settings = tmp_path / "settings.json"
    settings.write_text(
        "{\n"
        '  "hooks": {\n'
        '    "PreToolUse": [\n'
        '      {"matcher": "Bash", "hooks": [\n'
        '        {"type": "command", "command": "true"},\n'
        '        {"type": "command", "command": 42}\n'
        "      ]}\n"
        "    ]\n"
        "  }\n"
        "}\n"
    )
    with pytest.raises(ConfigError) as info:
        load(settings)
    assert (
        f"{settings}:6: hooks.PreToolUse[0].hooks[1].command: expected a non-empty string"
        in str(info.value)
    )


async def test_plugin_hooks_get_their_root(tmp_path: Path) -> None:
    plugin = tmp_path / "my-plugin"
    (plugin / ".claude-plugin").mkdir(parents=True)
    (plugin / "hooks").mkdir()
    (plugin / "scripts").mkdir()
    (plugin / "scripts" / "hello.sh").write_text('echo "root=$CLAUDE_PLUGIN_ROOT"\n')
    (plugin / "hooks" / "hooks.json").write_text(
        json.dumps(
            {
                "hooks": {
                    "SessionStart": [
                        {
                            "hooks": [
                                {
                                    "type": "command",
                                    "command": "sh ${CLAUDE_PLUGIN_ROOT}/scripts/hello.sh",
                                }
                            ]
                        }
                    ]
                }
            }
        )
    )
    outcome = await load(plugin, project_dir=tmp_path).fire("SessionStart", {"source": "startup"})
    assert outcome.messages == (f"root={plugin.resolve()}",)


# --- judges: prompt and agent hooks ask a model ---------------------------------------------


def _answer(prompt: str) -> str:
    """The fake model's text: it depends on the prompt."""
    if "GARBAGE" in prompt:
        return "I think it is fine"
    if "rm -rf" in prompt:
        return '```json\n{"ok": false, "reason": "destructive command"}\n```'
    return '{"ok": true, "reason": "looks fine"}'


_SEEN: list[dict[str, Any]] = []


@pytest.fixture
def model_url() -> Iterator[str]:
    """A chat completions endpoint on 127.0.0.1 (``_SEEN``: what it was sent)."""
    _SEEN.clear()
    with serving(_answer, _SEEN) as (url, _):
        yield url


def _judge_settings(tmp_path: Path, prompt: str, timeout: int = 30) -> Path:
    settings = tmp_path / "settings.json"
    settings.write_text(
        json.dumps(
            {
                "hooks": {
                    "PreToolUse": [
                        {
                            "matcher": "Bash",
                            "hooks": [{"type": "prompt", "prompt": prompt, "timeout": timeout}],
                        }
                    ]
                }
            }
        )
    )
    return settings


async def test_a_claude_prompt_hook_asks_the_judge(
    tmp_path: Path, model_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JUDGE_KEY", "sk-test")
    judge = OpenAICompatibleJudge(model_url, "small-judge", api_key_env="JUDGE_KEY")
    registry = load(_judge_settings(tmp_path, "Is this safe? $ARGUMENTS"), judge=judge)
    (hook,) = registry.hooks
    assert isinstance(hook, PromptHook)
    assert hook.asks_judge
    assert hook.timeout == 30.0
    outcome = await registry.fire(
        "PreToolUse", {"tool_name": "Bash", "tool_input": {"command": "rm -rf /"}}
    )
    assert (outcome.blocked, outcome.reason) == (True, "destructive command")
    outcome = await registry.fire(
        "PreToolUse", {"tool_name": "Bash", "tool_input": {"command": "ls"}}
    )
    assert not outcome.blocked
    sent = _SEEN[0]
    assert sent["auth"] == "Bearer sk-test"
    assert sent["body"]["model"] == "small-judge"
    assert '"tool_input": {"command": "rm -rf /"}' in sent["body"]["messages"][-1]["content"]


@pytest.mark.parametrize(
    ("prompt", "seconds", "error"),
    [
        ("GARBAGE", 30, "judge answered prose, not JSON"),
        ("SLOW", 1, "judge timed out after 1 s"),
    ],
)
async def test_a_judge_that_fails_is_a_hook_error_never_an_allow(
    tmp_path: Path, model_url: str, prompt: str, seconds: int, error: str
) -> None:
    judge = OpenAICompatibleJudge(model_url, "m", api_key_env=None)
    settings = _judge_settings(tmp_path, prompt, seconds)
    data = json.loads(settings.read_text())
    data["hooks"]["PreToolUse"][0]["hooks"][0]["onFailure"] = "block"
    settings.write_text(json.dumps(data))
    outcome = await load(settings, judge=judge).fire(
        "PreToolUse", {"tool_name": "Bash", "tool_input": {"command": "ls"}}
    )
    assert outcome.blocked
    assert (outcome.records[0].error or "").startswith(error)


async def test_an_unreachable_judge_and_no_judge_are_hook_errors(tmp_path: Path) -> None:
    settings = _judge_settings(tmp_path, "safe?")
    judge = OpenAICompatibleJudge("http://127.0.0.1:9/v1", "m", api_key_env=None)
    for registry in (load(settings, judge=judge), load(settings)):
        outcome = await registry.fire("PreToolUse", {"tool_name": "Bash", "tool_input": {}})
        record = outcome.records[0]
        assert record.result is None
        assert record.error
        assert not outcome.blocked  # Claude Code's fail-open: onFailure was not "block"
    assert "no judge is configured" in (outcome.records[0].error or "")


async def test_a_python_judge_and_agent_hooks(tmp_path: Path) -> None:
    asked: list[JudgeRequest] = []

    async def judge(request: JudgeRequest) -> dict[str, Any]:
        asked.append(request)
        return {"ok": False, "reason": f"{request.event}: tests are red"}

    judge.supports_agent = True  # type: ignore[attr-defined]
    settings = tmp_path / "settings.json"
    settings.write_text(
        json.dumps(
            {"hooks": {"Stop": [{"hooks": [{"type": "agent", "prompt": "Are tests green?"}]}]}}
        )
    )
    registry = load(settings, judge=judge)
    assert isinstance(registry.hooks[0], AgentHook)
    outcome = await registry.fire("Stop", {})
    assert (outcome.blocked, outcome.reason) == (True, "Stop: tests are red")
    assert asked[0].agent
    assert asked[0].timeout == 60.0
    single = OpenAICompatibleJudge("http://127.0.0.1:9/v1", "m", api_key_env=None)
    with pytest.raises(ConfigError, match="agent hooks need one with supports_agent = True"):
        load(settings, judge=single)


async def test_a_yaml_prompt_hook_with_a_model_asks_the_judge(tmp_path: Path) -> None:
    async def judge(request: JudgeRequest) -> dict[str, Any]:
        return {"ok": request.model == "strict"}

    config = tmp_path / "orchestra.yaml"
    config.write_text(
        "hooks:\n  UserPromptSubmit:\n    - hooks:\n"
        "        - {type: prompt, prompt: 'Is it polite?', model: strict}\n"
        "        - {type: prompt, prompt: 'Be nice.'}\n"
    )
    outcome = await load(config, judge=judge).fire("UserPromptSubmit", {"prompt": "hello"})
    assert (outcome.blocked, outcome.messages) == (False, ("Be nice.",))


# --- what the outcome carries through the guard ---------------------------------------------


def _config(tmp_path: Path, text: str, **answers: object) -> Path:
    """An orchestra.yaml; each answer is written to NAME.json, for `cat NAME.json`."""
    for name, answer in answers.items():
        (tmp_path / f"{name}.json").write_text(json.dumps(answer))
    path = tmp_path / "orchestra.yaml"
    path.write_text(textwrap.dedent(text))
    return path


async def test_system_message_output_and_retry_reach_the_outcome(tmp_path: Path) -> None:
    config = _config(
        tmp_path,
        """\
        hooks:
          PostToolUse:
            - hooks:
                - {type: command, command: cat post.json}
          PermissionDenied:
            - hooks:
                - {type: command, command: cat denied.json}
        """,
        post={
            "systemMessage": "shown to the user",
            "hookSpecificOutput": {
                "hookEventName": "PostToolUse",
                "additionalContext": "for the agent",
                "updatedMCPToolOutput": {"rows": 0},
            },
        },
        denied={"hookSpecificOutput": {"hookEventName": "PermissionDenied", "retry": True}},
    )
    registry = load(config, project_dir=tmp_path)
    post = await registry.fire("PostToolUse", {"tool_name": "Query", "tool_response": {"rows": 5}})
    assert (post.messages, post.system_message, post.output) == (
        ("for the agent",),
        "shown to the user",
        {"rows": 0},
    )
    denied = await registry.fire("PermissionDenied", {"tool_name": "Query"})
    assert denied.retry


async def test_the_guard_returns_a_mock_a_rewrite_and_says_retry_on_deny(tmp_path: Path) -> None:
    config = _config(
        tmp_path,
        """\
        hooks:
          PreToolUse:
            - matcher: Cached
              hooks:
                - {type: command, command: cat mock.json}
            - matcher: Shell
              hooks:
                - {type: command, command: "echo 'no shell today' >&2; exit 2"}
          PostToolUse:
            - matcher: Query
              hooks:
                - {type: command, command: cat rewrite.json}
          PermissionDenied:
            - hooks:
                - {type: command, command: cat retry.json}
        """,
        mock={"output": "from the cache"},
        rewrite={"output": {"rows": "redacted"}},
        retry={"retry": True},
    )
    registry = load(config, project_dir=tmp_path)
    calls: list[str] = []

    @registry.guard("Cached")
    async def cached() -> str:
        calls.append("cached")
        return "computed"

    @registry.guard("Query")
    async def query() -> dict[str, Any]:
        calls.append("query")
        return {"rows": [1, 2]}

    @registry.guard("Shell")
    async def shell(command: str) -> str:
        calls.append("shell")
        return command

    assert await cached() == "from the cache"
    assert await query() == {"rows": "redacted"}
    with pytest.raises(ToolDenied) as info:
        await shell("ls")
    assert (info.value.reason, info.value.retry) == ("no shell today", True)
    assert calls == ["query"]  # the mock and the deny never called their tools
