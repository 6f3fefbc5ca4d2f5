"""Write the Claude Code conformance page from the catalog: ``python scripts/conformance.py``.

``docs/reference/claude-code-conformance.md`` is generated from ``orchestra.skills``'
catalog (each event's Claude Code column, ``_protocol.claude_events``), the fields a
Claude Code file's handlers may have (``_sources.claude.reader``), and the differences
that remain (``DIFFERENCES`` below, also written to
``docs/snippets/claude-code-differences.md``, which the how-to
``docs/howto/from-claude-code.md`` includes). ``--check`` exits 1 when a page is stale
(the docs tests run it).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from orchestra.skills._config.matchers import BACKTRACK_LIMIT
from orchestra.skills._hooks.spec import CLAUDE_MAX_TIMEOUT
from orchestra.skills._protocol.catalog import EVENTS
from orchestra.skills._protocol.claude_events import CLAUDE_EVENTS
from orchestra.skills._protocol.claude_payloads import COMMON_ADDED, COMMON_MISSING, PAYLOADS
from orchestra.skills._sources.claude.reader import (
    _CLAUDE_FIELDS,
    CLAUDE_DEFAULT_TIMEOUTS,
    SESSION_END_CAP,
)

ROOT: Final = Path(__file__).resolve().parent.parent
PAGE: Final = ROOT / "docs" / "reference" / "claude-code-conformance.md"
SNIPPET: Final = ROOT / "docs" / "snippets" / "claude-code-differences.md"

EXIT_2: Final = {
    "block": "blocks; the JSON's blocking reason, else stderr, is the reason",
    "agent": "does not block; stderr goes to the agent (`messages`)",
    "user": "does not block; stderr goes to the user (`system_message`)",
    "debug": "does not block; stderr goes nowhere (Claude Code's debug log)",
    "ignored": "changes nothing (a JSON decision the event reads still counts)",
    "fail": "any non-zero exit fails the action (a block)",
}

# Each handler field of a Claude Code file: what orchestra does with it.
FIELDS: Final = {
    "type": "picks the hook class: `CommandHook`, `HttpHook`, `McpToolHook`, `PromptHook` "
    "(asks the judge), `AgentHook`; another type is skipped with a note, and so is a type "
    "the event does not run (the Types column)",
    "if": "one permission rule (`Bash(rm *)`, `Edit(*.ts)`, `WebFetch(domain:...)`, "
    "`Tool(param:value)`) the tool call must match, else the hook does not start; "
    "best-effort and failing open as Claude Code's; on a non-tool event the hook never runs",
    "timeout": "seconds; the default is the event's (Timeout column) for command, http "
    f"and mcp_tool hooks, {CLAUDE_DEFAULT_TIMEOUTS['prompt']:g} s for prompt hooks, "
    f"{CLAUDE_DEFAULT_TIMEOUTS['agent']:g} s for agent hooks; at most "
    f"{CLAUDE_MAX_TIMEOUT:g} s ({SESSION_END_CAP:g} s on SessionEnd); more is cut, with a note",
    "statusMessage": "kept on the hook (`hook.status_message`) for your UI",
    "once": "ignored, with a note, as Claude Code ignores it in settings files; in a "
    "`SKILL.md`'s front matter (where Claude Code honours it) the hook runs once per registry",
    "onFailure": '`"block"` is `on_error: block`; hooks fail open otherwise',
    "command": "the shell command (`sh -c`), or with `args` the program to run",
    "args": "exec form: `command` and `args` run without a shell; `${CLAUDE_PROJECT_DIR}`, "
    "`${CLAUDE_PLUGIN_ROOT}`, `${CLAUDE_PLUGIN_DATA}` replaced as plain text",
    "async": "runs in the background, not waited for; its `additionalContext` and "
    "`systemMessage` reach the agent with the next `fire`; its decision counts for nothing",
    "asyncRewake": "as `async`; when it exits 2, its stderr (else stdout) reaches the agent "
    "with the next `fire`",
    "shell": '`"bash"` runs `bash -c`, `"powershell"` runs `pwsh -Command`; ignored with `args`',
    "rewakeMessage": "put before the woken text (`messages`)",
    "rewakeSummary": "what the user is shown when it wakes the agent (`system_message`)",
    "url": "the POST target; `http://` is sent without TLS; see the URL rules below",
    "headers": "`$VAR` and `${VAR}` of `allowedEnvVars` interpolated, others empty",
    "allowedEnvVars": "the variables headers may read (cut to `httpHookAllowedEnvVars`)",
    "server": "a server of the project's (or plugin's) `.mcp.json` `mcpServers`, started "
    "over stdio for the call; a name it lacks is a note and each call a hook error",
    "tool": "the tool to call",
    "input": "the tool's arguments, `${tool_input.file_path}` filled in from the event",
    "prompt": "the judge's instructions; `$ARGUMENTS` is the event JSON (appended when absent)",
    "model": "passed to the judge",
    "continueOnBlock": "accepted; a prompt hook's `ok: false` blocks as the event allows",
}

DIFFERENCES: Final = (
    (
        "You fire the events.",
        "orchestra is a library: your agent loop, `@registry.guard`, "
        "`registry.as_subagent_hooks()` or a bridge fires `PreToolUse` and the rest, with "
        "the payload fields you have (`transcript_path`, `permission_mode`, ... are what "
        "you pass). Whether you wait for `fire` on events Claude Code does not wait for "
        "(DirectoryAdded, InstructionsLoaded) is yours to decide, and so is a Stop "
        "hook's block cap: Claude Code stops honouring a Stop block after eight in a "
        "row (`CLAUDE_CODE_STOP_HOOK_BLOCK_CAP`) and sets `stop_hook_active`; orchestra "
        "answers each `fire` and your loop keeps the count.",
    ),
    (
        "Several rewrites: the last in config order wins.",
        "When more than one `PreToolUse` hook returns `updatedInput`, Claude Code takes "
        "the one that finishes last (its hooks run in parallel, so the order is not "
        "fixed); orchestra takes the last in config order, whatever finished first, so a "
        "run is repeatable. As in Claude Code, every matching hook runs to its end: one "
        "hook's deny does not stop a sibling's side effects.",
    ),
    (
        "Command hooks get a minimal environment.",
        "Claude Code passes its whole environment; orchestra passes PATH, HOME, USER, "
        "LOGNAME, SHELL, LANG, LC_*, TZ, TERM, TMPDIR and the project variables "
        "(`CLAUDE_PROJECT_DIR`, `CLAUDE_PLUGIN_ROOT`, `CLAUDE_PLUGIN_DATA`, "
        "`CLAUDE_ENV_FILE`), so a hook is never handed the agent's secrets (a security "
        "default kept on purpose). A hook that needs one: "
        '`load(..., pass_env=("NAME", ...))` names it for every source, or '
        "`orchestra hooks import` it and add `pass_env:`. Claude Code's own session "
        "variables (`CLAUDE_EFFORT`, `CLAUDE_CODE_REMOTE`, "
        "`CLAUDE_CODE_BRIDGE_SESSION_ID`) are not set: orchestra has no effort level, "
        "remote environment or Remote Control session; pass them with `pass_env` if "
        "your agent sets them. `OTEL_*` variables are not passed either, as Claude Code "
        "removes them.",
    ),
    (
        "Background hooks speak with the next `fire`.",
        "An `async` hook's output, and an `asyncRewake` hook's exit 2, are added to the "
        "outcome of the registry's next `fire` (Claude Code: the next turn); nothing wakes "
        "an idle agent, since orchestra does not own the conversation. "
        "`HookRegistry.aclose()` cancels those still running, as `claude -p` does at "
        "teardown.",
    ),
    (
        "`CLAUDE_ENV_FILE` is kept, not applied.",
        "orchestra has no Bash tool to prefix: `registry.env_file()` names the session's "
        "file for the code that runs your agent's shell commands to source.",
    ),
    (
        "Output fields without an orchestra counterpart are read, not acted on.",
        "`sessionTitle`, `initialUserMessage`, `watchPaths`, `reloadSkills`, "
        "`suppressOriginalPrompt`, `classifierContext`, `terminalSequence`, "
        "`updatedPermissions` and `continueOnBlock` are checked and accepted; orchestra "
        "has no session title, watcher, terminal or permission store to apply them to. "
        "One of the wrong type is dropped, as Claude Code drops it, and the hook's record "
        "says so (`sessionTitle dropped: expected a string, got a number`). "
        "Elicitation's `action` and `content` are the outcome's `output` "
        '(`{"action": ..., "content": ...}`), for the code that answers the MCP '
        "server; a PermissionRequest deny with `interrupt: true` stops "
        "(`outcome.stop`); `defer` is no opinion, its reason, `updatedInput` and "
        "`additionalContext` ignored.",
    ),
    (
        "Matchers are JavaScript regexes run on RE2, else on the `regex` package.",
        "Patterns mean the same in the common syntax (classes, anchors, alternation, "
        "`.*`); a pattern RE2 refuses runs on a backtracking engine, and a value it cannot "
        f"decide within {BACKTRACK_LIMIT:g} s counts as a match (the hook runs), so a slow "
        "pattern never skips a guard and never hangs the process. A pattern neither engine "
        "compiles matches nothing (a note says so).",
    ),
    (
        "`if` rules are a best-effort subset of Claude Code's permission matching.",
        "Bash commands are split on `&&`, `||`, `;`, `|`, `&` and newlines, `$()` and "
        "backticks are looked into, assignments and the documented wrappers stripped; "
        "PowerShell commands are split the same way. File rules anchor `/path` at the "
        "project folder (`CLAUDE_PROJECT_DIR`) whatever the settings file. Like Claude "
        "Code's, the filter fails open: use a guard, not `if`, to enforce.",
    ),
    (
        "http hooks keep orchestra's address checks.",
        "A URL naming a loopback host (`localhost`, `127.0.0.1`, `::1`) may reach it, as "
        "the reference's own example needs; any other internal address (private, "
        "link-local such as the cloud metadata address 169.254.169.254, CGNAT) is refused "
        "after DNS resolution unless an `allowedHttpHookUrls` entry names its host, since "
        "a settings file committed to a repository must not reach the machine's network.",
    ),
    (
        "Timeouts are per hook.",
        "SessionEnd hooks each get their own timeout (1.5 s by default, at most 60 s), "
        "not one shared budget, and `CLAUDE_CODE_SESSIONEND_HOOKS_TIMEOUT_MS` is not read; "
        f"no timeout goes past {CLAUDE_MAX_TIMEOUT:g} s.",
    ),
    (
        "Hook output is capped, not spilled to a file.",
        "Claude Code saves output strings over 10,000 characters to a file; orchestra "
        "keeps up to 1 MiB per stream and fails a hook that writes more.",
    ),
    (
        "mcp_tool hooks start their server.",
        "Claude Code calls an already-connected server; orchestra starts the `.mcp.json` "
        "server over stdio for each call (servers over http are not run).",
    ),
    (
        "Prompt and agent hooks ask your judge.",
        "`load(judge=...)` (e.g. `OpenAICompatibleJudge`) answers `{ok, reason}` instead "
        "of Claude Code's model; an agent hook needs a judge with `supports_agent = True`.",
    ),
    (
        "Settings beyond hooks are not read.",
        "Managed settings, `allowManagedHooksOnly`, enabled plugins, `${user_config.*}` "
        "and `CLAUDE_PLUGIN_OPTION_*`, subagent front matter and Claude Code's workspace "
        "trust are not orchestra's: `load(require_trust=True)` and `orchestra hooks trust` "
        "are its own gate.",
    ),
)


def differences() -> str:
    """The differences, as the bullet list both pages show."""
    return "\n".join(f"- **{what}** {why}" for what, why in DIFFERENCES) + "\n"


def _events() -> list[str]:
    rows = [
        "| Event | Matcher (Claude Code) | Matcher (orchestra files) | Can block | Exit 2 "
        "| Plain stdout | Output fields read | Discards | Timeout | `CLAUDE_ENV_FILE` | Types |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, spec in EVENTS.items():
        if name not in CLAUDE_EVENTS:  # orchestra's own (the DAG's moments)
            continue
        claude = spec.claude
        blocks = claude.blocks  # the reference's "Can block?" (of exit 2)
        reads = ", ".join(f"`{f}`" for f in claude.reads) or "-"
        discards = ", ".join(f"`{f}`" for f in claude.discards) or "-"
        types = ", ".join(sorted(claude.types))
        rows.append(
            f"| {name} | {claude.matcher_field or '(none: ignored)'} | "
            f"{spec.matcher_field or '(none)'} | {'yes' if blocks else 'no'} | "
            f"{EXIT_2[claude.exit_2]} | "
            f"{'context' if claude.plain_stdout == 'context' else 'debug log'} | {reads} | "
            f"{discards} | {claude.timeout:g} s | {'yes' if claude.env_file else 'no'} | "
            f"{types} |"
        )
    return rows


def _listed(fields: Mapping[str, str]) -> str:
    return "; ".join(f"`{name}`: {why}" for name, why in fields.items()) or "-"


def _payloads() -> list[str]:
    """The fields of the events orchestra fires itself, against the reference's."""
    rows = [
        "## The fields of the events orchestra fires",
        "",
        "Most events are fired by your code, with the fields you pass; orchestra adds "
        "`session_id` (the registry's) and `cwd` (the project folder) when you leave them "
        "out, and `hook_event_name`. Every event also gets "
        f"{_listed(COMMON_ADDED)}. None gets {_listed(COMMON_MISSING)}.",
        "",
        "The events below are fired by orchestra itself. Their fields are the reference's "
        "input fields but for these (a test fires each one and pins its fields against the "
        "reference's):",
        "",
        "| Event | Fired by | Added | Not sent | Other values |",
        "|---|---|---|---|---|",
    ]
    for name, payload in PAYLOADS.items():
        rows.append(
            f"| {name} | {payload.producers} | {_listed(payload.added)} | "
            f"{_listed(payload.missing)} | {_listed(payload.values)} |"
        )
    return rows


def page() -> str:
    """The conformance page."""
    fields = sorted({f for names in _CLAUDE_FIELDS.values() for f in names}, key=list(FIELDS).index)
    lines = [
        "# Claude Code conformance",
        "",
        "<!-- generated by scripts/conformance.py from the catalog: do not edit -->",
        "",
        "How orchestra reads each event and each handler field of a Claude Code file "
        "(`.claude/settings.json`, `.claude/settings.local.json`, `~/.claude/settings.json`, "
        "a plugin's `hooks/hooks.json`), as Claude Code's current hooks reference documents "
        "them. See [Coming from Claude Code](../howto/from-claude-code.md) for a walk-through.",
        "",
        "## Events",
        "",
        "Matcher: the input field a Claude Code matcher is matched against (an exact name "
        "or a `|`/`,` list when it holds only letters, digits, `_`, `-`, spaces, `,` and "
        "`|`, only `_` and `|` on FileChanged and StopFailure; otherwise a regex searched "
        "anywhere; FileChanged matches the file's base name). A matcher on an event "
        "without one is ignored, with a note. Exit 2: what exit 2 of a command hook does; "
        "any other non-zero exit is a non-blocking error unless stdout is valid JSON, "
        "which then decides alone. Plain stdout: where stdout that is not a JSON object "
        "(or does not parse as one) goes on exit 0. The catalog's other events (the DAG's "
        "own moments, and the agent bridges' `StepStart` and `StepEnd`) are orchestra's, "
        "not Claude Code's.",
        "",
        *_events(),
        "",
        "Two events depend on their payload, as the reference says: a ConfigChange from "
        "`policy_settings` cannot be blocked (a block is ignored, the hook's record says "
        "so), and a DirectoryAdded hook's `systemMessage` goes to the agent (`messages`) "
        "when `source` is `slash_command`, nowhere when it is `register_repo_root`.",
        "",
        "## Handler fields",
        "",
        "| Field | Types | What orchestra does |",
        "|---|---|---|",
    ]
    for field in fields:
        types = ", ".join(t for t, names in _CLAUDE_FIELDS.items() if field in names)
        lines.append(f"| `{field}` | {types} | {FIELDS[field]} |")
    lines += [
        "",
        "Any other field is a note, never a load error; so is any other top-level key "
        "(`permissions`, `model`, `env`, ...). `disableAllHooks` is read after Claude "
        "Code's precedence (user < project < local) across the files of one `load`, and "
        "`allowedHttpHookUrls` and `httpHookAllowedEnvVars` are merged across them.",
        "",
        *_payloads(),
        "",
        "## Differences that remain",
        "",
        differences().rstrip("\n"),
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    outputs = {PAGE: page(), SNIPPET: differences()}
    if "--check" in argv:
        stale = [
            str(path)
            for path, text in outputs.items()
            if not path.is_file() or path.read_text() != text
        ]
        for path in stale:
            print(f"stale: {path} (run python scripts/conformance.py)")
        return 1 if stale else 0
    for path, text in outputs.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
