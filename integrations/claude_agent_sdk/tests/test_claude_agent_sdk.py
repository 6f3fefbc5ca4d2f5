"""with_hooks in the real Claude Agent SDK, against a fake CLI behind its Transport."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import ClaudeAgentOptions, HookMatcher, ResultMessage, query
from fake_cli import FakeCLI
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from orchestra_claude_agent_sdk import with_hooks

import orchestra.skills
from orchestra import Delegate, Fail, Replace, Skip, SubagentHooks, TaskHooks, TaskState
from orchestra.tracing import names

pytestmark = pytest.mark.anyio

NOT_TMP = "grep -q 'rm -rf /tmp' && { echo 'not /tmp' >&2; exit 2; }; exit 0"
RM_GUARD = (
    "grep -q 'rm -rf' && { echo 'refusing rm -rf: destroys the filesystem' >&2; exit 2; }; exit 0"
)


def load(tmp_path: Path, hooks: dict[str, Any], **options: Any) -> orchestra.skills.HookRegistry:
    path = tmp_path / "orchestra.yaml"
    path.write_text(json.dumps({"hooks": hooks}))  # JSON is YAML
    return orchestra.skills.load(path, **options)


def command(script: str, matcher: str = "Bash", **fields: Any) -> dict[str, Any]:
    return {"matcher": matcher, "hooks": [{"type": "command", "command": script, **fields}]}


def bash(cmd: str, tool_use_id: str = "toolu_1") -> tuple[str, dict[str, Any]]:
    return "PreToolUse", {
        "tool_name": "Bash",
        "tool_input": {"command": cmd},
        "tool_use_id": tool_use_id,
    }


async def run(options: ClaudeAgentOptions, cli: FakeCLI) -> list[Any]:
    return [message async for message in query(prompt="go", options=options, transport=cli)]


def specific(answer: dict[str, Any]) -> dict[str, Any]:
    return dict(answer.get("hookSpecificOutput") or {})


async def test_initialize_carries_the_hook_callback_ids(tmp_path: Path) -> None:
    registry = load(
        tmp_path,
        {"PreToolUse": [command(RM_GUARD)], "Stop": [command("exit 0", matcher="*")]},
    )
    theirs = HookMatcher(matcher="Edit", hooks=[_no_opinion])
    options = with_hooks(ClaudeAgentOptions(hooks={"PreToolUse": [theirs]}), registry=registry)
    cli = FakeCLI([])
    messages = await run(options, cli)
    assert isinstance(messages[-1], ResultMessage)
    assert cli.initialize is not None
    hooks = cli.initialize["hooks"]
    assert set(hooks) == {"PreToolUse", "Stop"}
    # the user's own matcher is kept, orchestra's comes after it and fails closed
    assert [m["matcher"] for m in hooks["PreToolUse"]] == ["Edit", None]
    assert hooks["PreToolUse"][1]["onFailure"] == "block"
    assert "onFailure" not in hooks["Stop"][0]
    ids = [i for m in hooks.values() for matcher in m for i in matcher["hookCallbackIds"]]
    assert len(ids) == len(set(ids)) == 3
    assert all(i.startswith("hook_") for i in ids)


async def test_nothing_to_answer_adds_no_callback(tmp_path: Path) -> None:
    options = with_hooks(ClaudeAgentOptions(), registry=load(tmp_path, {}))
    assert options.hooks is None
    assert options.can_use_tool is None


async def test_a_yaml_deny_of_rm_rf_is_a_deny_with_the_hooks_reason(tmp_path: Path) -> None:
    registry = load(tmp_path, {"PreToolUse": [command(RM_GUARD)]})
    cli = FakeCLI([bash("rm -rf /"), bash("ls", "toolu_2")])
    await run(with_hooks(ClaudeAgentOptions(), registry=registry), cli)
    (event, denied), (_, allowed) = cli.answers
    assert event == "PreToolUse"
    assert specific(denied) == {
        "hookEventName": "PreToolUse",
        "permissionDecision": "deny",
        "permissionDecisionReason": "refusing rm -rf: destroys the filesystem",
    }
    assert allowed == {}  # no opinion: Claude Code's own permissions decide


async def test_a_transform_is_updated_input_and_the_guards_judge_it(tmp_path: Path) -> None:
    rewrite = json.dumps({"modified_input": {"command": "rm -rf /tmp/x --one-file-system"}})
    hooks = {
        "PreToolUse": [
            {
                "matcher": "Bash",
                "hooks": [
                    {"type": "command", "command": f"echo '{rewrite}'", "phase": "transform"}
                ],
            },
            {
                "matcher": "Bash",
                "hooks": [
                    {
                        "type": "command",
                        "command": NOT_TMP,
                        "phase": "guard",
                    }
                ],
            },
        ]
    }
    registry = load(tmp_path, hooks)
    cli = FakeCLI([bash("rm -rf /tmp/x")])
    await run(with_hooks(ClaudeAgentOptions(), registry=registry), cli)
    [(_, answer)] = cli.answers
    # the guard judged the rewritten input, not the one the model sent
    assert specific(answer)["permissionDecision"] == "deny"
    assert specific(answer)["permissionDecisionReason"] == "not /tmp"


async def test_a_transform_the_guards_accept_is_updated_input(tmp_path: Path) -> None:
    rewrite = json.dumps({"modified_input": {"command": "ls -la"}})
    registry = load(
        tmp_path,
        {"PreToolUse": [command(f"echo '{rewrite}'", phase="transform"), command(RM_GUARD)]},
    )
    cli = FakeCLI([bash("ls")])
    await run(with_hooks(ClaudeAgentOptions(), registry=registry), cli)
    [(_, answer)] = cli.answers
    assert specific(answer) == {
        "hookEventName": "PreToolUse",
        "permissionDecision": "allow",
        "updatedInput": {"command": "ls -la"},
    }


class Sudo(TaskHooks):
    def before_execute(self, ctx: Any) -> Replace | None:
        return Replace({"command": "rm -rf / " + ctx.inputs["command"]})


async def test_a_python_hooks_new_input_goes_back_to_the_yaml_guards(tmp_path: Path) -> None:
    registry = load(tmp_path, {"PreToolUse": [command(RM_GUARD)]})
    cli = FakeCLI([bash("ls")])
    await run(with_hooks(ClaudeAgentOptions(), registry=registry, hooks=[Sudo()]), cli)
    [(_, answer)] = cli.answers
    assert specific(answer)["permissionDecision"] == "deny"
    assert "rm -rf" in specific(answer)["permissionDecisionReason"]


async def test_additional_context_and_a_block(tmp_path: Path) -> None:
    hooks = {
        "UserPromptSubmit": [
            {"hooks": [{"type": "prompt", "prompt": "The repository is read-only."}]}
        ],
        "Stop": [command("echo 'tests still fail' >&2; exit 2", matcher="*")],
    }
    cli = FakeCLI(
        [
            ("UserPromptSubmit", {"prompt": "fix it"}),
            ("Stop", {"stop_hook_active": False}),
        ]
    )
    await run(with_hooks(ClaudeAgentOptions(), registry=load(tmp_path, hooks)), cli)
    (_, context), (_, block) = cli.answers
    assert specific(context) == {
        "hookEventName": "UserPromptSubmit",
        "additionalContext": "The repository is read-only.",
    }
    assert block == {"decision": "block", "reason": "tests still fail"}


async def test_enforce_false_answers_nothing_and_fills_audited(tmp_path: Path) -> None:
    record = tmp_path / "events.jsonl"
    hooks = {"PreToolUse": [command(RM_GUARD, enforce=False)]}
    registry = load(tmp_path, hooks, record=record)
    cli = FakeCLI([bash("rm -rf /")])
    await run(with_hooks(ClaudeAgentOptions(), registry=registry), cli)
    assert cli.answers == [("PreToolUse", {})]
    [line] = [json.loads(x) for x in record.read_text().splitlines()]
    assert line["event"] == "PreToolUse"
    assert line["payload"]["tool_input"] == {"command": "rm -rf /"}
    assert line["payload"]["tool_use_id"] == "toolu_1"
    assert line["outcome"]["blocked"] is False
    [audited] = line["outcome"]["audited"]
    assert audited["decision"] == "block"  # exit 2
    assert audited["blocked"] is True
    assert audited["reason"] == "refusing rm -rf: destroys the filesystem"


async def test_recorded_events_replay_through_a_new_policy(tmp_path: Path) -> None:
    record = tmp_path / "events.jsonl"
    old = load(tmp_path, {"PreToolUse": [command("exit 0", matcher="*")]}, record=record)
    old_options = with_hooks(ClaudeAgentOptions(), registry=old)
    await run(old_options, FakeCLI([bash("rm -rf /"), bash("ls", "toolu_2")]))
    assert len(record.read_text().splitlines()) == 2
    new = load(tmp_path, {"PreToolUse": [command(RM_GUARD)]})
    report = await new.replay(record)
    [change] = report.changes
    assert change.event == "PreToolUse"
    assert (change.line, change.now) == (1, "deny")
    assert "rm -rf /" in change.subject
    assert change.reason == "refusing rm -rf: destroys the filesystem"


async def test_a_span_per_callback(tmp_path: Path, exporter: InMemorySpanExporter) -> None:
    registry = load(
        tmp_path,
        {"PreToolUse": [command(RM_GUARD)], "PostToolUse": [command("exit 0")]},
    )
    cli = FakeCLI(
        [
            bash("rm -rf /"),
            bash("ls", "toolu_2"),
            (
                "PostToolUse",
                {
                    "tool_name": "Bash",
                    "tool_input": {"command": "ls"},
                    "tool_response": {"stdout": "a\n", "stderr": "", "interrupted": False},
                    "tool_use_id": "toolu_2",
                },
            ),
        ]
    )
    await run(with_hooks(ClaudeAgentOptions(), registry=registry), cli)
    spans = exporter.get_finished_spans()
    callbacks = [s for s in spans if s.name == "execute_tool Bash"]
    assert [s.attributes[names.ATTR_HOOK_EVENT] for s in callbacks] == [
        "PreToolUse",
        "PreToolUse",
        "PostToolUse",
    ]
    assert [s.attributes.get(names.ATTR_TOOL_DECISION) for s in callbacks] == [
        "deny",
        "allow",
        None,
    ]
    assert callbacks[0].attributes["gen_ai.tool.call.id"] == "toolu_1"
    hooks = [s for s in spans if s.name == "hook PreToolUse"]
    assert len(hooks) == 2
    assert {h.parent.span_id for h in hooks if h.parent} == {
        c.context.span_id for c in callbacks[:2]
    }


class Tasks(TaskHooks):
    def __init__(self) -> None:
        self.ends: list[tuple[str, TaskState]] = []

    def before_execute(self, ctx: Any) -> Skip | None:
        if ctx.task.id == "Write":
            return Skip("writes are off today")
        return None

    def after_execute(self, ctx: Any, result: Any) -> Replace:
        return Replace({**result, "stdout": result["stdout"].upper()})

    def on_end(self, ctx: Any, state: TaskState) -> None:
        self.ends.append((ctx.task.id, state))


async def test_task_hooks_refuse_rewrite_and_end_each_call() -> None:
    tasks = Tasks()
    cli = FakeCLI(
        [
            ("PreToolUse", {"tool_name": "Write", "tool_input": {"p": "a"}, "tool_use_id": "t1"}),
            bash("ls", "t2"),
            (
                "PostToolUse",
                {
                    "tool_name": "Bash",
                    "tool_input": {"command": "ls"},
                    "tool_response": {"stdout": "a\n", "stderr": "", "interrupted": False},
                    "tool_use_id": "t2",
                },
            ),
            (
                "PostToolUseFailure",
                {"tool_name": "Bash", "tool_input": {"command": "x"}, "error": "exit 1"},
            ),
        ]
    )
    await run(with_hooks(ClaudeAgentOptions(), hooks=[tasks]), cli)
    (_, skipped), (_, ran), (_, post), (_, failed) = cli.answers
    assert specific(skipped)["permissionDecision"] == "deny"
    assert specific(skipped)["permissionDecisionReason"] == "writes are off today"
    assert ran == {}
    assert specific(post)["updatedToolOutput"] == {
        "stdout": "A\n",
        "stderr": "",
        "interrupted": False,
    }
    assert failed == {}
    assert tasks.ends == [
        ("Write", TaskState.SKIPPED),
        ("Bash", TaskState.SUCCEEDED),
        ("Bash", TaskState.FAILED),
    ]


class Agents(SubagentHooks):
    def __init__(self) -> None:
        self.seen: list[tuple[str, str | None, str]] = []

    def before_dispatch(self, ctx: Any) -> Fail | Delegate | None:
        self.seen.append((ctx.subagent_name, ctx.parent_agent, ctx.task))
        if ctx.subagent_name == "deployer":
            return Fail("no deploys from an agent")
        if ctx.subagent_name == "general-purpose":
            return Delegate("code-reviewer")
        return None

    def after_dispatch(self, ctx: Any, result: Any) -> Replace:
        return Replace(f"[{result.agent}] {result.output}")


def agent_call(agent: str, call_id: str) -> tuple[str, dict[str, Any]]:
    tool_input = {"subagent_type": agent, "prompt": "review the diff", "description": "r"}
    return "PreToolUse", {"tool_name": "Agent", "tool_input": tool_input, "tool_use_id": call_id}


async def test_subagents_through_subagent_hooks_and_the_yaml_subagent_events(
    tmp_path: Path,
) -> None:
    hooks = {
        "SubagentStart": [
            {"matcher": "code-reviewer", "hooks": [{"type": "prompt", "prompt": "Be terse."}]}
        ],
        "SubagentStop": [command("echo 'no summary yet' >&2; exit 2", matcher="*")],
    }
    agents = Agents()
    done = {
        "tool_name": "Agent",
        "tool_input": {"subagent_type": "code-reviewer", "prompt": "review the diff"},
        "tool_response": "LGTM",
        "tool_use_id": "a2",
    }
    cli = FakeCLI(
        [
            agent_call("deployer", "a1"),
            agent_call("general-purpose", "a2"),
            ("SubagentStart", {"agent_id": "ag-1", "agent_type": "code-reviewer"}),
            (
                "SubagentStop",
                {
                    "agent_id": "ag-1",
                    "agent_type": "code-reviewer",
                    "agent_transcript_path": "/tmp/a",
                    "stop_hook_active": False,
                },
            ),
            ("PostToolUse", done),
        ]
    )
    options = with_hooks(
        ClaudeAgentOptions(), registry=load(tmp_path, hooks), subagent_hooks=[agents]
    )
    await run(options, cli)
    (_, failed), (_, delegated), (_, start), (_, stop), (_, post) = cli.answers
    assert specific(failed)["permissionDecision"] == "deny"
    assert specific(failed)["permissionDecisionReason"] == "no deploys from an agent"
    assert specific(delegated)["updatedInput"]["subagent_type"] == "code-reviewer"
    assert specific(start) == {"hookEventName": "SubagentStart", "additionalContext": "Be terse."}
    assert stop == {"decision": "block", "reason": "no summary yet"}
    assert specific(post)["updatedToolOutput"] == "[code-reviewer] LGTM"
    assert agents.seen == [
        ("deployer", None, "review the diff"),
        ("general-purpose", None, "review the diff"),
        ("code-reviewer", None, "review the diff"),  # the delegation, judged again
    ]


async def test_a_guard_that_cannot_answer_refuses_the_call(tmp_path: Path) -> None:
    registry = load(tmp_path, {"PreToolUse": [command("exit 1", on_error="raise")]})
    cli = FakeCLI([bash("ls")])
    await run(with_hooks(ClaudeAgentOptions(), registry=registry), cli)
    [(_, answer)] = cli.answers
    assert specific(answer)["permissionDecision"] == "deny"
    assert "CriticalHookError" in specific(answer)["permissionDecisionReason"]


async def test_can_use_tool_is_a_permission_request(tmp_path: Path) -> None:
    hooks = {
        "PermissionRequest": [
            {
                "matcher": "Bash",
                "hooks": [{"type": "permission", "decision": "deny", "reason": "no shell"}],
            },
            {"matcher": "Read", "hooks": [{"type": "permission", "decision": "allow"}]},
        ]
    }
    asked: list[str] = []

    async def theirs(name: str, tool_input: dict[str, Any], ctx: Any) -> Any:
        from claude_agent_sdk import PermissionResultAllow

        asked.append(name)
        return PermissionResultAllow()

    options = with_hooks(ClaudeAgentOptions(can_use_tool=theirs), registry=load(tmp_path, hooks))
    request = {"input": {"command": "ls"}, "permission_suggestions": []}
    cli = FakeCLI(
        [
            ("can_use_tool", {"tool_name": "Bash", "tool_use_id": "p1", **request}),
            ("can_use_tool", {"tool_name": "Read", "tool_use_id": "p2", "input": {"p": "a"}}),
            ("can_use_tool", {"tool_name": "Edit", "tool_use_id": "p3", "input": {"p": "a"}}),
        ]
    )
    await _stream(options, cli)
    (_, bash_), (_, read), (_, edit) = cli.answers
    assert bash_ == {"behavior": "deny", "message": "no shell"}
    assert read == {"behavior": "allow", "updatedInput": {"p": "a"}}
    assert edit == {"behavior": "allow", "updatedInput": {"p": "a"}}
    assert asked == ["Edit"]  # no hook answered: the user's own callback decides


async def _stream(options: ClaudeAgentOptions, cli: FakeCLI) -> None:
    """``can_use_tool`` needs the streaming form of the prompt."""

    async def prompt() -> Any:
        yield {"type": "user", "message": {"role": "user", "content": "go"}}

    async for _ in query(prompt=prompt(), options=options, transport=cli):
        pass


async def _no_opinion(hook_input: Any, tool_use_id: Any, context: Any) -> Any:
    return {}


async def test_options_built_inside_guarded_work_follow_its_policy(tmp_path: Path) -> None:
    from orchestra.bridge import policy_scope

    registry = load(tmp_path, {"PreToolUse": [command(RM_GUARD)]})
    with policy_scope(registry):
        options = with_hooks(ClaudeAgentOptions())  # no registry of its own: the ambient one
    cli = FakeCLI([bash("rm -rf /")])
    await run(options, cli)
    [(_, answer)] = cli.answers
    assert specific(answer)["permissionDecision"] == "deny"


async def test_an_mcp_tool_matches_lobehubs_identifier_api_name(tmp_path: Path) -> None:
    # lobehub (seed 004) names a tool identifier/apiName: the CLI's mcp__github__create_issue
    # is github/create_issue; gitlab's tool of the same name is not
    no_issues = "echo 'no new issues today' >&2; exit 2"
    registry = load(tmp_path, {"PreToolUse": [command(no_issues, matcher="github/create_issue")]})
    calls = [
        (
            "PreToolUse",
            {
                "tool_name": f"mcp__{server}__create_issue",
                "tool_input": {},
                "tool_use_id": f"toolu_{server}",
            },
        )
        for server in ("github", "gitlab")
    ]
    cli = FakeCLI(calls)
    await run(with_hooks(ClaudeAgentOptions(), registry=registry), cli)
    (_, denied), (_, allowed) = cli.answers
    assert specific(denied)["permissionDecision"] == "deny"
    assert specific(denied)["permissionDecisionReason"] == "no new issues today"
    assert allowed == {}


async def test_a_permission_request_carries_the_permission_suggestions(tmp_path: Path) -> None:
    # The reference: "An optional `permission_suggestions` array contains the "always
    # allow" options the user would normally see in the permission dialog"
    log = tmp_path / "events.jsonl"
    hooks = {"PermissionRequest": [command(f"cat >> {log}; echo >> {log}")]}
    options = with_hooks(ClaudeAgentOptions(), registry=load(tmp_path, hooks))
    suggestion = {
        "type": "addRules",
        "rules": [{"toolName": "Bash", "ruleContent": "rm -rf node_modules"}],
        "behavior": "allow",
        "destination": "localSettings",
    }
    request = {
        "tool_name": "Bash",
        "tool_use_id": "p1",
        "input": {"command": "rm -rf node_modules"},
        "permission_suggestions": [suggestion],
    }
    await _stream(options, FakeCLI([("can_use_tool", request)]))
    [event] = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    assert event["permission_suggestions"] == [suggestion]
    assert event["tool_input"] == {"command": "rm -rf node_modules"}
    # "PermissionRequest hooks receive tool_name and tool_input fields like PreToolUse
    # hooks, but without tool_use_id"; session_id and cwd are the common fields, timestamp
    # and event orchestra's (listed on the conformance page)
    common = {"session_id", "cwd", "hook_event_name", "timestamp", "event"}
    assert set(event) == common | {"tool_name", "tool_input", "permission_suggestions"}
