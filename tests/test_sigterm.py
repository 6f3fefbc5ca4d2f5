"""SIGTERM is handled as SIGINT is, by ``run_sync`` in the main thread and ``orchestra run``.

A real child process runs a DAG of six tasks, each held in its ``TaskCreated`` command
hook (a process in its own session), with a journal; the test sends it SIGTERM once all
six hook processes run. Before the fix the child died at once: ``after_run`` never ran
and the six hook process groups were left behind. Now: exit status 143, ``after_run``
saw every task CANCELLED, no hook process is left, the journal holds the cancelled run
and no lease on it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.procs import MARK_VAR, marked

import orchestra
from orchestra.journal import SQLiteJournal

_FLOW = """
import json
from pathlib import Path

import orchestra
from orchestra.skills import load

HERE = Path(__file__).parent
registry = load(HERE / "orchestra.yaml", require_trust=False)


class Ended(orchestra.TaskHooks):
    def after_run(self, ctx, result):
        states = {k: v.value for k, v in result.states.items()}
        (HERE / "after_run.json").write_text(json.dumps(states))


dag = orchestra.DAG("term")
for i in range(6):
    dag.add(orchestra.Task(id=f"t{i}", fn=lambda: 1))
hooks = [Ended()]

if __name__ == "__main__":
    import sys

    orchestra.run_sync(
        dag,
        hooks=[registry.as_task_hooks(), *hooks],
        journal=HERE / "runs.db",
        backend=sys.argv[1],
    )
"""

_YAML = f"""
hooks:
  TaskCreated:
    - hooks:
        - type: command
          command: "echo started >> hooks.log; exec sleep 300"
          timeout: 300
          pass_env: [{MARK_VAR}]
"""


def _project(tmp_path: Path) -> Path:
    (tmp_path / "flow.py").write_text(_FLOW)
    (tmp_path / "orchestra.yaml").write_text(_YAML)
    return tmp_path


def _terminate_when_hooks_run(proc: subprocess.Popen[str], log: Path, mark: str) -> None:
    deadline = time.monotonic() + 60
    while not (log.exists() and len(log.read_text().split()) == 6 and len(marked(mark)) >= 6):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            _, err = proc.communicate()
            pytest.fail(f"the six hooks did not start (exit {proc.returncode}):\n{err}")
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)


def _no_process_left(mark: str) -> list[int]:
    deadline = time.monotonic() + 5
    while marked(mark) and time.monotonic() < deadline:
        time.sleep(0.05)
    return marked(mark)


@pytest.fixture
def mark() -> Iterator[str]:
    """The mark of the test's hook processes; any left at the end are killed."""
    mark = uuid.uuid4().hex
    yield mark
    for pid in marked(mark):  # not to leave them to the next tests, whatever failed
        os.kill(pid, signal.SIGKILL)


def _check_journal(path: Path) -> None:
    with SQLiteJournal(path) as journal:
        (run,) = journal.list_runs("term")
        assert run.states == {"cancelled": 6}
    dag = orchestra.DAG("term")
    for i in range(6):
        dag.add(orchestra.Task(id=f"t{i}", fn=lambda: 1))
    resumed = orchestra.run_sync(dag, journal=path, resume="last")  # no lease is left on it
    assert resumed.resumed_from == run.run_id
    assert resumed.ok


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_sigterm_cancels_run_sync_cleanly(tmp_path: Path, backend: str, mark: str) -> None:
    here = _project(tmp_path)
    env = {**os.environ, MARK_VAR: mark}
    proc = subprocess.Popen(
        [sys.executable, str(here / "flow.py"), backend],
        cwd=here,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _terminate_when_hooks_run(proc, here / "hooks.log", mark)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    assert "Traceback" not in err
    assert json.loads((here / "after_run.json").read_text()) == {
        f"t{i}": "cancelled" for i in range(6)
    }
    assert _no_process_left(mark) == []
    _check_journal(here / "runs.db")


def test_sigterm_cancels_orchestra_run_cleanly(tmp_path: Path, mark: str) -> None:
    here = _project(tmp_path)
    env = {**os.environ, MARK_VAR: mark}
    command = [sys.executable, "-m", "orchestra.cli", "run", "flow.py"]
    proc = subprocess.Popen(
        [*command, "--hooks", "orchestra.yaml", "--trust-all", "--journal", "runs.db"],
        cwd=here,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _terminate_when_hooks_run(proc, here / "hooks.log", mark)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    assert "terminated by SIGTERM, the run was cancelled" in err
    assert "Traceback" not in err
    assert json.loads((here / "after_run.json").read_text()) == {
        f"t{i}": "cancelled" for i in range(6)
    }
    assert _no_process_left(mark) == []
    _check_journal(here / "runs.db")


def test_a_programs_own_sigterm_handler_is_left_alone(tmp_path: Path) -> None:
    code = (
        "import signal, orchestra\n"
        "signal.signal(signal.SIGTERM, lambda *a: print('mine', flush=True))\n"
        "dag = orchestra.DAG('d')\n"
        "dag.add(orchestra.Task(id='t', fn=lambda: signal.raise_signal(signal.SIGTERM)))\n"
        "print(orchestra.run_sync(dag).ok)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["mine", "True"]


_INTERRUPTED = """
import sys, time
import orchestra

dag = orchestra.DAG("interrupted")


@dag.task
async def waits():
    import anyio

    await anyio.sleep(60)


@dag.task
def blocks():
    time.sleep(5)  # a thread cannot be interrupted: the run waits it out (60 s took 60 s)


print("started", flush=True)
orchestra.run_sync(dag, backend=sys.argv[1])
"""


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_sigint_ends_with_a_plain_keyboard_interrupt_on_both_backends(
    tmp_path: Path, backend: str
) -> None:
    # The audit's case: on trio, Ctrl-C printed a BaseExceptionGroup traceback.
    script = tmp_path / "interrupted.py"
    script.write_text(_INTERRUPTED)
    proc = subprocess.Popen(
        [sys.executable, str(script), backend],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # a SIGINT ignored by whatever started the tests (a background job) is not inherited
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert proc.stdout is not None
    assert proc.stdout.readline() == "started\n"
    time.sleep(1.0)  # the run is in its tasks
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert err.rstrip().endswith("\nKeyboardInterrupt"), err
    assert "ExceptionGroup" not in err


_SIGNALLED_IN_THE_BODY = """
import signal, sys, threading, time
from pathlib import Path

import anyio
import orchestra

if sys.argv[2] == "own":
    signal.signal(signal.SIGTERM, lambda *a: None)
dag = orchestra.DAG("signalled")
here = Path(sys.argv[3])
returns_on = here / sys.argv[4]  # the file whose making lets the body return


@dag.task
async def waits():
    (here / "waiting").touch()
    try:
        await anyio.sleep(120)
    finally:  # while the body runs?
        (here / "cancelled").write_text(str(not (here / "returned").exists()))


@dag.task
def crunch():
    deadline = time.monotonic() + 60
    while not (here / "waiting").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    # the kernel may deliver a process's Ctrl-C to any thread: here, to this one
    signal.pthread_kill(threading.get_ident(), signal.SIGINT)
    while not returns_on.exists() and time.monotonic() < deadline:
        time.sleep(0.05)  # a thread cannot be interrupted
    (here / "returned").touch()


orchestra.run_sync(dag, backend=sys.argv[1])
"""


@pytest.mark.parametrize("sigterm", ["default", "own"])
@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_ctrl_c_delivered_to_a_body_s_thread_cancels_the_run_at_once(
    tmp_path: Path, backend: str, sigterm: str
) -> None:
    # Python runs a handler in the main thread only: on asyncio, with the program's own
    # SIGTERM handler (no signal receiver of orchestra's), nothing woke the loop's poll and
    # the run was cancelled only once the body returned; on trio the Ctrl-C came out as
    # an exception group.
    script = tmp_path / "signalled.py"
    script.write_text(_SIGNALLED_IN_THE_BODY)
    # asyncio waits for the body: it returns once the run is cancelled; trio does not, so
    # its body waits for a file never made (a minute: trio waiting would be seen)
    returns_on = "cancelled" if backend == "asyncio" else "never"
    done = subprocess.run(
        [sys.executable, str(script), backend, sigterm, str(tmp_path), returns_on],
        capture_output=True,
        text=True,
        timeout=120,  # the body gives up after 60 s
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        check=False,
    )
    assert (tmp_path / "cancelled").read_text() == "True", done.stderr  # while it ran
    # as docs/concepts/scheduler.md says: asyncio waits for the body, trio does not
    assert (tmp_path / "returned").exists() is (backend == "asyncio")
    assert done.stderr.rstrip().endswith("\nKeyboardInterrupt"), done.stderr
    assert "ExceptionGroup" not in done.stderr
