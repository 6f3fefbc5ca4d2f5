"""Claude Code's hooks reference, behaviour by behaviour, on a real ``.claude/`` folder.

Each test names the behaviour of the reference it checks. The hook scripts are written
the way the reference's and Anthropic's examples write theirs (``jq`` on stdin, a JSON
``hookSpecificOutput`` on stdout, ``exit 2`` with a reason on stderr), never copied.
"""

from __future__ import annotations

import json
import sys
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import pytest

from orchestra.skills import ConfigError, JudgeRequest, load
from orchestra.skills._config.matchers import ClaudeMatcher
from orchestra.skills._sources.claude.grants import file_grants
from orchestra.skills._sources.trust import Trusted, TrustStore, digest

pytestmark = pytest.mark.anyio

PY = sys.executable
HELPERS = Path(__file__).parent / "helpers"


def settings(folder: Path, hooks: dict[str, Any], name: str = "settings.json", **top: Any) -> Path:
    path = folder / ".claude" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({**top, "hooks": hooks}, indent=2))
    return path


def one(event: str, hook: dict[str, Any], matcher: str | None = None) -> dict[str, Any]:
    group: dict[str, Any] = {"hooks": [hook]}
    if matcher is not None:
        group["matcher"] = matcher
    return {event: [group]}


def cmd(command: str, **fields: Any) -> dict[str, Any]:
    return {"type": "command", "command": command, **fields}


DENY_RM = """\
#!/bin/bash
# block-rm.sh, in the reference's style: deny rm -rf, stay silent otherwise
COMMAND=$(jq -r '.tool_input.command')
if echo "$COMMAND" | grep -q 'rm -rf'; then
  jq -n '{hookSpecificOutput: {hookEventName: "PreToolUse", permissionDecision: "deny",
    permissionDecisionReason: "Destructive command blocked by hook"}}'
else
  exit 0
fi
"""


# -- handler fields -------------------------------------------------------------------


async def test_the_references_first_example_if_and_args_loads_and_denies(tmp_path: Path) -> None:
    script = tmp_path / ".claude" / "hooks" / "block-rm.sh"
    script.parent.mkdir(parents=True)
    script.write_text(DENY_RM)
    script.chmod(0o755)
    hook = cmd("${CLAUDE_PROJECT_DIR}/.claude/hooks/block-rm.sh", args=[], **{"if": "Bash(rm *)"})
    registry = load(settings(tmp_path, one("PreToolUse", hook, "Bash")), project_dir=tmp_path)
    denied = await registry.fire(
        "PreToolUse", {"tool_name": "Bash", "tool_input": {"command": "rm -rf /tmp/build"}}
    )
    assert denied.blocked
    assert denied.reason == "Destructive command blocked by hook"
    skipped = await registry.fire(
        "PreToolUse", {"tool_name": "Bash", "tool_input": {"command": "npm test"}}
    )
    assert skipped.records == ()  # the `if` filter kept the script from spawning


async def test_exec_form_passes_each_argument_verbatim(tmp_path: Path) -> None:
    out = tmp_path / "argv.json"
    hook = cmd(
        PY,
        args=[
            "-c",
            "import json,sys; json.dump(sys.argv[1:], open(sys.argv[1], 'w'))",
            str(out),
            "it's $HOME `x`",
            "${CLAUDE_PROJECT_DIR}/x",
        ],
    )
    registry = load(settings(tmp_path, one("Stop", hook)), project_dir=tmp_path)
    outcome = await registry.fire("Stop", {})
    assert not outcome.errors
    assert json.loads(out.read_text()) == [str(out), "it's $HOME `x`", f"{tmp_path}/x"]


async def test_shell_bash_runs_bash(tmp_path: Path) -> None:
    hook = cmd('[[ -n "$BASH_VERSION" ]] && echo "bash $BASH_VERSION"', shell="bash")
    registry = load(settings(tmp_path, one("SessionStart", hook)), project_dir=tmp_path)
    outcome = await registry.fire("SessionStart", {"source": "startup"})
    assert outcome.messages[0].startswith("bash ")


def test_unknown_fields_are_notes_and_once_is_ignored_in_settings(tmp_path: Path) -> None:
    hook = cmd("true", once=True, futureField=1, statusMessage="Checking")
    registry = load(settings(tmp_path, one("Stop", hook)), project_dir=tmp_path)
    assert len(registry.hooks) == 1
    assert registry.hooks[0].once is False
    assert any("futureField: not a field of command hooks: ignored" in n for n in registry.notes)
    assert any("once: ignored in settings files" in n for n in registry.notes)


def test_a_missing_command_is_still_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="command: missing"):
        load(settings(tmp_path, one("Stop", {"type": "command"})))


@pytest.mark.parametrize(
    ("event", "hook_type", "timeout"),
    [
        ("PreToolUse", "command", 600.0),
        ("UserPromptSubmit", "command", 30.0),
        ("MessageDisplay", "command", 10.0),
        ("SessionEnd", "command", 1.5),
        ("Stop", "prompt", 30.0),
        ("Stop", "agent", 60.0),
        ("PreToolUse", "http", 600.0),
    ],
)
def test_default_timeouts_per_event_and_type(
    tmp_path: Path, event: str, hook_type: str, timeout: float
) -> None:
    fields = {
        "command": {"command": "true"},
        "prompt": {"prompt": "ok?"},
        "agent": {"prompt": "ok?"},
        "http": {"url": "http://localhost:9/x"},
    }[hook_type]
    registry = load(settings(tmp_path, one(event, {"type": hook_type, **fields})))
    assert registry.hooks[0].timeout == timeout


def test_a_session_end_hook_gets_at_most_60_s(tmp_path: Path) -> None:
    registry = load(settings(tmp_path, one("SessionEnd", cmd("true", timeout=300))))
    assert registry.hooks[0].timeout == 60.0


def test_a_hook_type_an_event_does_not_run_is_skipped(tmp_path: Path) -> None:
    hook = {"type": "http", "url": "http://localhost:9/x"}
    registry = load(settings(tmp_path, one("SessionStart", hook)))
    assert registry.hooks == ()
    assert any("runs no http hooks on SessionStart" in n for n in registry.notes)


def test_if_on_an_event_that_is_not_a_tool_event_never_runs(tmp_path: Path) -> None:
    registry = load(settings(tmp_path, one("Stop", cmd("true", **{"if": "Bash(rm *)"}))))
    assert registry.hooks == ()
    assert any("'if' is evaluated on tool events only" in n for n in registry.notes)


# -- matchers ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("matcher", "tool", "runs"),
    [
        ("Edit.*", "NotebookEdit", True),  # unanchored regex
        ("^Notebook", "NotebookEdit", True),
        ("^Edit$", "NotebookEdit", False),
        ("Edit|Write", "Write", True),  # exact list
        ("Edit, Write", "Write", True),
        ("Bash", "BashOutput", False),  # exact name
        ("mcp__memory", "mcp__memory__create", False),  # only exact-match characters
        ("mcp__memory__.*", "mcp__memory__create", True),
        ("(?=Bash)Bash$", "Bash", True),  # lookahead: RE2 cannot, backtracking runs it
        ("*", "Anything", True),
        ("", "Anything", True),
    ],
)
async def test_matchers_follow_claude_codes_rules(
    tmp_path: Path, matcher: str, tool: str, runs: bool
) -> None:
    registry = load(settings(tmp_path, one("PreToolUse", cmd("true"), matcher)))
    assert bool(registry.hooks_for("PreToolUse", {"tool_name": tool})) is runs


def test_a_pattern_that_backtracks_past_its_time_limit_counts_as_a_match() -> None:
    slow = ClaudeMatcher(r"^(a|aa)+\1$")  # a backreference: the backtracking engine
    assert slow.engine == "backtracking"
    assert slow.matches("a" * 45 + "c")  # too slow to decide in time: the hook runs
    assert not slow.matches("c")


async def test_file_changed_matches_the_base_name(tmp_path: Path) -> None:
    exact = load(settings(tmp_path, one("FileChanged", cmd("true"), "Makefile|envrc")))
    assert exact.hooks_for("FileChanged", {"file_path": "/repo/Makefile", "event": "change"})
    assert not exact.hooks_for("FileChanged", {"file_path": "/repo/Makefile.bak"})
    anchored = load(settings(tmp_path, one("FileChanged", cmd("true"), r"^\.env$")))
    assert anchored.hooks_for("FileChanged", {"file_path": "/repo/.env"})
    # A hyphen keeps a FileChanged matcher on the regex path (a narrower exact set).
    hyphen = load(settings(tmp_path, one("FileChanged", cmd("true"), "a-b")))
    assert hyphen.hooks_for("FileChanged", {"file_path": "/repo/xa-by"})


async def test_subagent_matchers_read_agent_type(tmp_path: Path) -> None:
    hooks = {
        **one("SubagentStart", cmd("true"), "^my-plugin:reviewer$"),
        **one("SubagentStop", cmd("true"), "Explore"),
    }
    registry = load(settings(tmp_path, hooks))
    assert registry.hooks_for("SubagentStart", {"agent_type": "my-plugin:reviewer"})
    assert not registry.hooks_for("SubagentStart", {"agent_name": "my-plugin:reviewer"})
    assert registry.hooks_for("SubagentStop", {"agent_type": "Explore", "agent_id": "a1"})


async def test_a_matcher_on_an_event_without_matchers_is_ignored(tmp_path: Path) -> None:
    registry = load(settings(tmp_path, one("TaskCreated", cmd("true"), "deploy")))
    assert registry.hooks_for("TaskCreated", {"task_id": "anything"})
    assert any("TaskCreated has no matchers in Claude Code: ignored" in n for n in registry.notes)


# -- exit codes and output -----------------------------------------------------------


async def test_exit_1_with_valid_json_deny_denies(tmp_path: Path) -> None:
    deny = (
        'jq -n \'{hookSpecificOutput: {hookEventName: "PreToolUse", '
        'permissionDecision: "deny", permissionDecisionReason: "no"}}\'; exit 1'
    )
    registry = load(settings(tmp_path, one("PreToolUse", cmd(deny), "Bash")), project_dir=tmp_path)
    outcome = await registry.fire("PreToolUse", {"tool_name": "Bash", "tool_input": {}})
    assert outcome.blocked
    assert outcome.reason == "no"
    assert not outcome.errors  # the JSON decides; the hook is not an error


async def test_permission_request_exit_2_changes_nothing(tmp_path: Path) -> None:
    hook = cmd("echo 'refused' >&2; exit 2")
    registry = load(settings(tmp_path, one("PermissionRequest", hook)), project_dir=tmp_path)
    outcome = await registry.fire("PermissionRequest", {"tool_name": "Bash", "tool_input": {}})
    assert not outcome.blocked
    assert outcome.decision is None
    behavior = (
        'echo \'{"hookSpecificOutput": {"hookEventName": "PermissionRequest", '
        '"decision": {"behavior": "deny", "message": "by object"}}}\'; exit 2'
    )
    registry = load(settings(tmp_path, one("PermissionRequest", cmd(behavior))))
    outcome = await registry.fire("PermissionRequest", {"tool_name": "Bash", "tool_input": {}})
    assert outcome.blocked  # the decision object still counts
    assert outcome.reason == "by object"


async def test_stdout_starting_with_a_brace_but_invalid_is_plain_text(tmp_path: Path) -> None:
    hook = cmd("echo '{not json, just braces}'")
    registry = load(settings(tmp_path, one("UserPromptSubmit", hook)), project_dir=tmp_path)
    outcome = await registry.fire("UserPromptSubmit", {"prompt": "hi"})
    assert not outcome.errors
    assert outcome.messages == ("{not json, just braces}",)


async def test_session_start_exit_2_stderr_goes_to_the_user_only(tmp_path: Path) -> None:
    hook = cmd("echo 'could not load context' >&2; exit 2")
    registry = load(settings(tmp_path, one("SessionStart", hook)), project_dir=tmp_path)
    outcome = await registry.fire("SessionStart", {"source": "startup"})
    assert not outcome.blocked
    assert outcome.messages == ()
    assert outcome.system_message == "could not load context"


async def test_post_tool_use_exit_2_stderr_goes_to_the_agent(tmp_path: Path) -> None:
    hook = cmd("echo 'lint failed' >&2; exit 2")
    registry = load(settings(tmp_path, one("PostToolUse", hook, "Write")), project_dir=tmp_path)
    outcome = await registry.fire("PostToolUse", {"tool_name": "Write", "tool_input": {}})
    assert not outcome.blocked
    assert outcome.messages == ("lint failed",)


async def test_setup_plain_stdout_is_not_context_but_additional_context_is(tmp_path: Path) -> None:
    plain = cmd("echo installed")
    context = cmd(
        'jq -n \'{hookSpecificOutput: {hookEventName: "Setup", additionalContext: "deps ok"}}\''
    )
    hooks = {"Setup": [{"hooks": [plain, context]}]}
    registry = load(settings(tmp_path, hooks), project_dir=tmp_path)
    outcome = await registry.fire("Setup", {"trigger": "init"})
    assert outcome.messages == ("deps ok",)


async def test_updated_tool_output_replaces_the_output(tmp_path: Path) -> None:
    redact = cmd(
        'jq -c \'{hookSpecificOutput: {hookEventName: "PostToolUse", updatedToolOutput: '
        '{stdout: "[redacted]", stderr: "", interrupted: false, isImage: false}}}\''
    )
    registry = load(settings(tmp_path, one("PostToolUse", redact, "Bash")), project_dir=tmp_path)
    outcome = await registry.fire(
        "PostToolUse", {"tool_name": "Bash", "tool_input": {}, "tool_response": {"stdout": "k"}}
    )
    assert outcome.output == {
        "stdout": "[redacted]",
        "stderr": "",
        "interrupted": False,
        "isImage": False,
    }


async def test_worktree_create_reads_the_path_on_stdout(tmp_path: Path) -> None:
    tree = tmp_path / "wt"
    hook = cmd(f"printf '\\033[32mbanner\\033[0m\\n'; mkdir -p {tree}; echo {tree}")
    registry = load(settings(tmp_path, one("WorktreeCreate", hook)), project_dir=tmp_path)
    outcome = await registry.fire("WorktreeCreate", {"name": "feature"})
    assert outcome.output == str(tree)
    assert not outcome.blocked
    failing = load(settings(tmp_path, one("WorktreeCreate", cmd("echo nope >&2; exit 1"))))
    refused = await failing.fire("WorktreeCreate", {"name": "feature"})
    assert refused.blocked
    assert refused.reason == "nope"


async def test_message_display_content_is_the_output(tmp_path: Path) -> None:
    hook = cmd(
        'jq \'{hookSpecificOutput: {hookEventName: "MessageDisplay", '
        'displayContent: (.delta | gsub("\\\\*\\\\*"; ""))}}\''
    )
    registry = load(settings(tmp_path, one("MessageDisplay", hook)), project_dir=tmp_path)
    outcome = await registry.fire("MessageDisplay", {"delta": "**bold** text\n", "final": True})
    assert outcome.output == "bold text\n"


async def test_user_prompt_expansion_blocks_and_directory_added_runs(tmp_path: Path) -> None:
    hooks = {
        **one("UserPromptExpansion", cmd("echo 'not now' >&2; exit 2"), "deploy"),
        **one("DirectoryAdded", cmd("echo done"), "slash_command"),
    }
    registry = load(settings(tmp_path, hooks), project_dir=tmp_path)
    blocked = await registry.fire(
        "UserPromptExpansion", {"command_name": "deploy", "prompt": "/deploy"}
    )
    assert blocked.blocked
    assert blocked.reason == "not now"
    added = await registry.fire("DirectoryAdded", {"directory": "/x", "source": "slash_command"})
    assert len(added.records) == 1
    assert added.messages == ()  # plain stdout: the debug log only


@pytest.mark.parametrize("event", ["SubagentStop", "TaskCompleted", "PostToolBatch"])
async def test_events_that_block_in_claude_code_block(tmp_path: Path, event: str) -> None:
    hook = cmd("echo 'tests are failing' >&2; exit 2")
    registry = load(settings(tmp_path, one(event, hook)), project_dir=tmp_path)
    outcome = await registry.fire(event, {"agent_type": "Explore", "task_id": "t1"})
    assert outcome.blocked
    assert outcome.reason == "tests are failing"


async def test_a_prompt_hooks_impossible_lets_stop_end(tmp_path: Path) -> None:
    answers: list[dict[str, Any]] = []

    async def judge(request: JudgeRequest) -> dict[str, Any]:
        return answers.pop(0)

    hook = {"type": "prompt", "prompt": "Are all tasks done? $ARGUMENTS"}
    registry = load(settings(tmp_path, one("Stop", hook)), judge=judge)
    answers[:] = [{"ok": False, "reason": "tests missing", "impossible": True}]
    assert not (await registry.fire("Stop", {})).blocked
    answers[:] = [{"ok": False, "reason": "tests missing"}]
    assert (await registry.fire("Stop", {})).reason == "tests missing"


# -- environment and payload ---------------------------------------------------------


async def test_claude_env_file_is_set_where_claude_code_sets_it(tmp_path: Path) -> None:
    write = cmd(
        '[ -n "$CLAUDE_ENV_FILE" ] && echo "export NODE_ENV=production" >> "$CLAUDE_ENV_FILE"'
    )
    hooks = {**one("SessionStart", write), **one("Stop", cmd('echo "${CLAUDE_ENV_FILE:-none}"'))}
    session = f"s-{uuid.uuid4()}"
    registry = load(settings(tmp_path, hooks), project_dir=tmp_path, session_id=session)
    await registry.fire("SessionStart", {"source": "startup"})
    written = await anyio.Path(registry.env_file()).read_text()
    assert written == "export NODE_ENV=production\n"
    assert registry.env_file() != registry.env_file(f"{session}-other")
    stop = await registry.fire("Stop", {})
    assert stop.records[0].exit_code == 0  # Stop has no CLAUDE_ENV_FILE: "none" (not context)


async def test_a_payloads_own_event_field_is_kept(tmp_path: Path) -> None:
    echo = cmd(
        'jq -c \'{hookSpecificOutput: {hookEventName: "X", '
        'additionalContext: (.event + " " + .hook_event_name)}}\''
    )
    registry = load(settings(tmp_path, one("PostToolUse", echo)), project_dir=tmp_path)
    outcome = await registry.fire("PostToolUse", {"tool_name": "Bash", "event": "mine"})
    assert outcome.messages == ("mine PostToolUse",)


# -- settings across files -----------------------------------------------------------


def test_disable_all_hooks_after_precedence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    user = settings(home, one("Stop", cmd("echo user")), disableAllHooks=True)
    project = settings(tmp_path / "p", one("Stop", cmd("echo project")))
    # The user's true disables every Claude Code hook, the user's and the project's.
    assert load(user, project).hooks == ()
    # A project's false overrides the user's true.
    settings(tmp_path / "p", one("Stop", cmd("echo project")), disableAllHooks=False)
    assert len(load(user, project).hooks) == 2
    # The local file's true wins over the project's false, for every file.
    local = settings(tmp_path / "p", {}, "settings.local.json", disableAllHooks=True)
    assert load(user, project, local).hooks == ()


class _Hooks(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        token = self.headers.get("Authorization", "")
        body = json.dumps(
            {"hookSpecificOutput": {"hookEventName": "PreToolUse", "additionalContext": token}}
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def local_port() -> Iterator[int]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hooks)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def _http(port: int, host: str = "localhost") -> dict[str, Any]:
    return {
        "type": "http",
        "url": f"http://{host}:{port}/hooks/pre-tool-use",
        "headers": {"Authorization": "Bearer $MY_TOKEN"},
        "allowedEnvVars": ["MY_TOKEN"],
    }


async def test_the_references_localhost_http_hook_runs(
    tmp_path: Path, local_port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_TOKEN", "t0k")
    registry = load(settings(tmp_path, one("PreToolUse", _http(local_port), "Bash")))
    outcome = await registry.fire("PreToolUse", {"tool_name": "Bash", "tool_input": {}})
    assert not outcome.errors
    assert outcome.messages == ("Bearer t0k",)


async def test_http_allowlists_apply_across_files(
    tmp_path: Path, local_port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_TOKEN", "t0k")
    hook = _http(local_port)
    kept = settings(
        tmp_path / "a", one("PreToolUse", hook), allowedHttpHookUrls=["http://localhost:*"]
    )
    other = settings(tmp_path / "b", one("PostToolUse", _http(local_port, "127.0.0.2")))
    registry = load(kept, other)
    assert [h.event for h in registry.hooks] == ["PreToolUse"]  # 127.0.0.2 is not listed
    assert any("is not in allowedHttpHookUrls: left out" in n for n in registry.notes)
    limited = settings(tmp_path / "c", {}, httpHookAllowedEnvVars=["OTHER"])
    registry = load(kept, limited)
    outcome = await registry.fire("PreToolUse", {"tool_name": "Bash", "tool_input": {}})
    assert outcome.messages == ("Bearer",)  # MY_TOKEN is not on the merged list: ""


async def test_a_private_address_needs_an_allowlist_entry_naming_it(
    tmp_path: Path, local_port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 127.0.0.2 is loopback too, but not a name the URL check lets through by itself:
    # only 'localhost' and loopback literals are; here an entry names the host.
    hook = _http(local_port, "10.255.255.1")
    registry = load(settings(tmp_path, one("PreToolUse", {**hook, "timeout": 2})))
    outcome = await registry.fire("PreToolUse", {"tool_name": "Bash", "tool_input": {}})
    assert outcome.errors
    assert "private" in (outcome.errors[0].error or "")
    granting = settings(
        tmp_path,
        one("PreToolUse", {**hook, "timeout": 2}),
        allowedHttpHookUrls=["http://10.255.255.1:*"],
    )
    assert not load(granting).hooks[0].allow_private_network  # type: ignore[attr-defined]
    # A repository's grant counts once its trust record names it.
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    store = TrustStore()
    sha = digest(granting.read_bytes())
    store.trust([Trusted(str(granting.resolve()), sha, grants=file_grants(granting.read_bytes()))])
    named = load(granting)
    assert named.hooks[0].allow_private_network  # type: ignore[attr-defined]


async def test_mcp_tool_hooks_call_a_server_named_in_mcp_json(tmp_path: Path) -> None:
    mcp = {"mcpServers": {"checks": {"command": PY, "args": [str(HELPERS / "mcp_server.py")]}}}
    (tmp_path / ".mcp.json").write_text(json.dumps(mcp))
    hook = {
        "type": "mcp_tool",
        "server": "checks",
        "tool": "claude_shape",
        "input": {"tool_name": "${tool_name}"},
        "timeout": 30,
    }
    registry = load(settings(tmp_path, one("PreToolUse", hook, "Write")), project_dir=tmp_path)
    outcome = await registry.fire("PreToolUse", {"tool_name": "Write", "tool_input": {}})
    assert outcome.decision == "ask"
    assert outcome.reason == "check Write"
    missing = load(settings(tmp_path, one("PreToolUse", {**hook, "server": "nowhere"})))
    assert any("'nowhere' is not in .mcp.json" in n for n in missing.notes)
    failed = await missing.fire("PreToolUse", {"tool_name": "Write"})
    assert not failed.blocked  # a non-blocking error, as when a server is not connected
    assert failed.errors


async def test_once_is_honoured_in_a_skills_front_matter(tmp_path: Path) -> None:
    # Claude Code: `once: true` runs a skill's hook once per session, then removes it.
    skill = tmp_path / "skills" / "setup-once" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text(
        "---\nname: setup-once\nhooks:\n  PreToolUse:\n    - matcher: Bash\n      hooks:\n"
        "        - type: command\n          command: echo ran >> ran.txt\n"
        "          once: true\n---\nA skill.\n"
    )
    registry = load(tmp_path / "skills", project_dir=tmp_path)
    for _ in range(2):
        await registry.fire("PreToolUse", {"tool_name": "Bash", "tool_input": {}})
    assert (await anyio.Path(tmp_path / "ran.txt").read_text()) == "ran\n"
