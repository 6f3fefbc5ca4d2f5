"""The reaper under a persistent hook: whatever the hook starts ends with it, and only then.

Real processes throughout: a hook that starts a ``setsid`` daemon (which leaves the
hook's process group and session), an agent killed with SIGKILL, a hook started from a
thread that then ends.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import anyio
import pytest
from helpers.procs import MARK_VAR, LeakCheck, marked

from orchestra.skills import CommandHook, HookRegistry
from orchestra.skills._processes import reaper

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the reaper is Linux's (a child subreaper)"
)

HOOK = textwrap.dedent(
    """
    import json, os, subprocess, sys
    for line in sys.stdin:
        event = json.loads(line)
        if event.get("tool_name") == "daemon":
            daemon = subprocess.Popen(
                ["sleep", "120"], start_new_session=True,  # setsid() in the child itself
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )
            message = f"{os.getpid()} {daemon.pid}"
        else:
            message = str(os.getpid())
        print(json.dumps({"id": event["id"], "message": message}), flush=True)
    """
)


def hook(tmp_path: Path) -> CommandHook:
    (tmp_path / "hook.py").write_text(HOOK)
    return CommandHook(
        event="PreToolUse",
        args=(sys.executable, str(tmp_path / "hook.py")),
        persistent=True,
        pass_env=(MARK_VAR,),
    )


async def said(registry: HookRegistry, tool: str = "echo") -> str:
    outcome = await registry.fire("PreToolUse", {"tool_name": tool})
    assert not outcome.errors, outcome.errors
    return outcome.messages[0]


def test_a_persistent_hook_outlives_the_thread_that_started_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The reaper watches orchestra's process through a pipe, not PR_SET_PDEATHSIG, which
    # fires when the *thread* that started it ends (an idle worker thread, say).
    leaks = LeakCheck()
    monkeypatch.setenv(MARK_VAR, leaks.mark)
    registry = HookRegistry([hook(tmp_path)], project_dir=tmp_path)
    pids: list[str] = []
    thread = threading.Thread(target=lambda: pids.append(anyio.run(said, registry)))
    thread.start()
    thread.join()
    time.sleep(0.5)  # the thread is gone: time for a death signal to have done its work
    assert anyio.run(said, registry) == pids[0]  # the same process, no error
    anyio.run(registry.aclose)
    assert not marked(leaks.mark)


AGENT = textwrap.dedent(
    """
    import sys
    import anyio
    from orchestra.skills import CommandHook, HookRegistry

    async def main():
        hook = CommandHook(
            event="PreToolUse", args=(sys.executable, sys.argv[1]), persistent=True,
            pass_env=("ORCHESTRA_TEST_MARK",),
        )
        registry = HookRegistry([hook], project_dir=sys.argv[2])
        outcome = await registry.fire("PreToolUse", {"tool_name": "daemon"})
        print(outcome.messages[0], flush=True)
        await anyio.sleep(120)  # killed meanwhile, never closing the registry

    anyio.run(main)
    """
)


def settled(mark: str, expected: set[int]) -> set[int]:
    """The processes carrying ``mark`` once they are ``expected`` (waiting up to 10 s)."""
    deadline = time.monotonic() + 10
    while set(marked(mark)) != expected and time.monotonic() < deadline:
        time.sleep(0.02)
    return set(marked(mark))


def test_when_the_agent_is_killed_the_hook_and_its_daemon_end_too(tmp_path: Path) -> None:
    leaks = LeakCheck()
    hook(tmp_path)
    (tmp_path / "agent.py").write_text(AGENT)
    agent = subprocess.Popen(
        [sys.executable, str(tmp_path / "agent.py"), str(tmp_path / "hook.py"), str(tmp_path)],
        stdout=subprocess.PIPE,
        env={**os.environ, MARK_VAR: leaks.mark},
        text=True,
    )
    try:
        assert agent.stdout is not None
        hook_pid, daemon = map(int, agent.stdout.readline().split())
        assert os.getsid(daemon) == daemon  # a session of its own: no group kill reaches it
        # The agent carries the mark too; what remains once it is gone is the hook's.
        assert hook_pid in settled(leaks.mark, {agent.pid, hook_pid, daemon})
        agent.send_signal(signal.SIGKILL)  # no atexit, no aclose: only the reaper is left
        agent.wait()
    finally:
        agent.kill()
        agent.wait()
        assert agent.stdout is not None
        agent.stdout.close()
    assert settled(leaks.mark, set()) == set()


async def test_what_the_hook_started_is_reaped_while_it_runs(
    tmp_path: Path, anyio_backend: str
) -> None:
    # Daemons re-parented to the reaper that exit by themselves leave no zombie behind.
    script = tmp_path / "spawner.py"
    script.write_text(
        "import json, subprocess, sys\n"
        "for line in sys.stdin:\n"
        "    subprocess.Popen(['setsid', 'true'])\n"
        "    print(json.dumps({'id': json.loads(line)['id'], 'message': 'ok'}), flush=True)\n"
    )
    spawner = CommandHook(event="PreToolUse", args=(sys.executable, str(script)), persistent=True)
    async with HookRegistry([spawner], project_dir=tmp_path) as registry:
        for _ in range(5):
            await registry.fire("PreToolUse", {})
        await anyio.sleep(1.5)  # the reaper reaps at least once a second
        zombies, reapers = _zombie_children_of_reapers()
    assert reapers  # the reaper was found, and it has no zombie
    assert zombies == []


def _zombie_children_of_reapers() -> tuple[list[int], set[int]]:
    """Zombies whose parent is a reaper (its file on its command line), and reapers."""
    reapers = set()
    states: dict[int, tuple[str, int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            stat = (entry / "stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        if os.fsencode(reaper.__file__) in cmdline and int(stat[1]) == os.getpid():  # this test's
            reapers.add(int(entry.name))
        states[int(entry.name)] = (stat[0], int(stat[1]))
    zombies = [pid for pid, (state, ppid) in states.items() if state == "Z" and ppid in reapers]
    return zombies, reapers


def test_the_reaper_exits_as_the_hook_did(tmp_path: Path) -> None:
    # Its exit status is the hook's: a code, or the signal that killed it.
    from orchestra.skills._processes.reaper import reaper_argv

    for command, expected in (("exit 3", 3), ("kill -TERM $$", -signal.SIGTERM)):
        env_read, env_write = os.pipe()
        os.write(env_write, b"PATH=" + os.environ["PATH"].encode())
        os.close(env_write)
        lifeline, held = os.pipe()
        argv = reaper_argv(lifeline, env_read, ["/bin/sh", "-c", command])
        proc = subprocess.run(argv, pass_fds=(env_read, lifeline), timeout=30, check=False)
        os.close(env_read)
        os.close(lifeline)
        os.close(held)
        assert proc.returncode == expected, json.dumps(argv)
