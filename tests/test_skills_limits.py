"""At most ``max_parallel_hooks`` hook processes at once; failed spawns leave nothing behind."""

from __future__ import annotations

import errno
import json
import subprocess
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest
from helpers.procs import MARK_VAR, LeakCheck

from orchestra.skills import HookOutcome, HookRegistry, load
from orchestra.skills._processes import spawn as process_module

pytestmark = pytest.mark.anyio


def registry(tmp_path: Path, command: str, **kw: Any) -> HookRegistry:
    tmp_path.mkdir(exist_ok=True)
    config = tmp_path / "orchestra.yaml"
    config.write_text(
        "hooks:\n  PostToolUse:\n    - hooks:\n"
        f"        - {{type: command, command: {json.dumps(command)}, pass_env: [{MARK_VAR}]}}\n"
    )
    return load(config, project_dir=tmp_path, **kw)


@pytest.fixture
async def leaks(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> LeakCheck:
    check = LeakCheck()
    monkeypatch.setenv(MARK_VAR, check.mark)  # every hook process carries the mark
    # The first subprocess of a backend may set up machinery that stays; not a leak.
    await registry(tmp_path / "warm", "true").fire("PostToolUse", {})
    check.snapshot()
    return check


async def fire_many(reg: HookRegistry, count: int) -> list[HookOutcome]:
    outcomes: list[HookOutcome] = []

    async def fire() -> None:
        outcomes.append(await reg.fire("PostToolUse", {"tool_name": "Bash"}))

    async with anyio.create_task_group() as group:
        for _ in range(count):
            group.start_soon(fire)
    return outcomes


def most_at_once(log: Path) -> int:
    """The most hooks between their '+' and '-' lines at any point of the log."""
    running = most = 0
    for line in log.read_text().split():
        running += 1 if line == "+" else -1
        most = max(most, running)
    return most


@pytest.mark.timeout(120)
async def test_1000_concurrent_fires_run_at_most_32_hook_processes(
    tmp_path: Path, leaks: LeakCheck
) -> None:
    log = tmp_path / "log"
    reg = registry(tmp_path, f"echo + >> {log}; sleep 0.05; echo - >> {log}")
    assert reg.max_parallel_hooks == 32
    outcomes = await fire_many(reg, 1000)
    assert [o.errors for o in outcomes] == [()] * 1000
    assert len(log.read_text().split()) == 2000
    assert 1 < most_at_once(log) <= 32
    await leaks.check()


async def test_max_parallel_hooks_is_the_registry_s_own(tmp_path: Path) -> None:
    log = tmp_path / "log"
    reg = registry(tmp_path, f"echo + >> {log}; sleep 0.05; echo - >> {log}", max_parallel_hooks=3)
    await fire_many(reg, 12)
    assert most_at_once(log) == 3  # 12 hooks of 50 ms: three at a time, always three
    with pytest.raises(ValueError, match="max_parallel_hooks must be at least 1"):
        HookRegistry(max_parallel_hooks=0)


def test_each_thread_s_event_loops_have_their_own_slots(tmp_path: Path) -> None:
    # A guarded sync tool fires in an event loop of its own per call, in whatever thread
    # calls it: loops one after the other in a thread share its slots, loops of other
    # threads have their own (an anyio primitive serves only the loop that waits on it).
    log = tmp_path / "log"
    reg = registry(tmp_path, f"echo + >> {log}; sleep 0.05; echo - >> {log}", max_parallel_hooks=2)
    outcomes: list[HookOutcome] = []

    def in_turn(backend: str) -> None:
        for _ in range(2):
            outcomes.extend(anyio.run(fire_many, reg, 4, backend=backend))

    threads = [threading.Thread(target=in_turn, args=(b,)) for b in ("asyncio", "trio")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert [o.errors for o in outcomes] == [()] * 16
    assert len(log.read_text().split()) == 32
    assert 2 <= most_at_once(log) <= 4  # two per thread at most


async def test_no_thread_is_needed_to_run_hooks(
    tmp_path: Path, leaks: LeakCheck, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Under memory pressure, "can't start new thread": asyncio's child watcher on 3.11
    # then left each hook process running, unwatched, its pipes open.
    def refuse(self: threading.Thread) -> None:
        raise RuntimeError("can't start new thread")

    reg = registry(tmp_path, 'cat > /dev/null; echo \'{"message": "ran"}\'')
    monkeypatch.setattr(threading.Thread, "start", refuse)
    outcomes = await fire_many(reg, 50)
    monkeypatch.undo()
    assert [(o.messages, o.errors) for o in outcomes] == [(("ran",), ())] * 50
    await leaks.check()


async def test_failed_spawns_are_hook_errors_and_leak_nothing(
    tmp_path: Path, leaks: LeakCheck, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_popen = subprocess.Popen
    calls = 0

    def flaky_popen(*args: Any, **kwargs: Any) -> subprocess.Popen[bytes]:
        nonlocal calls
        calls += 1
        if calls % 2:
            raise OSError(errno.EAGAIN, "Resource temporarily unavailable")
        return real_popen(*args, **kwargs)

    reg = registry(tmp_path, "sleep 0.01")
    monkeypatch.setattr(process_module.subprocess, "Popen", flaky_popen)
    outcomes = await fire_many(reg, 40)
    monkeypatch.undo()
    errors = sorted(str(record.error) for o in outcomes for record in o.errors)
    assert errors == ["could not start: [Errno 11] Resource temporarily unavailable"] * 20
    await leaks.check()


async def test_a_failure_after_the_fork_kills_and_reaps_the_child(
    tmp_path: Path, leaks: LeakCheck, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_fd_left(pid: int) -> int:
        raise OSError(errno.EMFILE, "Too many open files")

    reg = registry(tmp_path, "sleep 30")
    monkeypatch.setattr(process_module.os, "pidfd_open", no_fd_left)
    outcomes = await fire_many(reg, 10)
    monkeypatch.undo()
    errors = [str(record.error) for o in outcomes for record in o.errors]
    assert errors == ["could not start: [Errno 24] Too many open files"] * 10
    await leaks.check()  # the ten `sleep 30` were killed and reaped, their pipes closed
