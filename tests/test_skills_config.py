"""Loading and validation of YAML hook configs: what loads, and every refusal."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from orchestra import ConfigError
from orchestra.skills import EVENTS, CommandHook, HookRegistry, PromptHook, load


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return path


def refused(path: Path) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        load(path)
    return info.value


# --- the catalog --------------------------------------------------------------------------


def test_catalog_has_the_events_of_the_contract_and_claude_codes_newer_ones() -> None:
    assert list(EVENTS) == [
        "PreToolUse",
        "PostToolUse",
        "PostToolUseFailure",
        "PermissionRequest",
        "PermissionDenied",
        "SessionStart",
        "SessionEnd",
        "Stop",
        "StopFailure",
        "Notification",
        "UserPromptSubmit",
        "PreCompact",
        "PostCompact",
        "ConfigChange",
        "InstructionsLoaded",
        "PostToolBatch",
        "SubagentStart",
        "SubagentStop",
        "StepStart",
        "StepEnd",
        "TaskCreated",
        "TaskCompleted",
        "Setup",
        "TeammateIdle",
        "WorktreeCreate",
        "WorktreeRemove",
        "Elicitation",
        "ElicitationResult",
        "CwdChanged",
        "FileChanged",
        "UserPromptExpansion",
        "MessageDisplay",
        "DirectoryAdded",
        "RunStart",
        "AttemptStart",
        "AttemptEnd",
        "AttemptRetry",
        "EdgeSelected",
        "RunEnd",
    ]


def test_catalog_guard_events_default_to_block_and_the_rest_to_continue() -> None:
    blocking = {name for name, spec in EVENTS.items() if spec.default_on_error == "block"}
    assert blocking == {"PreToolUse", "PermissionRequest"}
    for spec in EVENTS.values():
        assert spec.can_block or spec.default_on_error == "continue"
        assert spec.can_modify == (spec.input_field is not None)


def test_catalog_matcher_fields() -> None:
    assert EVENTS["PreToolUse"].matcher_field == "tool_name"
    assert EVENTS["SessionStart"].matcher_field == "source"
    assert EVENTS["SubagentStart"].matcher_field == "agent_name"
    assert EVENTS["TaskCreated"].matcher_field == "task_id"
    assert EVENTS["PreCompact"].matcher_field == "trigger"
    assert EVENTS["Stop"].matcher_field is None


def test_catalog_step_events_are_observe_only_and_match_the_agent() -> None:
    for name in ("StepStart", "StepEnd"):
        spec = EVENTS[name]
        assert spec.matcher_field == "agent_name"
        assert not spec.can_block
        assert not spec.can_modify
        assert not spec.phases
        assert spec.default_on_error == "continue"
        assert spec.claude.exit_2 == "ignored"  # no Claude Code event: nothing blocks


async def test_step_events_match_the_agent_and_ignore_a_deny(
    anyio_backend: str, tmp_path: Path
) -> None:
    sent = tmp_path / "sent.json"
    deny = """{"decision": "deny", "reason": "stop here"}"""
    registry = HookRegistry(
        [
            PromptHook(event="StepStart", matcher="planner", prompt="seen"),
            CommandHook(event="StepEnd", matcher="planner", command=f"cat > {sent}; echo '{deny}'"),
        ]
    )
    start = {"agent_name": "planner", "step": 1, "model": None, "message_count": 2}
    assert (await registry.fire("StepStart", start)).messages == ("seen",)
    assert (await registry.fire("StepStart", {**start, "agent_name": "writer"})).records == ()
    usage = {"input_tokens": 3, "output_tokens": None}
    end = {**start, "tool_calls": ["search"], "usage": usage, "duration_ms": 1.5, "error": None}
    outcome = await registry.fire("StepEnd", end)
    assert not outcome.blocked
    assert outcome.decision is None
    assert outcome.records[0].note == "deny ignored: StepEnd cannot block"
    got = json.loads(sent.read_text())
    assert got["hook_event_name"] == "StepEnd"
    assert {k: got[k] for k in end} == end


# --- what loads ---------------------------------------------------------------------------


def test_load_reads_the_design_example_with_defaults(tmp_path: Path) -> None:
    config = write(
        tmp_path / "orchestra.yaml",
        """
        hooks:
          PreToolUse:
            - matcher: "Bash|Edit"
              hooks:
                - type: command
                  command: "./validate.sh"
                  timeout: 5
                  on_error: continue
          PostToolUse:
            - hooks:
                - type: prompt
                  prompt: "remember the style guide"
        """,
    )
    registry = load(config)
    assert isinstance(registry, HookRegistry)
    first, second = registry.hooks
    assert (first.event, first.matcher, first.type, first.timeout, first.on_error) == (
        "PreToolUse",
        "Bash|Edit",
        "command",
        5.0,
        "continue",
    )
    assert first.source == f"{config}:5"
    assert (second.matcher, second.timeout, second.on_error) == (None, 10.0, "continue")


def test_guard_events_default_to_on_error_block(tmp_path: Path) -> None:
    config = write(
        tmp_path / "orchestra.yaml",
        """
        hooks:
          PermissionRequest:
            - hooks: [{type: command, command: "true"}]
          Notification:
            - hooks: [{type: command, command: "true"}]
        """,
    )
    assert [hook.on_error for hook in load(config).hooks] == ["block", "continue"]


def test_star_and_empty_matchers_match_everything(tmp_path: Path) -> None:
    config = write(
        tmp_path / "orchestra.yaml",
        """
        hooks:
          PreToolUse:
            - {matcher: "*", hooks: [{type: prompt, prompt: a}]}
            - {matcher: "", hooks: [{type: prompt, prompt: b}]}
          Stop:
            - {matcher: "*", hooks: [{type: prompt, prompt: c}]}
        """,
    )
    assert [hook.matcher for hook in load(config).hooks] == [None, None, None]


def test_skill_md_front_matter_and_skill_dir(tmp_path: Path) -> None:
    skill = write(
        tmp_path / "skills" / "fmt" / "SKILL.md",
        """
        ---
        name: fmt
        description: formats files after edits
        hooks:
          PostToolUse:
            - matcher: "Edit|Write"
              hooks:
                - type: command
                  command: "${SKILL_DIR}/format.sh"
                - type: command
                  args: ["${SKILL_DIR}/format.sh", "--check"]
        ---
        # Formatting

        Body text is not read.
        """,
    )
    registry = load(skill)
    skill_dir = str(skill.parent.resolve())
    command, argv = registry.hooks
    assert command.skill_dir == skill_dir
    assert command.command == f"{skill_dir}/format.sh"
    assert argv.args == (f"{skill_dir}/format.sh", "--check")
    assert command.source == f"{skill}:8"


def test_skill_dir_with_shell_syntax_is_left_to_the_shell(tmp_path: Path) -> None:
    skill = write(
        tmp_path / "we$(ird) dir" / "SKILL.md",
        """
        ---
        hooks:
          Stop:
            - hooks: [{type: command, command: 'cat "${SKILL_DIR}/x"'}]
        ---
        """,
    )
    (hook,) = load(skill).hooks
    assert hook.command == 'cat "${SKILL_DIR}/x"'
    assert hook.skill_dir == str(skill.parent.resolve())


def test_skill_md_without_front_matter_has_no_hooks(tmp_path: Path) -> None:
    skill = write(tmp_path / "SKILL.md", "# Just a skill\n")
    assert load(skill).hooks == ()


def test_folder_loads_its_config_then_every_skill_below(tmp_path: Path) -> None:
    write(
        tmp_path / "orchestra.yaml",
        "hooks:\n  Stop:\n    - hooks: [{type: prompt, prompt: project}]\n",
    )
    for name in ("b", "a"):
        write(
            tmp_path / "skills" / name / "SKILL.md",
            f"---\nhooks:\n  Stop:\n    - hooks: [{{type: prompt, prompt: {name}}}]\n---\n",
        )
    assert [hook.prompt for hook in load(tmp_path).hooks] == ["project", "a", "b"]


def test_folder_search_skips_tool_folders(tmp_path: Path) -> None:
    for folder in (".venv/lib/site-packages/pkg", "node_modules/x", ".git/y", ".claude/skills/z"):
        write(
            tmp_path / folder / "SKILL.md",
            f"---\nhooks:\n  Stop:\n    - hooks: [{{type: prompt, prompt: '{folder}'}}]\n---\n",
        )
    assert [hook.prompt for hook in load(tmp_path).hooks] == [".claude/skills/z"]


def test_merge_order_is_global_project_skill_and_identical_hooks_are_kept_once(
    tmp_path: Path,
) -> None:
    hook = "hooks:\n  Stop:\n    - hooks: [{type: command, command: 'true', timeout: 10}]\n"
    global_config = write(tmp_path / "global" / "orchestra.yaml", hook)
    project = write(
        tmp_path / "project" / "orchestra.yaml",
        # the same hook with its defaults left out, and a null matcher: identical
        "hooks:\n  Stop:\n    - matcher: null\n      hooks: [{type: command, command: 'true'}]\n"
        "    - hooks: [{type: prompt, prompt: project}]\n",
    )
    skill = write(
        tmp_path / "project" / "skills" / "s" / "SKILL.md",
        "---\nhooks:\n  Stop:\n    - hooks: [{type: prompt, prompt: skill}]\n---\n",
    )
    registry = load(skill, global_config, project)
    assert [(h.type, getattr(h, "prompt", None)) for h in registry.hooks] == [
        ("command", None),
        ("prompt", "project"),
        ("prompt", "skill"),
    ]
    assert registry.hooks[0].file == str(global_config)


def test_empty_optional_fields_count_as_absent_for_duplicates(tmp_path: Path) -> None:
    config = write(
        tmp_path / "orchestra.yaml",
        """
        hooks:
          PreToolUse:
            - matcher: ""
              hooks:
                - {type: permission, decision: deny, reason: "", headers: {}}
            - hooks:
                - {type: permission, decision: deny, on_error: block, timeout: 10}
                - {type: command, command: ""}
        """,
    )
    error = refused(config)
    assert [e.line for e in error.errors] == [5, 8]
    assert "headers: unknown field for a permission hook" in str(error)
    assert "command: expected a non-empty string" in str(error)
    config.write_text(
        "hooks:\n  PreToolUse:\n    - matcher: ''\n"
        "      hooks: [{type: permission, decision: deny, reason: ''}]\n"
        "    - hooks: [{type: permission, decision: deny, on_error: block, timeout: 10}]\n"
    )
    (hook,) = load(config).hooks
    assert (hook.matcher, hook.reason, hook.line) == (None, None, 4)


def test_http_tls_off_allows_plain_http_and_listed_header_variables(tmp_path: Path) -> None:
    config = write(
        tmp_path / "orchestra.yaml",
        """
        hooks:
          Notification:
            - hooks:
                - type: http
                  url: http://127.0.0.1:8080/hook
                  tls: off
                  headers: {Authorization: "Bearer ${TOKEN}", X-Team: "$TEAM"}
                  allowed_env_vars: [TOKEN, TEAM]
        """,
    )
    (hook,) = load(config).hooks
    assert (hook.tls, hook.url) == ("off", "http://127.0.0.1:8080/hook")


def test_mcp_tool_server_as_command_line_or_mapping(tmp_path: Path) -> None:
    config = write(
        tmp_path / "orchestra.yaml",
        """
        hooks:
          PreToolUse:
            - hooks:
                - {type: mcp_tool, server: "python -m guard --strict", tool: check}
                - type: mcp_tool
                  server: {command: python, args: [-m, guard], env: {LEVEL: "2"}}
                  tool: check
                  arguments: {policy: strict}
        """,
    )
    line, mapping = load(config).hooks
    assert line.server is not None
    assert (line.server.command, line.server.args) == ("python", ("-m", "guard", "--strict"))
    assert mapping.server is not None
    assert mapping.server.env == (("LEVEL", "2"),)
    assert mapping.arguments == {"policy": "strict"}


# --- what is refused ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "line", "expected"),
    [
        ("  PreToolUs: []\n", 2, "hooks.PreToolUs: unknown event (did you mean 'PreToolUse'?)"),
        (
            "  Stop:\n    - hooks: [{type: comand, command: x}]\n",
            3,
            "hooks.Stop[0].hooks[0].type: unknown hook type 'comand' (did you mean 'command'?)",
        ),
        (
            "  Stop:\n    - hooks: [{type: command, command: x, timout: 3}]\n",
            3,
            "hooks.Stop[0].hooks[0].timout: unknown field for a command hook "
            "(did you mean 'timeout'?)",
        ),
        (
            "  Stop:\n    - hooks: [{type: prompt, prompt: x, url: 'https://a'}]\n",
            3,
            "hooks.Stop[0].hooks[0].url: unknown field for a prompt hook "
            "('url' is a field of http hooks)",
        ),
        (
            "  Stop:\n    - matchers: x\n      hooks: [{type: prompt, prompt: x}]\n",
            3,
            "hooks.Stop[0].matchers: unknown field (did you mean 'matcher'?)",
        ),
        (
            "  PreToolUse:\n    - matcher: '(Bash'\n      hooks: [{type: prompt, prompt: x}]\n",
            3,
            "hooks.PreToolUse[0].matcher: not a valid RE2 regular expression",
        ),
        (
            "  Stop:\n    - hooks:\n      - type: command\n        command: x\n"
            "        timeout: 301\n",
            6,
            "hooks.Stop[0].hooks[0].timeout: must be in (0, 300] seconds, got 301",
        ),
        (
            "  Stop:\n    - hooks: [{type: command, command: x, timeout: 0}]\n",
            3,
            "timeout: must be in (0, 300] seconds, got 0",
        ),
        (
            "  Stop:\n    - hooks: [{type: command, command: x, timeout: true}]\n",
            3,
            "timeout: expected seconds, got a boolean (true)",
        ),
        (
            "  PostToolUse:\n    - hooks:\n      - type: command\n        command: x\n"
            "        on_error: block\n",
            6,
            "hooks.PostToolUse[0].hooks[0].on_error: PostToolUse cannot block",
        ),
        (
            "  Stop:\n    - matcher: Foo\n      hooks: [{type: prompt, prompt: x}]\n",
            3,
            "hooks.Stop[0].matcher: Stop takes no matcher",
        ),
        (
            "  Stop:\n    - hooks: [{type: command}]\n",
            3,
            "hooks.Stop[0].hooks[0]: a command hook needs 'command' or 'args' (exactly one)",
        ),
        (
            "  Stop:\n    - hooks: [{type: command, command: '${SKILL_DIR}/x.sh'}]\n",
            3,
            "${SKILL_DIR} is only set for hooks in a SKILL.md",
        ),
        (
            "  SessionEnd:\n    - hooks: [{type: permission, decision: deny}]\n",
            3,
            "permission hooks need an event that can block; SessionEnd cannot",
        ),
        (
            "  PreToolUse:\n    - hooks: [{type: permission, decision: maybe}]\n",
            3,
            "decision: expected allow, deny or ask, got a string ('maybe')",
        ),
        (
            "  Stop:\n    - hooks: []\n",
            3,
            "hooks.Stop[0].hooks: expected a non-empty list of hooks",
        ),
        ("  Stop: {matcher: x}\n", 2, "hooks.Stop: expected a list of matchers, got a mapping"),
        ("  Stop:\n    - hooks: [{type: http, url: 'ftp://x'}]\n", 3, "expected an https:// URL"),
        (
            "  Stop:\n    - hooks: [{type: mcp_tool, tool: t}]\n",
            3,
            "hooks.Stop[0].hooks[0].server: missing",
        ),
    ],
)
def test_refused_with_file_line_and_field(
    tmp_path: Path, body: str, line: int, expected: str
) -> None:
    config = write(tmp_path / "orchestra.yaml", "hooks:\n" + body)
    error = refused(config)
    assert isinstance(error, ValueError)
    assert str(error).startswith(f"{config}:{line}: ")
    assert expected in str(error)
    assert (error.file, error.line) == (str(config), line)


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    config = write(
        tmp_path / "orchestra.yaml",
        """
        hooks:
          PreToolUse:
            - matcher: '(a)\\1'  # a backreference: RE2 cannot run it
              hooks:
                - {type: command, command: x, timeout: 500}
                - {type: nope}
          SessionStrat: []
        """,
    )
    error = refused(config)
    assert [(e.line, e.field) for e in error.errors] == [
        (3, "hooks.PreToolUse[0].matcher"),
        (5, "hooks.PreToolUse[0].hooks[0].timeout"),
        (6, "hooks.PreToolUse[0].hooks[1].type"),
        (7, "hooks.SessionStrat"),
    ]
    assert str(error).startswith("4 problems in hook config:\n")
    assert "did you mean 'SessionStart'?" in str(error)


def test_command_over_32_kb_is_refused(tmp_path: Path) -> None:
    command = "echo " + "x" * (32 * 1024)
    config = write(
        tmp_path / "orchestra.yaml",
        f"hooks:\n  Stop:\n    - hooks:\n      - type: command\n        command: {command}\n",
    )
    assert "command: is 32773 bytes; at most 32 KB" in str(refused(config))


def test_plain_http_is_refused_at_load(tmp_path: Path) -> None:
    config = write(
        tmp_path / "orchestra.yaml",
        "hooks:\n  Stop:\n    - hooks:\n      - type: http\n        url: http://example.com/h\n",
    )
    error = refused(config)
    assert error.line == 5
    assert "plain http is refused; use https, or set tls: off" in str(error)


def test_unlisted_header_variable_is_refused_at_load(tmp_path: Path) -> None:
    config = write(
        tmp_path / "orchestra.yaml",
        """
        hooks:
          Stop:
            - hooks:
                - type: http
                  url: https://example.com/h
                  headers:
                    Authorization: "Bearer $API_TOKEN"
                  allowed_env_vars: [API_TOKN]
        """,
    )
    error = refused(config)
    assert error.line == 7
    assert error.field == "hooks.Stop[0].hooks[0].headers.Authorization"
    assert "$API_TOKEN is not in allowed_env_vars (did you mean 'API_TOKN'?)" in str(error)


@pytest.mark.parametrize(
    "matcher",
    # the nested repetitions are harmless on RE2 (tests/test_skills_matchers.py)
    ["Bash", "Edit|Write", "mcp__.*", "Bash(Output)?", "[A-Z][a-z]+", "(ab)+", "a{2}", "(a+)+$"],
)
def test_ordinary_matchers_load(tmp_path: Path, matcher: str) -> None:
    config = write(
        tmp_path / "orchestra.yaml",
        f"hooks:\n  PreToolUse:\n    - matcher: '{matcher}'\n"
        "      hooks: [{type: prompt, prompt: x}]\n",
    )
    assert load(config).hooks[0].matcher == matcher


def test_yaml_alias_bomb_is_refused_without_expanding(tmp_path: Path) -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 30)]
    config = write(tmp_path / "orchestra.yaml", "\n".join(lines) + "\nhooks: *a29\n")
    error = refused(config)  # refused at the first anchor: nothing is expanded
    assert error.line == 1
    assert "YAML anchors (&name) are not allowed" in str(error)


def test_yaml_alias_alone_is_refused(tmp_path: Path) -> None:
    config = write(tmp_path / "orchestra.yaml", "hooks: *nothing\n")
    assert "YAML aliases (*name) are not allowed" in str(refused(config))


def test_python_tag_is_refused_and_nothing_is_constructed(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    config = write(
        tmp_path / "orchestra.yaml",
        f"hooks: !!python/object/apply:os.system ['touch {marker}']\n",
    )
    error = refused(config)
    assert "YAML tag !!python/object/apply:os.system is not allowed" in str(error)
    assert error.line == 1
    assert not marker.exists()


def test_custom_tag_is_refused(tmp_path: Path) -> None:
    config = write(tmp_path / "orchestra.yaml", "hooks:\n  Stop: !include other.yaml\n")
    error = refused(config)
    assert (error.line, "YAML tag !include is not allowed" in str(error)) == (2, True)


def test_duplicate_keys_are_refused(tmp_path: Path) -> None:
    config = write(
        tmp_path / "orchestra.yaml",
        "hooks:\n  Stop:\n    - hooks:\n      - type: prompt\n        prompt: a\n"
        "        prompt: b\n",
    )
    error = refused(config)
    assert error.line == 6
    assert "duplicate key 'prompt' (first on line 5)" in str(error)


def test_a_10_mb_file_is_refused_unread(tmp_path: Path) -> None:
    config = tmp_path / "orchestra.yaml"
    config.write_bytes(b"hooks:\n" + b"# padding\n" * (1024 * 1024))
    error = refused(config)
    assert str(error) == f"{config}: file is over 1 MiB; refused"


def test_deep_nesting_is_refused(tmp_path: Path) -> None:
    config = write(tmp_path / "orchestra.yaml", "hooks: " + "[" * 5000 + "]" * 5000 + "\n")
    assert "nested deeper than 64 levels" in str(refused(config))


def test_yaml_syntax_error_names_the_line(tmp_path: Path) -> None:
    config = write(tmp_path / "orchestra.yaml", "hooks:\n  Stop:\n    - hooks: [unclosed\n")
    error = refused(config)
    assert "YAML syntax error" in str(error)
    assert error.line is not None


def test_bare_star_matcher_gets_a_hint(tmp_path: Path) -> None:
    config = write(
        tmp_path / "orchestra.yaml",
        "hooks:\n  PreToolUse:\n    - matcher: *\n      hooks: [{type: prompt, prompt: x}]\n",
    )
    error = refused(config)
    assert error.line == 3
    assert 'quote it, matcher: "*"' in str(error)


def test_skill_md_errors_name_the_line_in_the_skill_file(tmp_path: Path) -> None:
    skill = write(
        tmp_path / "SKILL.md",
        "---\nname: s\nhooks:\n  Stop:\n    - hooks: [{type: prompt, prompt: x, timeout: -1}]\n"
        "---\n",
    )
    error = refused(skill)
    assert str(error).startswith(f"{skill}:5: hooks.Stop[0].hooks[0].timeout: ")


def test_unclosed_front_matter_is_refused(tmp_path: Path) -> None:
    skill = write(tmp_path / "SKILL.md", "---\nhooks: {}\n")
    assert "front matter opened with '---' is never closed" in str(refused(skill))


def test_missing_path_is_refused(tmp_path: Path) -> None:
    error = refused(tmp_path / "nope.yaml")
    assert str(error) == f"{tmp_path / 'nope.yaml'}: no such file or folder"


def test_unknown_top_level_field_in_config(tmp_path: Path) -> None:
    config = write(tmp_path / "orchestra.yaml", "hook:\n  Stop: []\n")
    assert "hook: unknown top-level field (did you mean 'hooks'?)" in str(refused(config))


def test_not_utf8_is_refused(tmp_path: Path) -> None:
    config = tmp_path / "orchestra.yaml"
    config.write_bytes(b"hooks:\n  Stop: \xff\n")
    error = refused(config)
    assert (error.line, "not UTF-8" in str(error)) == (2, True)
