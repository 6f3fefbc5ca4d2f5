"""Persistent command hooks against real processes: protocol, faults, restarts and leaks.

The hook process is ``WORKER``, a small script that answers each event line by what
the event's ``tool_input.command`` asks of it (answer, crash, print garbage, hang...).
Every process it starts carries the test's ``ORCHESTRA_TEST_MARK``, so ``leaks.check()``
finds any orphan (see ``helpers.procs``).
"""

from __future__ import annotations

import gc
import json
import os
import sys
import textwrap
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
from anyio import wait_all_tasks_blocked
from helpers.procs import MARK_VAR, LeakCheck, group_alive, group_gone, marked, marked_as

from orchestra.skills import (
    CommandHook,
    ConfigError,
    HookOutcome,
    HookRegistry,
    HookRunError,
    load,
)
from orchestra.skills._hooks.spec import HookCall

pytestmark = pytest.mark.anyio

WORKER = textwrap.dedent(
    """
    import json, os, subprocess, sys, time

    def answer(event, **fields):
        fields["id"] = event["id"]
        sys.stdout.write(json.dumps(fields) + "\\n")
        sys.stdout.flush()

    held = []  # events held back, for pipelining
    for line in sys.stdin:
        event = json.loads(line)
        what = event.get("tool_input", {}).get("command", "echo")
        if what == "echo":
            answer(event, decision="allow", reason=f"{os.getpid()} {event['hook_event_name']}")
        elif what == "event":
            answer(event, message=json.dumps(event))
        elif what.startswith("hold "):  # answer the last N held events, newest first
            held.append(event)
            if len(held) == int(what.split()[1]):
                for e in reversed(held):
                    answer(e, message=f"held {e['tool_input']['n']}")
                held.clear()
        elif what == "crash":
            print("going down", file=sys.stderr, flush=True)
            sys.exit(3)
        elif what == "garbage":
            print("this is not json", flush=True)
        elif what == "unknown id":
            sys.stdout.write(json.dumps({"id": 10**6}) + "\\n")
            sys.stdout.flush()
        elif what == "list id":  # an id that cannot be a key
            sys.stdout.write(json.dumps({"id": [event["id"]]}) + "\\n")
            sys.stdout.flush()
        elif what == "no id":
            print("{}", flush=True)
        elif what == "hang":
            time.sleep(60)
        elif what == "hang holding stdout":  # a setsid grandchild keeps stdout open
            held_by = subprocess.Popen(["setsid", "sleep", "60"])
            print(f"grandchild {held_by.pid}", file=sys.stderr, flush=True)
            time.sleep(60)
        elif what == "slow":
            time.sleep(0.5)
            answer(event, message="slow")
        elif what == "error":
            answer(event, error="cannot check this")
        elif what == "bad shape":
            answer(event, decision="maybe")
        elif what == "stderr flood":
            sys.stderr.write("x" * 300_000 + "END")
            sys.stderr.flush()
            answer(event, message="flooded")
        elif what == "deny":
            answer(event, decision="deny", reason="denied")
        elif what == "allow then a stray":  # an extra id-less line, after a while
            answer(event, decision="allow")
            time.sleep(float(event["tool_input"].get("after", 0)))
            print('{"decision": "allow"}', flush=True)
        elif what == "setsid daemon":  # a grandchild that leaves the group for good
            daemon = subprocess.Popen(
                ["sleep", "60"], start_new_session=True,  # setsid() in the child itself
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )
            answer(event, message=str(daemon.pid))
        elif what == "grandchild":  # something left in its group, and a deaf ear to EOF
            child = subprocess.Popen(["sleep", "60"])
            answer(event, message=str(child.pid))
    if os.environ.get("WORKER_LINGER"):
        time.sleep(60)  # ignores the end of its input: closing must kill it
    """
)


@pytest.fixture
def worker(tmp_path: Path) -> Path:
    path = tmp_path / "worker.py"
    path.write_text(WORKER)
    return path


@pytest.fixture
async def leaks(anyio_backend: str, monkeypatch: pytest.MonkeyPatch) -> LeakCheck:
    check = LeakCheck()  # taken on the event loop: its own descriptors are no leak
    monkeypatch.setenv(MARK_VAR, check.mark)  # hooks inherit it, and what they start
    check.snapshot()
    return check


def hook(worker: Path, **fields: Any) -> CommandHook:
    fields.setdefault("on_error", "continue")
    fields.setdefault("pass_env", (MARK_VAR, "WORKER_LINGER"))  # the rest is not passed on
    return CommandHook(
        event="PreToolUse", args=(sys.executable, str(worker)), persistent=True, **fields
    )


def registry(worker: Path, tmp_path: Path, **fields: Any) -> HookRegistry:
    return HookRegistry([hook(worker, **fields)], project_dir=tmp_path)


async def fire(reg: HookRegistry, command: str = "echo", **tool_input: Any) -> HookOutcome:
    payload = {"tool_name": "Bash", "tool_input": {"command": command, **tool_input}}
    return await reg.fire("PreToolUse", payload)


def pid_of(outcome: HookOutcome) -> int:
    assert outcome.reason is not None, outcome.records
    return int(outcome.reason.split()[0])


def error_of(outcome: HookOutcome) -> str:
    (record,) = outcome.records
    assert record.error is not None, record
    return record.error


# --- the protocol -----------------------------------------------------------------------


async def test_one_process_answers_every_event(
    worker: Path, tmp_path: Path, leaks: LeakCheck
) -> None:
    async with registry(worker, tmp_path) as reg:
        first = await fire(reg)
        second = await fire(reg)
        seen = json.loads((await fire(reg, "event")).messages[0])
    assert first.decision == second.decision == "allow"
    assert pid_of(first) == pid_of(second)  # the same process, not one per event
    assert first.reason == f"{pid_of(first)} PreToolUse"
    # The event line is the event JSON of a command hook, plus the id of the request.
    assert seen["id"] == 3
    assert seen["tool_input"] == {"command": "event"}
    assert {"hook_event_name", "session_id", "cwd", "timestamp"} <= set(seen)
    assert seen["cwd"] == str(tmp_path)
    assert await group_gone(pid_of(first))
    await leaks.check()


async def test_started_at_the_first_event_and_with_the_registry_closed(
    worker: Path, tmp_path: Path, leaks: LeakCheck
) -> None:
    reg = registry(worker, tmp_path)
    async with reg as entered:
        assert entered is reg
        assert not marked(leaks.mark)  # nothing runs before an event needs it
        pid = pid_of(await fire(reg))
        assert group_alive(pid)
    assert await group_gone(pid)
    # Closed is not final: the next event starts a new process (close it again).
    again = pid_of(await fire(reg))
    assert again != pid
    await reg.aclose()
    await reg.aclose()  # closing twice is harmless
    await leaks.check()


async def test_pipelining_matches_answers_by_id(
    worker: Path, tmp_path: Path, leaks: LeakCheck
) -> None:
    outcomes: dict[int, HookOutcome] = {}
    async with registry(worker, tmp_path, max_in_flight=3) as reg:

        async def one(n: int) -> None:
            outcomes[n] = await fire(reg, "hold 3", n=n)

        # The worker answers only once it holds 3 events, newest first: the three are
        # in flight at once, and each caller gets its own answer.
        async with anyio.create_task_group() as group:
            for n in range(3):
                group.start_soon(one, n)
    assert {n: o.messages for n, o in outcomes.items()} == {n: (f"held {n}",) for n in range(3)}
    await leaks.check()


async def test_one_in_flight_by_default(worker: Path, tmp_path: Path, leaks: LeakCheck) -> None:
    # Two events at once, one at a time: the second waits for the first's answer. A
    # worker holding 2 before answering never gets the second: the first times out.
    # (2.5 s: the process must start within the first event's timeout on a loaded machine)
    async with registry(worker, tmp_path, timeout=2.5) as reg:
        results: list[HookOutcome] = []

        async def one(n: int) -> None:
            results.append(await fire(reg, "hold 2", n=n))

        async with anyio.create_task_group() as group:
            group.start_soon(one, 0)
            group.start_soon(one, 1)
    errors = sorted(error_of(outcome) for outcome in results)
    # Neither was answered: the worker never held both. The first, in flight, timed out;
    # the second's deadline is a moment later than the first's, so it timed out either
    # still waiting, or just sent to the process started after the first's timeout (which
    # of the two depends on which deadline was seen first: a flake when one message was
    # expected).
    assert errors[0] == "timed out after 2.5 s"
    assert errors[1] in ("timed out after 2.5 s", "timed out after 2.5 s waiting for the process")
    await leaks.check()


async def test_without_ids_when_pipelining_kills(
    worker: Path, tmp_path: Path, leaks: LeakCheck
) -> None:
    async with registry(worker, tmp_path, max_in_flight=2) as reg:
        pid = pid_of(await fire(reg))
        assert error_of(await fire(reg, "no id")) == "answered without an id: {}"
        assert await group_gone(pid)
        assert pid_of(await fire(reg)) != pid
    await leaks.check()


ID_LESS = (
    "import sys\n"
    "for line in sys.stdin:\n"
    "    print('{\"decision\": \"deny\"}' if 'rm' in line else '{}', flush=True)\n"
)


async def test_an_answer_without_id_is_fine_one_at_a_time(tmp_path: Path, leaks: LeakCheck) -> None:
    # A hook that never echoes ids is answered in order, one event at a time.
    (tmp_path / "id_less.py").write_text(ID_LESS)
    id_less = CommandHook(
        event="PreToolUse",
        args=(sys.executable, str(tmp_path / "id_less.py")),
        persistent=True,
        pass_env=(MARK_VAR,),
    )
    async with HookRegistry([id_less], project_dir=tmp_path) as reg:
        outcomes = [await fire(reg, command) for command in ("ls", "rm x", "ls")]
    assert [(o.decision, o.errors) for o in outcomes] == [(None, ()), ("deny", ()), (None, ())]
    await leaks.check()


async def test_after_answers_with_ids_one_without_is_a_protocol_error(
    worker: Path, tmp_path: Path, leaks: LeakCheck
) -> None:
    # It echoed ids before: a line without one cannot be matched to an event.
    async with registry(worker, tmp_path) as reg:
        pid = pid_of(await fire(reg))
        assert error_of(await fire(reg, "no id")) == "answered without an id: {}"
        assert await group_gone(pid)
        assert pid_of(await fire(reg)) != pid  # restarted
    await leaks.check()


@pytest.mark.parametrize("after", [0, 0.3])
async def test_a_stray_line_never_answers_the_next_event(
    worker: Path, tmp_path: Path, leaks: LeakCheck, after: float
) -> None:
    # The issue's case: with max_in_flight 1, an id-less line written after event 1's
    # answer was taken as event 2's answer, so event 2 was allowed though the hook
    # denied it. Now the stray line is a protocol error and event 2 gets a new process.
    async with registry(worker, tmp_path, on_error="block") as reg:
        pid = pid_of(await fire(reg))
        assert (await fire(reg, "allow then a stray", after=after)).decision == "allow"
        await anyio.sleep(after + 0.3)  # the stray line is in the pipe: nothing in flight
        second = await fire(reg, "deny")
        assert (second.decision, second.reason, second.errors) == ("deny", "denied", ())
        assert await group_gone(pid)
        assert (await fire(reg)).decision == "allow"
    await leaks.check()


async def test_a_line_while_nothing_is_in_flight_is_a_protocol_error_for_an_id_less_hook(
    tmp_path: Path, leaks: LeakCheck
) -> None:
    # Even a hook that never echoes ids cannot answer before it is asked.
    script = tmp_path / "chatty.py"
    script.write_text(
        "import sys, time\n"
        "for line in sys.stdin:\n"
        "    print('{\"decision\": \"deny\"}' if 'rm' in line else '{}', flush=True)\n"
        "    if 'chatty' in line:\n"
        "        time.sleep(0.2)\n"
        '        print(\'{"decision": "allow"}\', flush=True)\n'
    )
    hook = CommandHook(
        event="PreToolUse",
        args=(sys.executable, str(script)),
        persistent=True,
        pass_env=(MARK_VAR,),
    )
    async with HookRegistry([hook], project_dir=tmp_path) as reg:
        assert (await fire(reg, "chatty")).errors == ()
        await anyio.sleep(0.5)
        denied = await fire(reg, "rm -rf /")
    assert (denied.decision, denied.errors) == ("deny", ())
    await leaks.check()


async def test_an_id_less_allow_written_before_the_next_event_is_read_never_answers_it(
    tmp_path: Path, leaks: LeakCheck
) -> None:
    # The audit's case: event 2 was already in flight when the id-less hook's extra
    # "allow" (written for event 1, a moment late) arrived, and it decided event 2,
    # which the hook never read. Now it is a protocol error: event 2 fails (blocked).
    script = tmp_path / "late.py"
    script.write_text(
        "import sys, time\n"
        "for line in sys.stdin:\n"
        '    print(\'{"decision": "deny", "reason": "no"}\', flush=True)\n'
        "    time.sleep(0.3)\n"
        '    print(\'{"decision": "allow"}\', flush=True)\n'
        "    time.sleep(0.5)\n"  # busy: event 2 is still unread when its 'answer' comes
    )
    hook = CommandHook(
        event="PreToolUse",
        args=(sys.executable, str(script)),
        persistent=True,
        on_error="block",
        pass_env=(MARK_VAR,),
    )
    async with HookRegistry([hook], project_dir=tmp_path) as reg:
        first = await fire(reg, "rm -rf /")
        second = await fire(reg, "rm -rf /")  # in flight before the late allow comes
    assert (first.decision, first.reason) == ("deny", "no")
    assert second.decision != "allow"
    assert second.blocked
    assert error_of(second) == 'answered without an id, its event unread: {"decision": "allow"}'
    await leaks.check()


async def test_error_answers_and_bad_shapes_fail_the_event_only(
    worker: Path, tmp_path: Path, leaks: LeakCheck
) -> None:
    async with registry(worker, tmp_path, on_error="block") as reg:
        pid = pid_of(await fire(reg))
        error = await fire(reg, "error")
        assert error.blocked
        assert error_of(error) == "answered an error: cannot check this"
        shape = await fire(reg, "bad shape")
        assert error_of(shape).startswith("invalid JSON output: decision must be one of")
        assert pid_of(await fire(reg)) == pid  # the process was kept
    await leaks.check()


async def test_stderr_is_drained_and_capped(worker: Path, tmp_path: Path, leaks: LeakCheck) -> None:
    # 300 KB on stderr before the answer: more than a pipe holds, so a process whose
    # stderr were not read would block there and time out.
    async with registry(worker, tmp_path, timeout=30) as reg:
        outcome = await fire(reg, "stderr flood")
        (record,) = outcome.records
        assert outcome.messages == ("flooded",)
        assert len(record.stderr) == 64 * 1024
        assert record.stderr.endswith("xxxEND")
        assert (await fire(reg)).records[0].stderr == ""  # each answer: its own stderr
    await leaks.check()


# --- faults -----------------------------------------------------------------------------


async def test_a_crash_fails_the_event_and_the_next_one_restarts(
    worker: Path, tmp_path: Path, leaks: LeakCheck
) -> None:
    async with registry(worker, tmp_path) as reg:
        pid = pid_of(await fire(reg))
        crashed = await fire(reg, "crash")
        (record,) = crashed.records
        assert (record.error, record.exit_code) == ("exited 3", 3)
        assert record.stderr == "going down\n"
        assert record.note == "error ignored (on_error: continue)"
        assert not crashed.blocked
        assert await group_gone(pid)
        assert pid_of(await fire(reg)) != pid
    await leaks.check()


async def test_a_crash_under_on_error_block_blocks(
    worker: Path, tmp_path: Path, leaks: LeakCheck
) -> None:
    async with registry(worker, tmp_path, on_error="block") as reg:
        outcome = await fire(reg, "crash")
    assert (outcome.blocked, outcome.reason) == (True, "hook error: exited 3")
    await leaks.check()


async def test_a_garbage_line_kills_and_restarts(
    worker: Path, tmp_path: Path, leaks: LeakCheck
) -> None:
    async with registry(worker, tmp_path) as reg:
        pid = pid_of(await fire(reg))
        error = error_of(await fire(reg, "garbage"))
        assert error == "invalid JSON output: Expecting value at column 1: this is not json"
        assert await group_gone(pid)
        assert pid_of(await fire(reg)) != pid
    await leaks.check()


async def test_an_unknown_id_kills_and_restarts(
    worker: Path, tmp_path: Path, leaks: LeakCheck
) -> None:
    async with registry(worker, tmp_path) as reg:
        pid = pid_of(await fire(reg))
        assert error_of(await fire(reg, "unknown id")) == "answered unknown id 1000000"
        assert await group_gone(pid)
        pid = pid_of(await fire(reg))
        assert error_of(await fire(reg, "list id")).startswith("answered unknown id [")
        assert await group_gone(pid)
        assert pid_of(await fire(reg)) != pid
    await leaks.check()


async def test_a_timeout_kills_the_group_and_restarts(
    worker: Path, tmp_path: Path, leaks: LeakCheck
) -> None:
    # The timeout covers the worker's start too: a Python start takes over 1 s on a
    # loaded 2-core machine, so 3 s (the hang costs that much, once).
    async with registry(worker, tmp_path, timeout=3) as reg:
        pid = pid_of(await fire(reg))
        (record,) = (await fire(reg, "hang")).records
        assert record.error == "timed out after 3 s"
        assert await group_gone(pid)
        assert pid_of(await fire(reg)) != pid
    await leaks.check()


async def test_a_timeout_is_seen_to_even_without_the_end_of_output(
    worker: Path, tmp_path: Path, leaks: LeakCheck
) -> None:
    # A grandchild in a session of its own holds stdout: a group kill alone would not
    # end it. The deadline still wakes the reader, which fails the event, and the
    # reaper kills the grandchild with the hook (it used to outlive it).
    async with registry(worker, tmp_path, timeout=2) as reg:
        await fire(reg)  # started: the timeout is this event's only
        (record,) = (await fire(reg, "hang holding stdout")).records
        assert record.error == "timed out after 2 s"
        grandchild = int(record.stderr.split()[1])
        assert await marked_as(leaks.mark, set()) == set(), f"{grandchild} outlived it"
        assert (await fire(reg)).decision == "allow"  # restarted
    await leaks.check()


@pytest.mark.parametrize("how", ["closed", "crashed", "killed on a garbage line"])
async def test_a_setsid_grandchild_ends_with_the_hook(
    worker: Path, tmp_path: Path, leaks: LeakCheck, how: str
) -> None:
    # Before: a child that left the hook's group with setsid outlived every way the
    # hook ended. Now the reaper (a child subreaper) kills everything below the hook.
    async with registry(worker, tmp_path) as reg:
        pid = pid_of(await fire(reg))
        daemon = int((await fire(reg, "setsid daemon")).messages[0])
        assert await marked_as(leaks.mark, {pid, daemon}) == {pid, daemon}
        assert os.getsid(daemon) == daemon  # really in a session of its own
        if how == "crashed":
            assert error_of(await fire(reg, "crash")) == "exited 3"
        elif how == "killed on a garbage line":
            assert error_of(await fire(reg, "garbage")).startswith("invalid JSON output")
    assert await marked_as(leaks.mark, set()) == set()
    await leaks.check()


async def test_events_in_flight_together_time_out_together(
    worker: Path, tmp_path: Path, leaks: LeakCheck
) -> None:
    errors: list[str] = []
    async with registry(worker, tmp_path, timeout=0.3, max_in_flight=2) as reg:

        async def one() -> None:
            errors.append(error_of(await fire(reg, "hang")))

        async with anyio.create_task_group() as group:
            group.start_soon(one)
            group.start_soon(one)
    assert errors == ["timed out after 0.3 s"] * 2
    await leaks.check()


async def test_broken_after_repeated_failures_until_closed(
    worker: Path, tmp_path: Path, leaks: LeakCheck
) -> None:
    reg = registry(worker, tmp_path)
    async with reg:
        for _ in range(5):  # each crash restarts it, after a growing backoff
            assert error_of(await fire(reg, "crash")) == "exited 3"
        broken = error_of(await fire(reg))
        assert broken == (
            "broken: failed 5 times in 60 s (last: exited 3); "
            "not restarted until the registry is closed"
        )
        assert not marked(leaks.mark)  # no process was started for it
        assert error_of(await fire(reg)) == broken  # every event says so
    async with reg:  # reopened: a new chance
        assert (await fire(reg)).decision == "allow"
    await leaks.check()


async def test_a_command_that_cannot_start(tmp_path: Path, leaks: LeakCheck) -> None:
    missing = CommandHook(
        event="PreToolUse",
        args=(str(tmp_path / "missing"),),
        persistent=True,
        on_error="continue",
    )
    async with HookRegistry([missing], project_dir=tmp_path) as reg:
        error = error_of(await fire(reg))
    assert error.startswith("could not start: [Errno 2] No such file or directory")
    await leaks.check()


async def test_a_shell_command_that_is_not_found(tmp_path: Path, leaks: LeakCheck) -> None:
    missing = CommandHook(
        event="PreToolUse", command="no-such-command-x", persistent=True, on_error="continue"
    )
    async with HookRegistry([missing], project_dir=tmp_path) as reg:
        (record,) = (await fire(reg)).records
    assert record.error == "exited 127 (command not found)"
    assert "no-such-command-x" in record.stderr
    await leaks.check()


async def test_a_cancelled_caller_does_not_shift_the_answers(
    worker: Path, tmp_path: Path, leaks: LeakCheck
) -> None:
    async with registry(worker, tmp_path) as reg:
        pid = pid_of(await fire(reg))
        with anyio.move_on_after(0.1):
            await fire(reg, "slow")  # its answer comes after the caller left
        after = await fire(reg)
        assert (after.decision, pid_of(after)) == ("allow", pid)  # its own answer
    await leaks.check()


# --- nothing outlives the registry ------------------------------------------------------


async def test_close_kills_what_the_process_left_in_its_group(
    worker: Path, tmp_path: Path, leaks: LeakCheck, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WORKER_LINGER", "1")  # it does not exit at the end of its input
    async with registry(worker, tmp_path) as reg:
        pid = pid_of(await fire(reg))
        grandchild = int((await fire(reg, "grandchild")).messages[0])
        assert await marked_as(leaks.mark, {pid, grandchild}) == {pid, grandchild}
    assert await group_gone(pid)
    await leaks.check()  # the grandchild is gone too


async def test_closing_fails_the_events_in_flight_and_waiting(
    worker: Path, tmp_path: Path, leaks: LeakCheck
) -> None:
    reg = registry(worker, tmp_path)
    errors: list[str] = []

    async def one() -> None:
        errors.append(error_of(await fire(reg, "slow")))

    async with anyio.create_task_group() as group:
        group.start_soon(one)  # in flight
        group.start_soon(one)  # waits for its turn
        await wait_all_tasks_blocked()
        await reg.aclose()
    # Neither the event in flight nor the waiting one starts a process once closed.
    assert errors == ["stopped: the registry was closed"] * 2
    await leaks.check()


async def test_a_registry_collected_open_warns_and_kills(
    worker: Path, tmp_path: Path, leaks: LeakCheck
) -> None:
    reg = registry(worker, tmp_path)
    pid = pid_of(await fire(reg))
    with pytest.warns(ResourceWarning, match=r"<HookRegistry 1 hooks> was not closed: 1 persist"):
        del reg  # the last reference: collected here
    assert await group_gone(pid)
    await leaks.check()


async def test_a_closed_registry_does_not_warn(
    worker: Path, tmp_path: Path, leaks: LeakCheck
) -> None:
    reg = registry(worker, tmp_path)
    await fire(reg)
    await reg.aclose()
    del reg
    gc.collect()  # filterwarnings = error: a warning here fails the test
    await leaks.check()


async def test_one_process_serves_event_loops_one_after_another(
    worker: Path, tmp_path: Path, leaks: LeakCheck
) -> None:
    # A guarded def tool called from sync code fires its events in an event loop of
    # its own, per call: the process started in one loop answers in the next ones.
    reg = registry(worker, tmp_path)
    answers: list[str] = []

    def record(event: str, outcome: HookOutcome) -> None:
        answers.append(outcome.reason or "")

    @reg.guard("Bash", on_outcome=record)
    def bash(command: str) -> str:
        return command

    async with reg:
        pid = pid_of(await fire(reg))
        for _ in range(2):
            assert await anyio.to_thread.run_sync(bash, "echo") == "echo"
    assert answers == [f"{pid} PreToolUse"] * 2
    await leaks.check()


# --- config -----------------------------------------------------------------------------


def test_loaded_from_yaml(tmp_path: Path) -> None:
    config = tmp_path / "orchestra.yaml"
    config.write_text(
        "hooks:\n  PreToolUse:\n    - hooks:\n"
        "        - {type: command, command: ./w, persistent: true, max_in_flight: 4}\n"
        "        - {type: command, command: ./w}\n"
    )
    persistent, plain = load(config).hooks
    assert isinstance(persistent, CommandHook)
    assert isinstance(plain, CommandHook)
    assert (persistent.persistent, persistent.max_in_flight) == (True, 4)
    assert (plain.persistent, plain.max_in_flight) == (False, 1)
    assert persistent.describe() == "./w (persistent, 4 in flight)"


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ("persistent: yes please", "persistent: expected true or false, got a string"),
        ("max_in_flight: 2", "max_in_flight: needs persistent: true"),
        ("{persistent: true, max_in_flight: 0}", "max_in_flight: must be from 1 to 256, got 0"),
        ("{persistent: true, max_in_flight: 1.5}", "max_in_flight: expected a whole number"),
        ("{persistent: true, max_in_flight: true}", "max_in_flight: expected a whole number"),
    ],
)
def test_bad_fields_name_file_and_line(tmp_path: Path, fields: str, problem: str) -> None:
    config = tmp_path / "orchestra.yaml"
    extra = fields.strip("{}")
    config.write_text(
        f"hooks:\n  Stop:\n    - hooks:\n        - {{type: command, command: ./w, {extra}}}\n"
    )
    with pytest.raises(ConfigError) as caught:
        load(config)
    assert f"orchestra.yaml:4: hooks.Stop[0].hooks[0].{problem}" in str(caught.value)


def test_built_in_python_refuses_the_same() -> None:
    with pytest.raises(ValueError, match="max_in_flight: needs persistent: true"):
        CommandHook(event="Stop", command="x", max_in_flight=2)
    with pytest.raises(ValueError, match="max_in_flight: must be from 1 to 256"):
        CommandHook(event="Stop", command="x", persistent=True, max_in_flight=1000)


async def test_outside_a_registry_it_says_so(worker: Path, tmp_path: Path) -> None:
    call = HookCall("PreToolUse", {"tool_name": "Bash"}, str(tmp_path))
    with pytest.raises(HookRunError, match="a persistent hook runs in a HookRegistry"):
        await hook(worker).run(call)
