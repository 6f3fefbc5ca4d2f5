"""The command runner against real processes: outcomes, faults and leaks."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

import anyio
import attrs
import pytest
from helpers.procs import LeakCheck, group_gone

from orchestra.skills._processes.command import run_command
from orchestra.skills._protocol.result import HookResult, HookRunError

pytestmark = pytest.mark.anyio

EVENT = json.dumps(
    {"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": "ls"}}
).encode()


@pytest.fixture
async def leaks(anyio_backend: str) -> LeakCheck:
    check = LeakCheck()
    # The first subprocess of a backend may set up machinery that stays; not a leak.
    await run_command(command="true", args=None, stdin=b"", env=check.env, cwd=None, timeout=10)
    check.snapshot()
    return check


async def sh(
    leaks: LeakCheck,
    command: str,
    *,
    stdin: bytes = EVENT,
    timeout: float = 10,  # noqa: ASYNC109 -- the hook's own timeout, passed through
    **kw: object,
) -> HookResult:
    return await run_command(
        command=command,
        args=None,
        stdin=stdin,
        env=leaks.env,
        cwd=None,
        timeout=timeout,
        **kw,  # type: ignore[arg-type]
    )


async def fails(leaks: LeakCheck, command: str, **kw: object) -> HookRunError:
    with pytest.raises(HookRunError) as caught:
        await sh(leaks, command, **kw)  # type: ignore[arg-type]
    return caught.value


async def goes_on(leaks: LeakCheck) -> None:
    """The caller goes on: the next hook runs normally, and nothing was left behind."""
    result = await sh(leaks, """cat >/dev/null; echo '{"decision": "allow"}'""")
    assert result.decision == "allow"
    await leaks.check()


# --- outcomes ---------------------------------------------------------------------------


async def test_empty_output_is_no_opinion(leaks: LeakCheck) -> None:
    result = await sh(leaks, "cat >/dev/null")
    assert result == HookResult(exit_code=0)
    await leaks.check()


async def test_result_json_and_stderr(leaks: LeakCheck) -> None:
    result = await sh(
        leaks,
        """cat >/dev/null; echo note >&2
        echo '{"decision": "deny", "reason": "no ls", "message": "see policy"}'""",
    )
    assert result == HookResult(
        decision="deny", reason="no ls", messages=("see policy",), exit_code=0, stderr="note\n"
    )
    await leaks.check()


async def test_hook_reads_the_event_on_stdin(leaks: LeakCheck) -> None:
    script = (
        "import json, sys; e = json.load(sys.stdin); "
        "print(json.dumps({'modified_input': {**e['tool_input'], 'seen': e['tool_name']}}))"
    )
    result = await run_command(
        command=None,
        args=[sys.executable, "-c", script],
        stdin=EVENT,
        env=leaks.env,
        cwd=None,
        timeout=10,
    )
    assert result.modified_input == {"command": "ls", "seen": "Bash"}
    await leaks.check()


async def test_env_and_cwd_are_the_callers(leaks: LeakCheck, tmp_path: Path) -> None:
    env = {**leaks.env, "ORCHESTRA_EVENT": "PreToolUse"}
    result = await run_command(
        command="""printf '{"message": "%s %s"}' "$ORCHESTRA_EVENT" "$(pwd)" """,
        args=None,
        stdin=b"",
        env=env,
        cwd=str(tmp_path),
        timeout=10,
    )
    assert result.messages == (f"PreToolUse {tmp_path}",)
    assert "ORCHESTRA_EVENT" not in os.environ
    await leaks.check()


async def test_exit_2_blocks_with_stderr_as_reason(leaks: LeakCheck) -> None:
    result = await sh(leaks, "echo ignored; echo 'rm is not allowed' >&2; exit 2")
    assert result == HookResult(
        decision="block", reason="rm is not allowed", exit_code=2, stderr="rm is not allowed\n"
    )
    await leaks.check()


@pytest.mark.parametrize(
    ("command", "message", "code"),
    [
        ("echo oops >&2; exit 1", "exited 1", 1),
        ("exit 137", "exited 137", 137),
        ("kill -KILL $$", "killed by SIGKILL", -signal.SIGKILL),
        ("kill -SEGV $$", "killed by SIGSEGV", -signal.SIGSEGV),
        ("no-such-hook-command", "exited 127 (command not found)", 127),
    ],
)
async def test_failures_are_hook_errors(
    leaks: LeakCheck, command: str, message: str, code: int
) -> None:
    error = await fails(leaks, command)
    assert str(error) == message
    assert error.exit_code == code
    await goes_on(leaks)


async def test_shell_reports_a_script_that_is_not_executable(
    leaks: LeakCheck, tmp_path: Path
) -> None:
    script = tmp_path / "guard.sh"
    script.write_text("#!/bin/sh\necho '{}'\n")
    script.chmod(0o644)
    error = await fails(leaks, str(script))
    assert str(error) == "exited 126 (not executable)"
    assert "Permission denied" in error.stderr
    await goes_on(leaks)


@pytest.mark.parametrize("case", ["missing", "not-executable"])
async def test_args_that_cannot_start(leaks: LeakCheck, tmp_path: Path, case: str) -> None:
    program = tmp_path / "guard"
    if case == "not-executable":
        program.write_text("#!/bin/sh\n")
        program.chmod(0o644)
    with pytest.raises(HookRunError, match=r"^could not start: \[Errno \d+\]") as caught:
        await run_command(
            command=None, args=[str(program)], stdin=EVENT, env=leaks.env, cwd=None, timeout=10
        )
    assert caught.value.exit_code is None
    await goes_on(leaks)


async def test_cwd_that_does_not_exist(leaks: LeakCheck, tmp_path: Path) -> None:
    with pytest.raises(HookRunError, match=r"^could not start: "):
        await run_command(
            command="true",
            args=None,
            stdin=b"",
            env=leaks.env,
            cwd=str(tmp_path / "missing"),
            timeout=10,
        )
    await goes_on(leaks)


@pytest.mark.parametrize(
    ("output", "detail"),
    [
        ("{not json", "Expecting property name enclosed in double quotes"),
        ('[{"decision": "allow"}]', "expected an object, got an array"),
        ('{"decision": "allow"} trailing', "Extra data"),
        ('{"decision": "allow"}{"decision": "deny"}', "Extra data"),
        ('"allow"', "expected an object, got a string"),
        ('{"decision": "yes"}', "decision must be one of"),
    ],
)
async def test_exit_0_with_bad_output_is_a_hook_error(
    leaks: LeakCheck, output: str, detail: str
) -> None:
    error = await fails(leaks, f"cat >/dev/null; printf '%s' '{output}'; echo warn >&2")
    assert str(error).startswith("invalid JSON output: ")
    assert detail in str(error)
    assert (error.exit_code, error.stderr) == (0, "warn\n")
    await goes_on(leaks)


async def test_strict_output_refuses_unknown_fields(leaks: LeakCheck) -> None:
    command = """echo '{"decision": "allow", "decison": "deny"}'"""
    assert (await sh(leaks, command)).decision == "allow"
    error = await fails(leaks, command, strict_output=True)
    assert str(error) == "invalid JSON output: unknown field decison (strict_output)"
    await goes_on(leaks)


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        (
            {
                "hookSpecificOutput": {
                    "hookEventName": "PreToolUse",
                    "permissionDecision": "deny",
                    "permissionDecisionReason": "rm -rf refused",
                }
            },
            HookResult(decision="deny", reason="rm -rf refused"),
        ),
        (
            {
                "hookSpecificOutput": {
                    "hookEventName": "PreToolUse",
                    "permissionDecision": "allow",
                    "updatedInput": {"command": "ls -la"},
                    "additionalContext": "listing is safe",
                },
                "suppressOutput": True,
            },
            HookResult(
                decision="allow",
                modified_input={"command": "ls -la"},
                messages=("listing is safe",),
            ),
        ),
        (
            {"decision": "block", "reason": "tests fail", "systemMessage": "run pytest"},
            HookResult(decision="block", reason="tests fail", system_message="run pytest"),
        ),
        (
            {"continue": False, "stopReason": "budget spent"},
            HookResult(stop=True, stop_reason="budget spent"),
        ),
    ],
    ids=["permission-deny", "updated-input", "decision-block", "continue-false"],
)
async def test_claude_code_result_shapes(
    leaks: LeakCheck, output: dict[str, object], expected: HookResult
) -> None:
    # A Claude Code hook script, unchanged: reads the event, prints its JSON shape.
    result = await sh(leaks, f"cat >/dev/null; echo '{json.dumps(output)}'", strict_output=True)
    assert result == attrs.evolve(expected, exit_code=0)
    await leaks.check()


# --- faults -----------------------------------------------------------------------------


async def test_50_mb_of_output(leaks: LeakCheck) -> None:
    error = await fails(leaks, "head -c 50000000 /dev/zero")
    assert str(error) == "output over 1 MiB on stdout"
    await goes_on(leaks)


async def test_floods_stderr_and_never_reads_a_1_mb_stdin(leaks: LeakCheck) -> None:
    error = await fails(leaks, "yes flood >&2", stdin=b"x" * (1 << 20))
    assert str(error) == "output over 1 MiB on stderr"
    assert error.stderr.startswith("flood\nflood\n")
    assert len(error.stderr) == 1 << 20
    await goes_on(leaks)


async def test_never_reads_a_1_mb_stdin_and_exits(leaks: LeakCheck) -> None:
    result = await sh(leaks, """echo '{"decision": "ask"}'""", stdin=b"x" * (1 << 20))
    assert result.decision == "ask"
    await goes_on(leaks)


async def test_grandchild_holds_an_unread_1_mb_stdin(leaks: LeakCheck) -> None:
    # The child answers without reading; a grandchild keeps stdin open and never reads
    # it. The runner stops writing when the child exits (no timeout).
    result = await sh(
        leaks, """sleep 60 & echo '{"decision": "allow"}'""", stdin=b"x" * (1 << 20), timeout=30
    )
    assert result.decision == "allow"
    await goes_on(leaks)


async def test_ignores_sigterm(leaks: LeakCheck, tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    error = await fails(
        leaks,
        f"trap '' TERM; echo $$ > {pid_file}; while :; do sleep 1; done",
        timeout=0.5,
    )
    assert str(error) == "timed out after 0.5 s"
    assert error.exit_code == -signal.SIGKILL
    assert await group_gone(int(pid_file.read_text()))
    await goes_on(leaks)


async def test_timeout_kills_the_whole_group(leaks: LeakCheck, tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    error = await fails(leaks, f"sleep 60 & sleep 60 & echo $$ > {pid_file}; wait", timeout=0.5)
    assert str(error) == "timed out after 0.5 s"
    assert error.exit_code == -signal.SIGTERM
    assert await group_gone(int(pid_file.read_text()))
    await goes_on(leaks)


async def test_grandchild_keeps_stdout_open(leaks: LeakCheck, tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    # The child answers and exits; its background grandchild holds stdout for a minute.
    result = await sh(leaks, f"""echo $$ > {pid_file}; sleep 60 & echo '{{"decision": "allow"}}'""")
    assert result.decision == "allow"
    assert await group_gone(int(pid_file.read_text()))
    await goes_on(leaks)


async def test_grandchild_holding_stdout_while_the_child_fails(leaks: LeakCheck) -> None:
    error = await fails(leaks, "sleep 60 & exit 3")
    assert str(error) == "exited 3"
    await goes_on(leaks)


async def test_setsid_grandchild_holding_stdout_does_not_hang(leaks: LeakCheck) -> None:
    # A grandchild in a session of its own escapes the group kill; the runner still
    # stops reading after the grace, and the test ends it.
    result = await sh(leaks, """setsid sleep 60 & echo "{\\"message\\": \\"$!\\"}" """)
    os.kill(int(result.messages[0]), signal.SIGKILL)
    await goes_on(leaks)


async def test_cancellation_kills_the_group(leaks: LeakCheck, tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    with anyio.move_on_after(0.5) as scope:
        await sh(leaks, f"echo $$ > {pid_file}; sleep 60 & sleep 60; wait", timeout=60)
    assert scope.cancelled_caught
    assert await group_gone(int(pid_file.read_text()))
    await goes_on(leaks)


PAYLOADS = [
    "$(touch {marker})",
    "`touch {marker}`",
    "; touch {marker}; echo",
    "' ; touch {marker}; '",
    "line1\nline2\r\n; touch {marker}",
    "nul\x00byte",
    "lone surrogate \udcff and \ud800",
    "${{PATH}} $HOME \\ \" ' * ? [a] ~ &&|| > {marker}",
]


@pytest.mark.parametrize("text", PAYLOADS)
async def test_payload_is_data_never_code(leaks: LeakCheck, tmp_path: Path, text: str) -> None:
    marker = tmp_path / "pwned"
    copy = tmp_path / "stdin.copy"
    value = text.format(marker=marker)
    stdin = json.dumps({"tool_input": {"command": value}, "prompt": value}).encode()
    # Invalid UTF-8 in the bytes as well: the runner passes bytes through unchanged.
    stdin = stdin[:-1] + b', "raw": "\xff\xfe\xc3("}'
    env = {**leaks.env, "COPY": str(copy)}
    result = await run_command(
        command='cat > "$COPY"', args=None, stdin=stdin, env=env, cwd=None, timeout=10
    )
    assert result == HookResult(exit_code=0)
    assert copy.read_bytes() == stdin
    assert not marker.exists()
    await leaks.check()


async def test_200_concurrent_hooks(leaks: LeakCheck) -> None:
    results: list[HookResult] = []

    async def one(i: int) -> None:
        command = f"""cat >/dev/null; echo '{{"message": "{i}"}}'"""
        results.append(await sh(leaks, command))

    async with anyio.create_task_group() as tg:
        for i in range(200):
            tg.start_soon(one, i)
    assert sorted(int(r.messages[0]) for r in results) == list(range(200))
    await goes_on(leaks)


async def test_200_concurrent_faulty_hooks(leaks: LeakCheck) -> None:
    errors: list[str] = []
    commands = ["exit 1", "kill -9 $$", "echo '[]'", "sleep 60 & echo '{}'", "sleep 60"]

    async def one(command: str) -> None:
        try:
            await sh(leaks, command, timeout=1 if command == "sleep 60" else 60)
        except HookRunError as exc:
            errors.append(str(exc))

    async with anyio.create_task_group() as tg:
        for i in range(200):
            tg.start_soon(one, commands[i % len(commands)])
    assert sorted(set(errors)) == [
        "exited 1",
        "invalid JSON output: expected an object, got an array",
        "killed by SIGKILL",
        "timed out after 1 s",
    ]
    assert len(errors) == 160
    await goes_on(leaks)


async def test_refuses_bad_arguments(leaks: LeakCheck) -> None:
    for kwargs in (
        {"command": "true", "args": ["true"], "timeout": 1.0},
        {"command": None, "args": None, "timeout": 1.0},
        {"command": None, "args": [], "timeout": 1.0},
        {"command": "true", "args": None, "timeout": 0.0},
    ):
        with pytest.raises(ValueError, match=r"command and args|args is empty|timeout"):
            await run_command(stdin=b"", env=leaks.env, cwd=None, **kwargs)  # type: ignore[arg-type]
    await leaks.check()
